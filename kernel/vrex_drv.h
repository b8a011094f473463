/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-file state and the ioctl entry points. Everything an id handed to user
 * space names (stream, pool, block) is looked up through the calling file, so
 * one file never sees another's objects.
 */
#ifndef VREX_DRV_H
#define VREX_DRV_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>
#include <drm/drm_file.h>

#include "vrex_uapi_check.h"

struct drm_device;
struct drm_file;
struct drm_gem_object;
struct drm_vrex_query;
struct vrex_device;

/* Per-file limits (module parameters, 0: none); read at each allocation. */
extern unsigned int vrex_file_max_streams;
extern unsigned long long vrex_file_max_bytes;

/*
 * Bytes of BOs charged to one file. A BO can outlive the file that created
 * it (dma-buf, a flink name), so the counter is shared and refcounted: the
 * file and each of its BOs hold a reference.
 */
struct vrex_quota {
	struct kref ref;
	atomic64_t bytes;
};

/* What a uid is charged with (vrex_quota.c). */
enum vrex_res {
	VREX_RES_BYTES,		/* bytes of BOs */
	VREX_RES_STREAMS,	/* stream slots */
	VREX_RES_HEADS,		/* ReSV heads */
	VREX_RES_ENTRIES,	/* SHIE entries of live blocks */
	VREX_RES_IMPORTS,	/* PRIME-imported BOs */
	VREX_RES_NUM
};

/* One uid on one device (vdev->users), referenced by its files and objects. */
struct vrex_user {
	struct kref ref;
	struct vrex_device *vdev;
	kuid_t uid;
	atomic64_t used[VREX_RES_NUM];
};

struct vrex_file {
	struct vrex_device *vdev;
	struct vrex_user *user;	/* the opener's euid */
	bool limited;		/* opened without CAP_SYS_ADMIN: user quotas apply */
	struct xarray streams;	/* user stream id -> struct vrex_file_stream */
	struct xarray pools;	/* user pool id -> struct vrex_file_pool */
	struct xarray heads;	/* user head id -> struct vrex_file_head (vrex_resv.c) */
	u32 nstreams;		/* under vdev->lock */
	struct vrex_quota *quota;
};

struct vrex_file_pool {
	u32 hw_pool;
	u32 refs;
};

struct vrex_file_stream {
	struct vrex_file *vfile;
	u64 serial;		/* device-unique: an id reused after destroy is another stream */
	u32 id;			/* as user space knows it */
	u32 hw;			/* hardware stream slot */
	u32 user_pool;
	struct vrex_file_pool *pool;	/* NULL: private pool */
	u32 nblocks;		/* live blocks created by this stream */
	/*
	 * Blocks the hardware released while another stream's command drained
	 * the release FIFO, or a reset took them: reported by this stream's next
	 * RETIRE (struct vrex_block_ref on @pending, oldest first).
	 */
	struct list_head released;
	u32 nreleased;
};

/*
 * What the kernel knows about one hardware KV block: whose it is and where it
 * points. It holds a reference on the BO so the memory a SHIE entry points
 * into cannot be freed while the entry can still be returned by a lookup.
 */
struct vrex_block_ref {
	struct vrex_file_stream *stream;
	struct drm_gem_object *obj;	/* NULL once released */
	u64 bo_gen;	/* of @obj: names it in records after @obj is gone */
	u64 block_gen;	/* the device's generation of the block: this incarnation of its id */
	u32 handle;
	u64 offset;
	u64 length;
	/* Once released and not yet reported: on stream->released. */
	struct list_head pending;
	u32 block;
	u32 reason;	/* DRM_VREX_RELEASE_* */
	u32 entries;	/* SHIE entries inserted for it (1 + aliases), charged to its file's user */
};

static inline struct vrex_file *to_vrex_file(struct drm_file *file)
{
	return file->driver_priv;
}

/* vrex_gem.c */
struct vrex_quota *vrex_quota_alloc(void);
void vrex_quota_put(struct vrex_quota *quota);
int vrex_ioctl_bo_create(struct drm_device *drm, void *data, struct drm_file *file);
int vrex_ioctl_bo_mmap_offset(struct drm_device *drm, void *data, struct drm_file *file);
u64 vrex_bo_dev_addr(struct drm_gem_object *obj);
u64 vrex_bo_gen(struct drm_gem_object *obj);
bool vrex_bo_is_imported(const struct drm_gem_object *obj);
u64 vrex_bo_kv_addr(struct drm_gem_object *obj, u64 offset);
int vrex_bo_check_device_range(struct drm_gem_object *obj, u64 offset, u64 length);
struct dma_buf;
struct drm_gem_object *vrex_gem_prime_import(struct drm_device *drm, struct dma_buf *dma_buf);
void vrex_gem_unmap_user(struct vrex_device *vdev);
struct seq_file;
void vrex_gem_debugfs_bos(struct seq_file *m, struct vrex_device *vdev);

