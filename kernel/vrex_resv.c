// SPDX-License-Identifier: GPL-2.0-only
/*
 * ReSV: key hashing and WiCSum selection (docs/hw/resv.md). A head is one
 * hardware head slot owned by one file; the unit's parameter registers (seed,
 * dimension, radius, ratio, mode, LUT, block size) are shared by every head,
 * so each command programs the calling head's parameters first, under the
 * device lock that already serialises commands. Keys, queries and the ranges
 * the KVMU writes live in BOs of the calling file.
 */
#include <linux/slab.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_managed.h>
#include <drm/vrex_accel.h>

#include "vrex_device.h"
#include "vrex_drv.h"
#include "vrex_model.h"

/**
 * struct vrex_file_head - a hardware head as one file knows it
 * @id: head id as user space knows it
 * @hw: hardware head slot
 * @epoch: the device's reset epoch the head's contents belong to; another
 *         epoch means a reset emptied the hardware head behind its owner's back
 * @params: as created, programmed before every command on the head
 */
struct vrex_file_head {
	u32 id;
	u32 hw;
	u32 epoch;
	struct drm_vrex_resv_params params;
};

static void vrex_resv_fini(struct drm_device *drm, void *arg)
{
	struct vrex_device *vdev = to_vrex_device(drm);

	ida_destroy(&vdev->resv.ida);
}

/**
 * vrex_resv_init - read the ReSV unit's geometry at probe
 * @vdev: device whose registers are readable
 *
 * A device without the unit (no VREX_CAP_RESV) gets zero heads: every ReSV
 * ioctl then fails with -EOPNOTSUPP.
 *
 * Return: 0 or a negative errno.
 */
int vrex_resv_init(struct vrex_device *vdev)
{
	struct vrex_resv_dev *r = &vdev->resv;

	ida_init(&r->ida);
	if (vdev->caps & VREX_CAP_RESV) {
		mutex_lock(&vdev->lock);
		r->heads = vrex_read(vdev, VREX_REG_RESV_HEADS);
		r->max_tokens = vrex_read(vdev, VREX_REG_RESV_MAX_TOKENS);
		r->max_clusters = vrex_read(vdev, VREX_REG_RESV_MAX_CLUSTERS);
		mutex_unlock(&vdev->lock);
	}
	if (!r->heads)
		vdev->caps &= ~VREX_CAP_RESV;
	return drmm_add_action_or_reset(&vdev->drm, vrex_resv_fini, NULL);
}

void vrex_resv_file_init(struct vrex_file *vfile)
{
	xa_init_flags(&vfile->heads, XA_FLAGS_ALLOC1);
}

static struct vrex_file_head *vrex_head_find(struct vrex_file *vfile, u32 id)
{
	lockdep_assert_held(&vfile->vdev->lock);
	return xa_load(&vfile->heads, id);
}

/*
 * A device reset since the head was created (or last acknowledged) emptied
 * it: its owner's view of the tokens is gone, so every command on it fails
 * with -ESTALE until RESV_TRUNCATE to 0 tokens (or destroying it)
 * acknowledges the loss. Silently hashing into or selecting from an emptied
 * head would hand out ranges of the wrong tokens.
 */
static int vrex_head_check_epoch(struct vrex_device *vdev, const struct vrex_file_head *head)
{
	return head->epoch == vdev->reset_epoch ? 0 : -ESTALE;
}

/* Loads @head's parameters into the unit and selects it (ARG_HEAD). */
static void vrex_head_program(struct vrex_device *vdev, const struct vrex_file_head *head)
{
	const struct drm_vrex_resv_params *p = &head->params;
	u32 d;

	vrex_write(vdev, VREX_REG_RESV_SEED_LO, lower_32_bits(p->seed));
	vrex_write(vdev, VREX_REG_RESV_SEED_HI, upper_32_bits(p->seed));
	vrex_write(vdev, VREX_REG_RESV_DIM, p->dim);
	vrex_write(vdev, VREX_REG_RESV_TH, p->th);
	vrex_write(vdev, VREX_REG_RESV_RATIO, p->ratio);
	vrex_write(vdev, VREX_REG_RESV_MODE, p->mode);
	vrex_write(vdev, VREX_REG_RESV_TOKENS_PER_BLOCK, p->tokens_per_block);
	vrex_write(vdev, VREX_REG_RESV_BYTES_PER_TOKEN, p->bytes_per_token);
	for (d = 0; d < DRM_VREX_RESV_LUT_SIZE; d++)
		vrex_write(vdev, VREX_REG_RESV_LUT(d), p->lut[d]);
	vrex_write(vdev, VREX_REG_ARG_HEAD, head->hw);
}

