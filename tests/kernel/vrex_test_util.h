/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the in-guest vrex test programs (the tests/kernel/ programs, built
 * by scripts/qemu-test.sh with vrex_test_util.c linked into each): finding the
 * vrex node, thin ioctl wrappers that return 0 or -errno, the debugfs
 * directory of the device and its live-object counts, and case reporting
 * ("ok  " / "FAIL" lines, then "SUITE: N passed, M failed").
 */
#ifndef VREX_TEST_UTIL_H
#define VREX_TEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <drm.h>
#include <drm/vrex_accel.h>

/* The luma plane every test submits: VT_FRAME_W x VT_FRAME_H, stride VT_FRAME_W. */
#define VT_FRAME_W 128
#define VT_FRAME_H 96
/* Length of one KV block the tests insert. */
#define VT_KV_LEN 16384u

/* The retired REG_READ id (DRM_VREX_RESERVED_10) as the old binaries issue it: 8-byte struct. */
#define VT_IOCTL_RESERVED_10 DRM_IOWR(DRM_COMMAND_BASE + DRM_VREX_RESERVED_10, __u64)

/* ---- case reporting ---------------------------------------------------------------------- */

extern int vt_passed, vt_failed;

/* One case line, "ok   [TAG ]message" or "FAIL [TAG ]message"; @tag may be NULL. */
void vt_vreport(int ok, const char *tag, const char *fmt, va_list ap);
void vt_report(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "@suite: N passed, M failed" and returns the exit status (1 if any failed). */
int vt_finish(const char *suite);

/* ---- the node and ioctls ----------------------------------------------------------------- */

/* ioctl() retried on EINTR/EAGAIN; 0 or -errno. */
int vt_ioctl(int fd, unsigned long req, void *arg);
/*
 * Opens the first node whose DRM_IOCTL_VERSION name is vrex, /dev/accel/accel*
 * before /dev/dri/renderD*; its path goes to @path (if not NULL). -1 if none.
 */
int vt_open_node(char *path, size_t len);

int vt_bo_create(int fd, uint64_t size, uint64_t bank_mask, uint32_t flags, uint32_t *handle,
		 uint32_t *bank);
int vt_gem_close(int fd, uint32_t handle);
/* Maps @size bytes of BO @handle read-write and shared; NULL on failure. */
void *vt_bo_map(int fd, uint32_t handle, size_t size);
int vt_stream_create(int fd, uint32_t flags, uint32_t pool, uint32_t *id);
int vt_stream_destroy(int fd, uint32_t id);
/* Submits a VT_FRAME_W x VT_FRAME_H frame; the struct as returned goes to @out (if not NULL). */
int vt_frame_submit(int fd, uint32_t stream, uint32_t handle, uint32_t flags, uint64_t user_data,
		    struct drm_vrex_frame_submit *out);
int vt_shie_batch(int fd, unsigned long req, uint32_t stream, void *items, uint32_t count,
		  uint32_t elem_size);
/* SHIE_RETIRE; @cap is the room in @released going in, the records written coming out. */
int vt_shie_retire(int fd, uint32_t stream, uint32_t *ids, uint32_t count,
		   struct drm_vrex_released_block *released, uint32_t *cap);
/* Counter @idx of struct drm_vrex_stats (as __u64 array); UINT64_MAX if STATS fails. */
uint64_t vt_stat(int fd, unsigned int idx);

/* A VT_KV_LEN block of BO @handle at @offset, keyed by @fp. */
struct drm_vrex_shie_insert_item vt_kv_item(const __u64 fp[2], uint32_t handle, uint64_t offset,
					    uint32_t region, int32_t frame_offset);
struct drm_vrex_shie_lookup_item vt_temporal(uint32_t region, int32_t frame_offset);
/* A similarity lookup of @fp in @region within @radius; @flags and @max_candidates as given. */
struct drm_vrex_shie_lookup_item vt_similar(const __u64 fp[2], uint32_t region, uint32_t radius,
					    uint32_t flags, uint32_t max_candidates);
/* SHIE_LOOKUP of @n items of the current size on @stream. */
int vt_lookup(int fd, uint32_t stream, struct drm_vrex_shie_lookup_item *items, uint32_t n);

/* ---- debugfs ----------------------------------------------------------------------------- */

/*
 * Mounts debugfs if needed and finds the DRM core's debugfs directory of @fd's
 * node (dri/<minor>, accel/<minor> or, 6.8+, accel/<parent device>), where
 * vrex.ko's files are; its "dev" file must hold the node's major:minor. 0 if found.
 */
int vt_debugfs_find(int fd);
/* The directory vt_debugfs_find() found, "" before or without one. */
const char *vt_debugfs_dir(void);
/* The value of @what in the "counts" file; -1 if absent or unreadable. */
long vt_debugfs_count(const char *what);
/* Writes @val to debugfs file @file (e.g. the fault knobs); 0 or -1. */
int vt_debugfs_write(const char *file, const char *val);
int vt_debugfs_write_u32(const char *file, unsigned int val);

/* Live objects, kernel and hardware side, from the "counts" file. */
struct vt_live {
	long bos, streams, blocks, entries, hw_blocks;
};

struct vt_live vt_live_now(void);
int vt_live_eq(struct vt_live a, struct vt_live b);
void vt_live_print(const char *prefix, struct vt_live c);

/* Writes @val to a sysfs/configfs file: 0, -errno from open, or -EIO on a short write. */
int vt_write_str(const char *path, const char *val);

#endif /* VREX_TEST_UTIL_H */