/* vrex_stream.c */
int vrex_ioctl_stream_create(struct drm_device *drm, void *data, struct drm_file *file);
int vrex_ioctl_stream_destroy(struct drm_device *drm, void *data, struct drm_file *file);
int vrex_ioctl_frame_submit(struct drm_device *drm, void *data, struct drm_file *file);
struct vrex_file_stream *vrex_stream_find(struct vrex_file *vfile, u32 id);
void vrex_stream_release_all(struct vrex_file *vfile);

/* vrex_shie.c */
int vrex_ioctl_shie_insert(struct drm_device *drm, void *data, struct drm_file *file);
int vrex_ioctl_shie_lookup(struct drm_device *drm, void *data, struct drm_file *file);
int vrex_ioctl_shie_retire(struct drm_device *drm, void *data, struct drm_file *file);
void vrex_blocks_drain(struct vrex_device *vdev);
void vrex_blocks_reset(struct vrex_device *vdev);
void vrex_blocks_forget_stream(struct vrex_device *vdev, struct vrex_file_stream *stream);

/* vrex_shie.c: size-negotiated element arrays, shared by every batched ioctl */
void *vrex_elems_copy_in(u64 uptr, u32 count, u32 elem_size, size_t ksize);
int vrex_batch_copy_out(u64 uptr, u32 elem_size, const void *buf, u32 count, size_t ksize);

/* vrex_resv.c */
int vrex_resv_init(struct vrex_device *vdev);

/* vrex_dma.c */
int vrex_dma_init(struct vrex_device *vdev);
void *vrex_dma_stage_ptr(struct vrex_device *vdev, u64 addr, size_t len);
void vrex_resv_file_init(struct vrex_file *vfile);
void vrex_resv_release_all(struct vrex_file *vfile);
int vrex_resv_query_stats(struct vrex_device *vdev, struct drm_vrex_query *args);
int vrex_ioctl_resv_head_create(struct drm_device *drm, void *data, struct drm_file *file);
int vrex_ioctl_resv_head_destroy(struct drm_device *drm, void *data, struct drm_file *file);
int vrex_ioctl_resv_hash(struct drm_device *drm, void *data, struct drm_file *file);
int vrex_ioctl_resv_select(struct drm_device *drm, void *data, struct drm_file *file);
int vrex_ioctl_resv_truncate(struct drm_device *drm, void *data, struct drm_file *file);

/* vrex_quota.c */
struct seq_file;
int vrex_users_init(struct vrex_device *vdev);
struct vrex_user *vrex_user_get(struct vrex_device *vdev, kuid_t uid);
struct vrex_user *vrex_user_get_current(struct vrex_device *vdev);
void vrex_user_put(struct vrex_user *u);
bool vrex_user_limited(void);
int vrex_user_charge(struct vrex_user *u, enum vrex_res res, u64 n, bool limited);
void vrex_user_uncharge(struct vrex_user *u, enum vrex_res res, u64 n);
void vrex_users_debugfs(struct seq_file *m, struct vrex_device *vdev);

/* vrex_query.c */
int vrex_ioctl_query(struct drm_device *drm, void *data, struct drm_file *file);
int vrex_ioctl_stats(struct drm_device *drm, void *data, struct drm_file *file);
void vrex_check_limits_init(const struct vrex_device *vdev, struct vrex_check_limits *lim);
/* sysfs counters of every binding's device (driver.dev_groups) */
extern const struct attribute_group *vrex_dev_groups[];

/* vrex_debugfs.c */
#if IS_ENABLED(CONFIG_DRM_ACCEL_VREX_DEBUGFS)
void vrex_debugfs_init(struct vrex_device *vdev);
/* vrex_testhooks.c */
void vrex_testhooks_debugfs_init(struct vrex_device *vdev, struct dentry *dir);
#else
static inline void vrex_debugfs_init(struct vrex_device *vdev) { }
#endif

/* vrex_platform.c: DT nodes and backend-provided devices; vrex_of.c: DT resources */
struct platform_device;
int vrex_platform_driver_register(void);
void vrex_platform_driver_unregister(void);

#if IS_ENABLED(CONFIG_DRM_ACCEL_VREX_OF)
#include <linux/mod_devicetable.h>
extern const struct of_device_id vrex_of_match[];
#define VREX_OF_MATCH vrex_of_match
int vrex_of_init(struct vrex_device *vdev, struct platform_device *pdev);
#else
#define VREX_OF_MATCH NULL
static inline int vrex_of_init(struct vrex_device *vdev, struct platform_device *pdev)
{
	return -ENODEV;
}
#endif

#if IS_ENABLED(CONFIG_DRM_ACCEL_VREX_PCI)
int vrex_pci_driver_register(void);
void vrex_pci_driver_unregister(void);
#else
static inline int vrex_pci_driver_register(void) { return 0; }
static inline void vrex_pci_driver_unregister(void) { }
#endif

#endif /* VREX_DRV_H */