/* Empties hardware head @hw: TRUNCATE to zero tokens. */
static int vrex_head_clear_hw(struct vrex_device *vdev, u32 hw)
{
	vrex_write(vdev, VREX_REG_ARG_HEAD, hw);
	vrex_write(vdev, VREX_REG_ARG_COUNT, 0);
	return vrex_cmd(vdev, VREX_CMD_RESV_TRUNCATE);
}

/*
 * Empties the hardware head (when the device is still there) and forgets it.
 * A head whose clearing failed is cleared again when it is next handed out.
 */
static void vrex_head_release(struct vrex_file *vfile, struct vrex_file_head *head)
{
	struct vrex_device *vdev = vfile->vdev;
	int idx, ret;

	lockdep_assert_held(&vdev->lock);
	if (drm_dev_enter(&vdev->drm, &idx)) {
		ret = vrex_head_clear_hw(vdev, head->hw);
		if (ret)
			drm_warn(&vdev->drm, "clearing ReSV head %u failed: %d\n", head->hw, ret);
		drm_dev_exit(idx);
	}
	xa_erase(&vfile->heads, head->id);
	ida_free(&vdev->resv.ida, head->hw);
	vrex_user_uncharge(vfile->user, VREX_RES_HEADS, 1);
	vdev->resv.in_use--;
	kfree(head);
}

/**
 * vrex_resv_release_all - release every head of a closing file
 * @vfile: the file
 */
void vrex_resv_release_all(struct vrex_file *vfile)
{
	struct vrex_device *vdev = vfile->vdev;
	struct vrex_file_head *head;
	unsigned long id;

	mutex_lock(&vdev->lock);
	xa_for_each(&vfile->heads, id, head)
		vrex_head_release(vfile, head);
	mutex_unlock(&vdev->lock);
	xa_destroy(&vfile->heads);
}

/**
 * vrex_resv_query_stats - DRM_VREX_QUERY_RESV_STATS
 * @vdev: device
 * @args: the size-negotiated query
 *
 * Return: 0, -EOPNOTSUPP without the unit, -ENODEV after an unplug, -EFAULT.
 */
int vrex_resv_query_stats(struct vrex_device *vdev, struct drm_vrex_query *args)
{
	struct drm_vrex_resv_stats st = { };
	u64 *cnt = &st.keys;
	u32 n, i;
	int idx, ret;

	BUILD_BUG_ON(offsetof(struct drm_vrex_resv_stats, ranges) !=
		     (VREX_RESV_CNT_NUM - 1) * sizeof(u64));
	if (!vdev->resv.heads)
		return -EOPNOTSUPP;
	if (args->ptr) {
		if (!drm_dev_enter(&vdev->drm, &idx))
			return -ENODEV;
		ret = vrex_lock_interruptible(vdev);
		if (ret) {
			drm_dev_exit(idx);
			return ret;
		}
		/* 64-bit counters read as two halves: retry until HI is stable. */
		for (i = 0; i < VREX_RESV_CNT_NUM; i++) {
			u32 hi, lo;

			do {
				hi = vrex_read(vdev, VREX_REG_RESV_CNT_HI(i));
				lo = vrex_read(vdev, VREX_REG_RESV_CNT_LO(i));
			} while (hi != vrex_read(vdev, VREX_REG_RESV_CNT_HI(i)));
			cnt[i] = (u64)hi << 32 | lo;
		}
		st.heads_in_use = vdev->resv.in_use;
		mutex_unlock(&vdev->lock);
		drm_dev_exit(idx);
		st.heads = vdev->resv.heads;
		st.max_tokens = vdev->resv.max_tokens;
		st.max_clusters = vdev->resv.max_clusters;
	}
	n = min_t(u32, args->size, sizeof(st));
	args->size = sizeof(st);
	if (args->ptr && n && copy_to_user(u64_to_user_ptr(args->ptr), &st, n))
		return -EFAULT;
	return 0;
}

