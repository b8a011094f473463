// SPDX-License-Identifier: GPL-2.0-only
/*
 * Read-only views of the device: size-negotiated QUERY and STATS, and the
 * stable counters in sysfs.
 */
#include <linux/device.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/vrex_accel.h>

#include "vrex_device.h"
#include "vrex_drv.h"
#include "vrex_model.h"

/*
 * The common size negotiation: with ptr == 0 only the size is reported;
 * otherwise min(size, ours) bytes are copied and size becomes ours.
 */
static int vrex_copy_sized(u64 ptr, u32 *size, const void *buf, u32 ksize)
{
	u32 n = min(*size, ksize);

	*size = ksize;
	if (ptr && n && copy_to_user(u64_to_user_ptr(ptr), buf, n))
		return -EFAULT;
	return 0;
}

void vrex_check_limits_init(const struct vrex_device *vdev, struct vrex_check_limits *lim)
{
	lim->nbanks = vdev->nbanks;
	lim->bank_size = vdev->bank_size;
	lim->fcc_min_dim = VREX_FCC_MIN_DIM;
	lim->fcc_max_dim = VREX_FCC_MAX_DIM;
	lim->pooled = !!(vdev->caps & VREX_CAP_POOLED);
}

static void vrex_fill_device_info(struct vrex_device *vdev, struct drm_vrex_device_info *info)
{
	info->hw_id = vdev->hw_id;
	info->hw_version = vdev->hw_version;
	info->caps = vdev->caps & (DRM_VREX_CAP_FCC | DRM_VREX_CAP_SHIE | DRM_VREX_CAP_POOLED |
				   DRM_VREX_CAP_PREDICT_SLOTS | DRM_VREX_CAP_RESV);
	info->bank_count = vdev->nbanks;
	info->bank_size = vdev->bank_size;
	info->group_banks = vdev->group_banks;
	info->max_streams = vdev->max_streams;
	info->shie_capacity = vdev->shie_capacity;
	info->block_capacity = vdev->block_capacity;
	info->zombie_frames = vdev->zombie_frames;
	info->max_batch = DRM_VREX_MAX_BATCH;
	info->fcc_min_dim = VREX_FCC_MIN_DIM;
	info->fcc_max_dim = VREX_FCC_MAX_DIM;
	info->simulated = !!vdev->backend;
}

static int vrex_fill_bank_info(struct vrex_device *vdev, struct drm_vrex_bank_info *bi)
{
	u32 b, ngroups = vdev->group_banks ? vdev->nbanks / vdev->group_banks : 0;
	int ret;

	bi->bank_count = vdev->nbanks;
	mutex_lock(&vdev->mm_lock);
	for (b = 0; b < vdev->nbanks; b++)
		bi->bo_bytes[b] = vdev->bo_bytes[b];
	mutex_unlock(&vdev->mm_lock);

	ret = vrex_lock_interruptible(vdev);
	if (ret)
		return ret;
	for (b = 0; b < vdev->nbanks; b++) {
		bi->kv_bytes[b] = (u64)vrex_read(vdev, VREX_REG_BANK_KB(b)) * SZ_1K;
		bi->kv_blocks[b] = vrex_read(vdev, VREX_REG_BANK_BLOCKS(b));
	}
	for (b = 0; b < ngroups && b < DRM_VREX_MAX_BANKS; b++)
		bi->group_owned[b] = vrex_read(vdev, VREX_REG_GROUP_POOL(b)) != VREX_NIL;
	bi->imported_kv_blocks = vdev->imported_kv_blocks;
	bi->imported_kv_bytes = vdev->imported_kv_bytes;
	mutex_unlock(&vdev->lock);
	bi->imported_bos = atomic_read(&vdev->imported_bos);
	bi->imported_bytes = atomic64_read(&vdev->imported_bytes);
	return 0;
}

int vrex_ioctl_query(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	struct drm_vrex_query *args = data;
	struct drm_vrex_device_info info = { };
	struct drm_vrex_bank_info *bi;
	int ret, idx;

	switch (args->param) {
	case DRM_VREX_QUERY_DEVICE_INFO:
		vrex_fill_device_info(vdev, &info);
		return vrex_copy_sized(args->ptr, &args->size, &info, sizeof(info));
	case DRM_VREX_QUERY_BANKS:
		if (!args->ptr)
			return vrex_copy_sized(0, &args->size, NULL, sizeof(*bi));
		bi = kzalloc(sizeof(*bi), GFP_KERNEL);
		if (!bi)
			return -ENOMEM;
		if (drm_dev_enter(drm, &idx)) {
			ret = vrex_fill_bank_info(vdev, bi);
			drm_dev_exit(idx);
			if (!ret)
				ret = vrex_copy_sized(args->ptr, &args->size, bi, sizeof(*bi));
		} else {
			ret = -ENODEV;
		}
		kfree(bi);
		return ret;
	case DRM_VREX_QUERY_RESV_STATS:
		return vrex_resv_query_stats(vdev, args);
	default:
		return -EINVAL;
	}
}

