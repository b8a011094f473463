// SPDX-License-Identifier: MIT
/* Helpers shared by the in-guest vrex test programs; see vrex_test_util.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "vrex_test_util.h"

#define DEBUGFS_ROOT "/sys/kernel/debug"
#define DRM_MAJOR_NR 226

int vt_passed, vt_failed;
static char dbg_dir[512];

/* ---- case reporting ---------------------------------------------------------------------- */

void vt_vreport(int ok, const char *tag, const char *fmt, va_list ap)
{
	printf("%s ", ok ? "ok  " : "FAIL");
	if (tag)
		printf("%s ", tag);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	if (ok)
		vt_passed++;
	else
		vt_failed++;
}

void vt_report(int ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vt_vreport(ok, NULL, fmt, ap);
	va_end(ap);
}

int vt_finish(const char *suite)
{
	printf("%s: %d passed, %d failed\n", suite, vt_passed, vt_failed);
	return vt_failed ? 1 : 0;
}

/* ---- the node and ioctls ----------------------------------------------------------------- */

int vt_ioctl(int fd, unsigned long req, void *arg)
{
	int r;

	do {
		r = ioctl(fd, req, arg);
	} while (r == -1 && (errno == EINTR || errno == EAGAIN));
	return r == -1 ? -errno : 0;
}

static int is_vrex(int fd)
{
	char name[64] = { 0 };
	struct drm_version v = { .name = name, .name_len = sizeof(name) - 1 };

	return !vt_ioctl(fd, DRM_IOCTL_VERSION, &v) && !strcmp(name, DRM_VREX_DRIVER_NAME);
}

static int open_vrex_in(const char *dir, const char *prefix, char *found, size_t len)
{
	char path[300];
	struct dirent *de;
	DIR *d = opendir(dir);
	int fd;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (is_vrex(fd)) {
			closedir(d);
			if (found)
				snprintf(found, len, "%s", path);
			return fd;
		}
		close(fd);
	}
	closedir(d);
	return -1;
}

int vt_open_node(char *path, size_t len)
{
	int fd = open_vrex_in("/dev/accel", "accel", path, len);

	return fd >= 0 ? fd : open_vrex_in("/dev/dri", "renderD", path, len);
}

int vt_bo_create(int fd, uint64_t size, uint64_t bank_mask, uint32_t flags, uint32_t *handle,
		 uint32_t *bank)
{
	struct drm_vrex_bo_create c = { .size = size, .bank_mask = bank_mask, .flags = flags };
	int r = vt_ioctl(fd, DRM_IOCTL_VREX_BO_CREATE, &c);

	if (!r && handle)
		*handle = c.handle;
	if (!r && bank)
		*bank = c.bank;
	return r;
}

int vt_gem_close(int fd, uint32_t handle)
{
	struct drm_gem_close c = { .handle = handle };

	return vt_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c);
}

void *vt_bo_map(int fd, uint32_t handle, size_t size)
{
	struct drm_vrex_bo_mmap_offset m = { .handle = handle };
	void *p;

	if (vt_ioctl(fd, DRM_IOCTL_VREX_BO_MMAP_OFFSET, &m))
		return NULL;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)m.offset);
	return p == MAP_FAILED ? NULL : p;
}

int vt_stream_create(int fd, uint32_t flags, uint32_t pool, uint32_t *id)
{
	struct drm_vrex_stream_create c = { .flags = flags, .pool = pool };
	int r = vt_ioctl(fd, DRM_IOCTL_VREX_STREAM_CREATE, &c);

	if (!r)
		*id = c.stream;
	return r;
}

int vt_stream_destroy(int fd, uint32_t id)
{
	struct drm_vrex_stream_destroy d = { .stream = id };

	return vt_ioctl(fd, DRM_IOCTL_VREX_STREAM_DESTROY, &d);
}

int vt_frame_submit(int fd, uint32_t stream, uint32_t handle, uint32_t flags, uint64_t user_data,
		    struct drm_vrex_frame_submit *out)
{
	struct drm_vrex_frame_submit f = {
		.stream = stream, .handle = handle, .width = VT_FRAME_W, .height = VT_FRAME_H,
		.stride = VT_FRAME_W, .flags = flags, .user_data = user_data,
	};
	int r = vt_ioctl(fd, DRM_IOCTL_VREX_FRAME_SUBMIT, &f);

	if (out)
		*out = f;
	return r;
}

int vt_shie_batch(int fd, unsigned long req, uint32_t stream, void *items, uint32_t count,
		  uint32_t elem_size)
{
	struct drm_vrex_shie_batch b = {
		.stream = stream, .count = count, .elem_size = elem_size,
		.items = (uintptr_t)items,
	};

	return vt_ioctl(fd, req, &b);
}

int vt_shie_retire(int fd, uint32_t stream, uint32_t *ids, uint32_t count,
		   struct drm_vrex_released_block *released, uint32_t *cap)
{
	struct drm_vrex_shie_retire r = {
		.stream = stream, .remove_count = count, .released_cap = *cap,
		.elem_size = sizeof(*released), .remove = (uintptr_t)ids,
		.released = (uintptr_t)released,
	};
	int ret = vt_ioctl(fd, DRM_IOCTL_VREX_SHIE_RETIRE, &r);

	*cap = r.released_cap;
	return ret;
}

uint64_t vt_stat(int fd, unsigned int idx)
{
	struct drm_vrex_stats st;
	struct drm_vrex_stats_query q = { .size = sizeof(st), .ptr = (uintptr_t)&st };

	if (vt_ioctl(fd, DRM_IOCTL_VREX_STATS, &q))
		return UINT64_MAX;
	return ((uint64_t *)&st)[idx];
}