/**
 * vrex_ioctl_resv_head_create - DRM_VREX_RESV_HEAD_CREATE
 * @drm: device
 * @data: struct drm_vrex_resv_head_create
 * @file: the caller, who owns the new head
 *
 * Return: 0, -EINVAL for bad flags or parameters, -EOPNOTSUPP without the
 * unit, -EBUSY when every hardware head is in use, -ENOMEM, -ENODEV, or the
 * error of clearing the hardware head.
 */
int vrex_ioctl_resv_head_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	struct vrex_file *vfile = to_vrex_file(file);
	struct drm_vrex_resv_head_create *args = data;
	struct vrex_file_head *head;
	int ret, hw, idx;

	ret = vrex_check_resv_head_create(args);
	if (ret)
		return ret;
	if (!vdev->resv.heads)
		return -EOPNOTSUPP;
	head = kzalloc(sizeof(*head), GFP_KERNEL_ACCOUNT);
	if (!head)
		return -ENOMEM;
	head->params = args->params;

	if (!drm_dev_enter(drm, &idx)) {
		kfree(head);
		return -ENODEV;
	}
	ret = vrex_lock_interruptible(vdev);
	if (ret)
		goto err_exit;
	ret = vrex_user_charge(vfile->user, VREX_RES_HEADS, 1, vfile->limited);
	if (ret)
		goto err_unlock;
	hw = ida_alloc_max(&vdev->resv.ida, vdev->resv.heads - 1, GFP_KERNEL);
	if (hw < 0) {
		ret = hw == -ENOSPC ? -EBUSY : hw;
		goto err_uncharge;
	}
	head->hw = hw;
	head->epoch = vdev->reset_epoch;
	ret = xa_alloc(&vfile->heads, &head->id, head, xa_limit_31b, GFP_KERNEL);
	if (ret)
		goto err_hw;
	/* A head whose release could not clear it holds stale tokens. */
	ret = vrex_head_clear_hw(vdev, hw);
	if (ret)
		goto err_id;
	vdev->resv.in_use++;
	args->head = head->id;
	mutex_unlock(&vdev->lock);
	drm_dev_exit(idx);
	return 0;

err_id:
	xa_erase(&vfile->heads, head->id);
err_hw:
	ida_free(&vdev->resv.ida, hw);
err_uncharge:
	vrex_user_uncharge(vfile->user, VREX_RES_HEADS, 1);
err_unlock:
	mutex_unlock(&vdev->lock);
err_exit:
	drm_dev_exit(idx);
	kfree(head);
	return ret;
}

/**
 * vrex_ioctl_resv_head_destroy - DRM_VREX_RESV_HEAD_DESTROY
 * @drm: device
 * @data: struct drm_vrex_resv_head_destroy
 * @file: the caller
 *
 * Works after an unplug too, so a file can still release what it holds.
 *
 * Return: 0, -EINVAL for a non-zero pad, -ENOENT for a head not of this file.
 */
int vrex_ioctl_resv_head_destroy(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	struct vrex_file *vfile = to_vrex_file(file);
	struct drm_vrex_resv_head_destroy *args = data;
	struct vrex_file_head *head;
	int ret = 0;

	if (args->pad)
		return -EINVAL;
	ret = vrex_lock_interruptible(vdev);
	if (ret)
		return ret;
	head = vrex_head_find(vfile, args->head);
	if (head)
		vrex_head_release(vfile, head);
	else
		ret = -ENOENT;
	mutex_unlock(&vdev->lock);
	return ret;
}

/**
 * vrex_ioctl_resv_hash - DRM_VREX_RESV_HASH: hash keys and cluster them
 * @drm: device
 * @data: struct drm_vrex_resv_hash
 * @file: the caller, owner of the head and the BO
 *
 * Return: 0, -EINVAL (flags, count 0, misaligned, keys outside the BO),
 * -ENOENT (head or BO not of this file), -ESTALE (a device reset emptied the
 * head, see vrex_ioctl_resv_truncate()), -ENOSPC (the head cannot take the
 * batch; nothing was added), -ENODEV, or a failed command (-ETIMEDOUT, -EIO).
 */