/*
 * Reads every counter (vdev->lock held) and keeps them as the snapshot the
 * sysfs counters fall back to while the device is busy.
 */
static void vrex_read_counters_locked(struct vrex_device *vdev, u64 *out)
{
	u32 i;

	lockdep_assert_held(&vdev->lock);
	for (i = 0; i < VREX_CNT_NUM; i++)
		out[i] = vrex_read_counter(vdev, i);
	spin_lock(&vdev->cnt_snap_lock);
	memcpy(vdev->cnt_snap, out, sizeof(vdev->cnt_snap));
	spin_unlock(&vdev->cnt_snap_lock);
}

static int vrex_read_stats(struct vrex_device *vdev, struct drm_vrex_stats *st)
{
	int ret;

	BUILD_BUG_ON(sizeof(*st) != VREX_CNT_NUM * sizeof(u64));
	ret = vrex_lock_interruptible(vdev);
	if (ret)
		return ret;
	vrex_read_counters_locked(vdev, (u64 *)st);
	mutex_unlock(&vdev->lock);
	return 0;
}

int vrex_ioctl_stats(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	struct drm_vrex_stats_query *args = data;
	struct drm_vrex_stats st = { };
	int idx, ret;

	if (args->pad)
		return -EINVAL;
	if (!args->ptr)
		return vrex_copy_sized(0, &args->size, NULL, sizeof(st));
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	ret = vrex_read_stats(vdev, &st);
	drm_dev_exit(idx);
	if (ret)
		return ret;
	return vrex_copy_sized(args->ptr, &args->size, &st, sizeof(st));
}

/* ---- sysfs: stable counters only --------------------------------------- */

/*
 * The counters are world-readable: a reader must never wait on the device
 * lock, which a reset can hold for several command timeouts. A free lock
 * gives fresh values; a busy one, the last snapshot (taken by the previous
 * read of sysfs or of DRM_VREX_STATS).
 */
static ssize_t vrex_counter_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct vrex_device *vdev = dev_get_drvdata(dev);
	unsigned long cnt = (unsigned long)container_of(attr, struct dev_ext_attribute, attr)->var;
	u64 all[VREX_CNT_NUM];
	u64 val;
	int idx;

	if (!drm_dev_enter(&vdev->drm, &idx))
		return -ENODEV;
	if (mutex_trylock(&vdev->lock)) {
		vrex_read_counters_locked(vdev, all);
		mutex_unlock(&vdev->lock);
	}
	spin_lock(&vdev->cnt_snap_lock);
	val = vdev->cnt_snap[cnt];
	spin_unlock(&vdev->cnt_snap_lock);
	drm_dev_exit(idx);
	return sysfs_emit(buf, "%llu\n", val);
}

/* 1 once repeated resets failed (commands fail with -EIO until the device is bound again). */
static ssize_t wedged_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct vrex_device *vdev = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", READ_ONCE(vdev->wedged));
}
static DEVICE_ATTR_RO(wedged);

#define VREX_COUNTER_ATTR(name, cnt)						\
	static struct dev_ext_attribute vrex_attr_##name = {			\
		__ATTR(name, 0444, vrex_counter_show, NULL), (void *)(cnt)	\
	}

VREX_COUNTER_ATTR(lookups, VREX_CNT_LOOKUPS);
VREX_COUNTER_ATTR(exact_hits, VREX_CNT_EXACT_HITS);
VREX_COUNTER_ATTR(approx_hits, VREX_CNT_APPROX_HITS);
VREX_COUNTER_ATTR(misses, VREX_CNT_MISSES);
VREX_COUNTER_ATTR(evictions, VREX_CNT_EVICTIONS);
VREX_COUNTER_ATTR(bank_conflicts, VREX_CNT_BANK_CONFLICTS);
VREX_COUNTER_ATTR(frames, VREX_CNT_FRAMES);

static struct attribute *vrex_counter_attrs[] = {
	&vrex_attr_lookups.attr.attr,
	&vrex_attr_exact_hits.attr.attr,
	&vrex_attr_approx_hits.attr.attr,
	&vrex_attr_misses.attr.attr,
	&vrex_attr_evictions.attr.attr,
	&vrex_attr_bank_conflicts.attr.attr,
	&vrex_attr_frames.attr.attr,
	&dev_attr_wedged.attr,
	NULL
};

static const struct attribute_group vrex_counter_group = {
	.name = "vrex",
	.attrs = vrex_counter_attrs,
};

/* Created by the driver core once probe succeeded, removed before remove. */
const struct attribute_group *vrex_dev_groups[] = {
	&vrex_counter_group,
	NULL
};