struct drm_vrex_shie_insert_item vt_kv_item(const __u64 fp[2], uint32_t handle, uint64_t offset,
					    uint32_t region, int32_t frame_offset)
{
	return (struct drm_vrex_shie_insert_item){
		.fp = { fp[0], fp[1] }, .handle = handle, .offset = offset, .length = VT_KV_LEN,
		.region = region, .frame_offset = frame_offset,
	};
}

struct drm_vrex_shie_lookup_item vt_temporal(uint32_t region, int32_t frame_offset)
{
	return (struct drm_vrex_shie_lookup_item){
		.kind = DRM_VREX_LOOKUP_TEMPORAL, .region = region, .frame_offset = frame_offset,
	};
}

struct drm_vrex_shie_lookup_item vt_similar(const __u64 fp[2], uint32_t region, uint32_t radius,
					    uint32_t flags, uint32_t max_candidates)
{
	return (struct drm_vrex_shie_lookup_item){
		.fp = { fp[0], fp[1] }, .kind = DRM_VREX_LOOKUP_SIMILAR, .region = region,
		.radius = radius, .flags = flags, .max_candidates = max_candidates,
	};
}

int vt_lookup(int fd, uint32_t stream, struct drm_vrex_shie_lookup_item *items, uint32_t n)
{
	return vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_LOOKUP, stream, items, n, sizeof(*items));
}

/* ---- debugfs ----------------------------------------------------------------------------- */

/* Last path component of symlink @link; "" if it is not one. */
static void vt_link_name(const char *link, char *out, size_t len)
{
	char target[512];
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	const char *slash;

	out[0] = 0;
	if (n <= 0)
		return;
	target[n] = 0;
	slash = strrchr(target, '/');
	snprintf(out, len, "%s", slash ? slash + 1 : target);
}

/* DEBUGFS_ROOT/@top/@name becomes dbg_dir if its "dev" file holds @want. */
static int vt_debugfs_try(const char *top, const char *name, const char *want)
{
	char path[600], buf[64];
	int found = 0;
	FILE *f;

	if (!name[0])
		return 0;
	snprintf(path, sizeof(path), DEBUGFS_ROOT "/%s/%s/dev", top, name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && !strcmp(buf, want)) {
		snprintf(dbg_dir, sizeof(dbg_dir), DEBUGFS_ROOT "/%s/%s", top, name);
		found = 1;
	}
	fclose(f);
	return found;
}

/*
 * The DRM core's directory of @fd's minor, where vrex.ko's files are, derived from the node
 * as the HAL's discovery::debugfs_dir() does: the sysfs class (accel or drm; the DRM major
 * without sysfs) picks accel/ or dri/, then the minor index (up to 6.7, and the DRM symlink
 * since 6.8) or the parent device's name (accel since 6.8); "dev" must name the node.
 */
int vt_debugfs_find(int fd)
{
	char sys[128], link[160], want[64], name[256];
	const char *top;
	struct stat st;

	dbg_dir[0] = 0;
	/* The guests' init mounts debugfs; EBUSY when it is already there is fine. */
	mkdir(DEBUGFS_ROOT, 0755);
	mount("debugfs", DEBUGFS_ROOT, "debugfs", 0, NULL);
	if (fstat(fd, &st))
		return -1;
	snprintf(want, sizeof(want), "%u:%u\n", major(st.st_rdev), minor(st.st_rdev));
	snprintf(sys, sizeof(sys), "/sys/dev/char/%u:%u", major(st.st_rdev), minor(st.st_rdev));
	snprintf(link, sizeof(link), "%s/subsystem", sys);
	vt_link_name(link, name, sizeof(name));
	if (name[0])
		top = strcmp(name, "accel") ? "dri" : "accel";
	else
		top = major(st.st_rdev) == DRM_MAJOR_NR ? "dri" : "accel";
	snprintf(name, sizeof(name), "%u", minor(st.st_rdev));
	if (vt_debugfs_try(top, name, want))
		return 0;
	snprintf(link, sizeof(link), "%s/device", sys);
	vt_link_name(link, name, sizeof(name));
	return vt_debugfs_try(top, name, want) ? 0 : -1;
}

const char *vt_debugfs_dir(void)
{
	return dbg_dir;
}

long vt_debugfs_count(const char *what)
{
	char path[600], key[32];
	long val, found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/counts", dbg_dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%31s %ld", key, &val) == 2)
		if (!strcmp(key, what))
			found = val;
	fclose(f);
	return found;
}

int vt_debugfs_write(const char *file, const char *val)
{
	char path[600];
	ssize_t len = (ssize_t)strlen(val);
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%s", dbg_dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = write(fd, val, len) == len;
	close(fd);
	return ok ? 0 : -1;
}

int vt_debugfs_write_u32(const char *file, unsigned int val)
{
	char s[16];

	snprintf(s, sizeof(s), "%u", val);
	return vt_debugfs_write(file, s);
}

struct vt_live vt_live_now(void)
{
	return (struct vt_live){
		vt_debugfs_count("bos"), vt_debugfs_count("streams"), vt_debugfs_count("blocks"),
		vt_debugfs_count("entries"), vt_debugfs_count("hw_blocks"),
	};
}

int vt_live_eq(struct vt_live a, struct vt_live b)
{
	return a.bos == b.bos && a.streams == b.streams && a.blocks == b.blocks &&
	       a.entries == b.entries && a.hw_blocks == b.hw_blocks;
}

void vt_live_print(const char *label, struct vt_live c)
{
	printf("%s: bos %ld streams %ld blocks %ld entries %ld hw_blocks %ld\n", label, c.bos,
	       c.streams, c.blocks, c.entries, c.hw_blocks);
}

int vt_write_str(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ok;

	if (fd < 0)
		return -errno;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok ? 0 : -EIO;
}