int vrex_ioctl_resv_hash(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	struct drm_vrex_resv_hash *args = data;
	struct drm_gem_object *obj;
	struct vrex_file_head *head;
	u64 src;
	int ret, idx;

	ret = vrex_check_resv_hash(args);
	if (ret)
		return ret;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto out_put;
	}
	ret = vrex_lock_interruptible(vdev);
	if (ret)
		goto out_exit;
	head = vrex_head_find(to_vrex_file(file), args->head);
	if (!head) {
		ret = -ENOENT;
		goto out_unlock;
	}
	ret = vrex_head_check_epoch(vdev, head);
	if (ret)
		goto out_unlock;
	/* count < 2^32, dim <= 256: the product cannot wrap in 64 bits. */
	ret = vrex_bo_check_device_range(obj, args->offset,
					 (u64)args->count * head->params.dim * sizeof(s16));
	if (ret)
		goto out_unlock;
	src = vrex_bo_dev_addr(obj) + args->offset;
	vrex_head_program(vdev, head);
	vrex_write(vdev, VREX_REG_ARG_SRC_LO, lower_32_bits(src));
	vrex_write(vdev, VREX_REG_ARG_SRC_HI, upper_32_bits(src));
	vrex_write(vdev, VREX_REG_ARG_COUNT, args->count);
	ret = vrex_cmd(vdev, VREX_CMD_RESV_HASH);
	if (!ret) {
		args->tokens = vrex_read(vdev, VREX_REG_RES_COUNT);
		args->clusters = vrex_read(vdev, VREX_REG_RES_CLUSTERS);
	}
out_unlock:
	mutex_unlock(&vdev->lock);
out_exit:
	drm_dev_exit(idx);
out_put:
	drm_gem_object_put(obj);
	return ret;
}

/* The BOs of one selection, referenced from validation until the command ran. */
struct vrex_select_bos {
	struct drm_gem_object *query;
	struct drm_gem_object *out;	/* NULL without room for ranges */
};

static int vrex_select_validate(struct vrex_file *vfile, struct drm_file *file,
				const struct drm_vrex_resv_select_item *it,
				struct vrex_select_bos *bos)
{
	struct vrex_file_head *head;
	int ret;

	head = vrex_head_find(vfile, it->head);
	if (!head)
		return -ENOENT;
	ret = vrex_head_check_epoch(vfile->vdev, head);
	if (ret)
		return ret;
	ret = vrex_check_resv_select_item(it);
	if (ret)
		return ret;
	bos->query = drm_gem_object_lookup(file, it->query_handle);
	if (!bos->query)
		return -ENOENT;
	ret = vrex_bo_check_device_range(bos->query, it->query_offset,
					 (u64)head->params.dim * sizeof(s16));
	if (ret || !it->max_ranges)
		return ret;
	bos->out = drm_gem_object_lookup(file, it->out_handle);
	if (!bos->out)
		return -ENOENT;
	return vrex_bo_check_device_range(bos->out, it->out_offset,
					  (u64)it->max_ranges * 2 * sizeof(u32));
}

static int vrex_select_one(struct vrex_device *vdev, struct vrex_file *vfile,
			   struct drm_vrex_resv_select_item *it, const struct vrex_select_bos *bos)
{
	u64 src = vrex_bo_dev_addr(bos->query) + it->query_offset;
	u64 dst = bos->out ? vrex_bo_dev_addr(bos->out) + it->out_offset : 0;
	int ret;

	vrex_head_program(vdev, vrex_head_find(vfile, it->head));
	vrex_write(vdev, VREX_REG_ARG_SRC_LO, lower_32_bits(src));
	vrex_write(vdev, VREX_REG_ARG_SRC_HI, upper_32_bits(src));
	vrex_write(vdev, VREX_REG_ARG_DST_LO, lower_32_bits(dst));
	vrex_write(vdev, VREX_REG_ARG_DST_HI, upper_32_bits(dst));
	vrex_write(vdev, VREX_REG_ARG_COUNT, it->max_ranges);
	vrex_write(vdev, VREX_REG_ARG_FLAGS,
		   it->flags & DRM_VREX_RESV_SELECT_BLOCKS ? VREX_ARGF_RESV_BLOCKS : 0);
	ret = vrex_cmd(vdev, VREX_CMD_RESV_SELECT);
	if (ret)
		return ret;
	it->ranges = vrex_read(vdev, VREX_REG_RES_COUNT);
	it->tokens = vrex_read(vdev, VREX_REG_RES_TOKENS);
	it->clusters = vrex_read(vdev, VREX_REG_RES_CLUSTERS);
	it->qhash = vrex_read(vdev, VREX_REG_RES_FP(0));
	it->cutoff = vrex_read(vdev, VREX_REG_RES_DISTANCE);
	it->head_tokens = vrex_read(vdev, VREX_REG_RES_HEAD_TOKENS);
	return 0;
}

/**
 * vrex_ioctl_resv_select - DRM_VREX_RESV_SELECT: a batch of WiCSum selections
 * @drm: device
 * @data: struct drm_vrex_resv_batch of struct drm_vrex_resv_select_item
 * @file: the caller, owner of every head and BO the items name
 *
 * The batch is validated as a whole before any selection runs: a malformed
 * item fails the ioctl with nothing selected. The items are written back
 * (min(elem_size, ours) bytes each) only when every selection ran.
 *
 * Return: 0, -EINVAL, -E2BIG (elem_size, or a non-zero tail of a larger
 * element), -ENOENT (head or BO not of this file), -ESTALE (a head a device
 * reset emptied), -EFAULT, -ENOMEM, -ENODEV,
 * or the error of the first selection that failed (-ETIMEDOUT, -EIO, ...).
 */
int vrex_ioctl_resv_select(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	struct vrex_file *vfile = to_vrex_file(file);
	struct drm_vrex_resv_batch *args = data;
	struct drm_vrex_resv_select_item *items;
	struct vrex_select_bos *bos;
	int ret, idx;
	u32 i;

	ret = vrex_check_resv_batch(args, sizeof(*items));
	if (ret)
		return ret;
	items = vrex_elems_copy_in(args->items, args->count, args->elem_size, sizeof(*items));
	if (IS_ERR(items))
		return PTR_ERR(items);
	bos = kvcalloc(args->count, sizeof(*bos), GFP_KERNEL);
	if (!bos) {
		ret = -ENOMEM;
		goto out_items;
	}
	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto out_bos;
	}
	ret = vrex_lock_interruptible(vdev);
	if (ret) {
		drm_dev_exit(idx);
		goto out_bos;
	}
	for (i = 0; i < args->count; i++) {
		ret = vrex_select_validate(vfile, file, &items[i], &bos[i]);
		if (ret)
			goto out_unlock;
	}
	for (i = 0; i < args->count; i++) {
		ret = vrex_select_one(vdev, vfile, &items[i], &bos[i]);
		if (ret)
			goto out_unlock;
		cond_resched();
	}
	mutex_unlock(&vdev->lock);
	drm_dev_exit(idx);
	ret = vrex_batch_copy_out(args->items, args->elem_size, items, args->count,
				  sizeof(*items));
	goto out_put;

out_unlock:
	mutex_unlock(&vdev->lock);
	drm_dev_exit(idx);
out_put:
	for (i = 0; i < args->count; i++) {
		if (bos[i].query)
			drm_gem_object_put(bos[i].query);
		if (bos[i].out)
			drm_gem_object_put(bos[i].out);
	}
out_bos:
	kvfree(bos);
out_items:
	kvfree(items);
	return ret;
}

/**
 * vrex_ioctl_resv_truncate - DRM_VREX_RESV_TRUNCATE: keep a head's first tokens
 * @drm: device
 * @data: struct drm_vrex_resv_truncate
 * @file: the caller, owner of the head
 *
 * TRUNCATE to 0 tokens also acknowledges a reset that emptied the head.
 *
 * Return: 0, -ENOENT (head not of this file), -EINVAL (@keep above the
 * head's tokens), -ESTALE (@keep > 0 on a head a reset emptied), -ENODEV, or
 * a failed command.
 */
int vrex_ioctl_resv_truncate(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	struct drm_vrex_resv_truncate *args = data;
	struct vrex_file_head *head;
	int ret, idx;

	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	ret = vrex_lock_interruptible(vdev);
	if (ret) {
		drm_dev_exit(idx);
		return ret;
	}
	head = vrex_head_find(to_vrex_file(file), args->head);
	if (!head) {
		ret = -ENOENT;
	} else if (args->keep && vrex_head_check_epoch(vdev, head)) {
		ret = -ESTALE;
	} else {
		vrex_write(vdev, VREX_REG_ARG_HEAD, head->hw);
		vrex_write(vdev, VREX_REG_ARG_COUNT, args->keep);
		ret = vrex_cmd(vdev, VREX_CMD_RESV_TRUNCATE);
		/* Emptied on purpose: the owner knows what the head holds again. */
		if (!ret && !args->keep)
			head->epoch = vdev->reset_epoch;
	}
	mutex_unlock(&vdev->lock);
	drm_dev_exit(idx);
	return ret;
}
