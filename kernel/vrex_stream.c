// SPDX-License-Identifier: GPL-2.0-only
/*
 * Streams and the FCC: a stream is one hardware stream slot owned by one
 * file; FRAME_SUBMIT points the FCC at a luma plane inside a BO and returns
 * the fingerprint and bank group, optionally also as a DRM event.
 */
#include <linux/slab.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/vrex_accel.h>

#include "vrex_device.h"
#include "vrex_drv.h"
#include "vrex_model.h"

/* Pools above this are the hardware's private pools (VREX_POOL_PRIVATE + stream). */
#define VREX_HW_POOL_MAX (VREX_POOL_PRIVATE - 1)

struct vrex_frame_event {
	struct drm_pending_event base;
	struct drm_vrex_event_frame ev;
};

struct vrex_file_stream *vrex_stream_find(struct vrex_file *vfile, u32 id)
{
	lockdep_assert_held(&vfile->vdev->lock);
	return xa_load(&vfile->streams, id);
}

static struct vrex_file_pool *vrex_pool_get(struct vrex_file *vfile, u32 user_pool)
{
	struct vrex_device *vdev = vfile->vdev;
	struct vrex_file_pool *pool;
	int id, ret;

	pool = xa_load(&vfile->pools, user_pool);
	if (pool) {
		pool->refs++;
		return pool;
	}
	pool = kzalloc(sizeof(*pool), GFP_KERNEL_ACCOUNT);
	if (!pool)
		return ERR_PTR(-ENOMEM);
	id = ida_alloc_range(&vdev->pool_ida, 1, VREX_HW_POOL_MAX, GFP_KERNEL);
	if (id < 0) {
		ret = id;
		goto err_free;
	}
	pool->hw_pool = id;
	pool->refs = 1;
	ret = xa_err(xa_store(&vfile->pools, user_pool, pool, GFP_KERNEL));
	if (ret)
		goto err_ida;
	return pool;

err_ida:
	ida_free(&vdev->pool_ida, id);
err_free:
	kfree(pool);
	return ERR_PTR(ret);
}

static void vrex_pool_put(struct vrex_file *vfile, struct vrex_file_stream *stream)
{
	struct vrex_file_pool *pool = stream->pool;

	if (!pool || --pool->refs)
		return;
	xa_erase(&vfile->pools, stream->user_pool);
	ida_free(&vfile->vdev->pool_ida, pool->hw_pool);
	kfree(pool);
}

/*
 * A slot handed back to the IDA must be closed in the hardware too, or its
 * SHIE entries and blocks stay behind and the next open of the slot fails.
 * A failed close is retried; a slot still left open is closed again when it
 * is next handed out (vrex_stream_open_hw()).
 */
#define VREX_CLOSE_TRIES 4

static int vrex_stream_close_hw(struct vrex_device *vdev, u32 hw)
{
	int ret, n;

	for (n = 0; n < VREX_CLOSE_TRIES; n++) {
		vrex_write(vdev, VREX_REG_ARG_STREAM, hw);
		ret = vrex_cmd(vdev, VREX_CMD_STREAM_CLOSE);
		if (ret != -EIO && ret != -ETIMEDOUT)
			break;
	}
	vrex_blocks_drain(vdev);
	return ret;
}

static int vrex_stream_open_hw(struct vrex_device *vdev, u32 hw, u32 hw_pool)
{
	int ret;

	vrex_write(vdev, VREX_REG_ARG_STREAM, hw);
	vrex_write(vdev, VREX_REG_ARG_POOL, hw_pool);
	ret = vrex_cmd(vdev, VREX_CMD_STREAM_OPEN);
	if (ret != -EBUSY)
		return ret;
	/* Left open by a close that failed: nothing of it is reachable any more. */
	ret = vrex_stream_close_hw(vdev, hw);
	if (ret)
		return ret;
	vrex_write(vdev, VREX_REG_ARG_STREAM, hw);
	vrex_write(vdev, VREX_REG_ARG_POOL, hw_pool);
	return vrex_cmd(vdev, VREX_CMD_STREAM_OPEN);
}

/* Closes the hardware stream (when the device is still there) and forgets the stream. */
static void vrex_stream_close(struct vrex_file_stream *stream)
{
	struct vrex_file *vfile = stream->vfile;
	struct vrex_device *vdev = vfile->vdev;
	int idx, ret;

	lockdep_assert_held(&vdev->lock);
	if (drm_dev_enter(&vdev->drm, &idx)) {
		ret = vrex_stream_close_hw(vdev, stream->hw);
		if (ret)
			drm_warn(&vdev->drm, "closing stream slot %u failed: %d\n",
				 stream->hw, ret);
		drm_dev_exit(idx);
	}
	/* Whatever the hardware said, nothing of this stream stays reachable. */
	vrex_blocks_forget_stream(vdev, stream);

	xa_erase(&vfile->streams, stream->id);
	vdev->hw_streams[stream->hw] = NULL;
	ida_free(&vdev->stream_ida, stream->hw);
	vrex_pool_put(vfile, stream);
	vrex_user_uncharge(vfile->user, VREX_RES_STREAMS, 1);
	vfile->nstreams--;
	atomic_dec(&vdev->live_streams);
	kfree(stream);
}

void vrex_stream_release_all(struct vrex_file *vfile)
{
	struct vrex_device *vdev = vfile->vdev;
	struct vrex_file_stream *stream;
	unsigned long id;

	mutex_lock(&vdev->lock);
	xa_for_each(&vfile->streams, id, stream)
		vrex_stream_close(stream);
	mutex_unlock(&vdev->lock);
}

int vrex_ioctl_stream_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	struct vrex_file *vfile = to_vrex_file(file);
	struct drm_vrex_stream_create *args = data;
	struct vrex_file_stream *stream;
	struct vrex_check_limits lim;
	u32 hw_pool, max;
	int ret, hw, idx;

	vrex_check_limits_init(vdev, &lim);
	ret = vrex_check_stream_create(args, &lim);
	if (ret)
		return ret;

	stream = kzalloc(sizeof(*stream), GFP_KERNEL_ACCOUNT);
	if (!stream)
		return -ENOMEM;
	stream->vfile = vfile;
	stream->user_pool = args->pool;
	INIT_LIST_HEAD(&stream->released);

	if (!drm_dev_enter(drm, &idx)) {
		kfree(stream);
		return -ENODEV;
	}
	ret = vrex_lock_interruptible(vdev);
	if (ret)
		goto err_exit;

	max = READ_ONCE(vrex_file_max_streams);
	if (max && vfile->nstreams >= max) {
		ret = -EDQUOT;
		goto err_unlock;
	}
	ret = vrex_user_charge(vfile->user, VREX_RES_STREAMS, 1, vfile->limited);
	if (ret)
		goto err_unlock;
	hw = ida_alloc_max(&vdev->stream_ida, vdev->max_streams - 1, GFP_KERNEL);
	if (hw < 0) {
		ret = hw == -ENOSPC ? -EBUSY : hw;
		goto err_uncharge;
	}
	stream->hw = hw;

	if (args->flags & DRM_VREX_STREAM_POOLED) {
		stream->pool = vrex_pool_get(vfile, args->pool);
		if (IS_ERR(stream->pool)) {
			ret = PTR_ERR(stream->pool);
			stream->pool = NULL;
			goto err_hw;
		}
		hw_pool = stream->pool->hw_pool;
	} else {
		hw_pool = VREX_POOL_PRIVATE + hw;
	}

	ret = xa_alloc(&vfile->streams, &stream->id, stream, xa_limit_31b, GFP_KERNEL);
	if (ret)
		goto err_pool;

	ret = vrex_stream_open_hw(vdev, hw, hw_pool);
	if (ret)
		goto err_id;

	vdev->hw_streams[hw] = stream;
	stream->serial = ++vdev->stream_serial;
	vfile->nstreams++;
	atomic_inc(&vdev->live_streams);
	args->stream = stream->id;
	mutex_unlock(&vdev->lock);
	drm_dev_exit(idx);
	return 0;

err_id:
	xa_erase(&vfile->streams, stream->id);
err_pool:
	vrex_pool_put(vfile, stream);
err_hw:
	ida_free(&vdev->stream_ida, hw);
err_uncharge:
	vrex_user_uncharge(vfile->user, VREX_RES_STREAMS, 1);
err_unlock:
	mutex_unlock(&vdev->lock);
err_exit:
	drm_dev_exit(idx);
	kfree(stream);
	return ret;
}

int vrex_ioctl_stream_destroy(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	struct drm_vrex_stream_destroy *args = data;
	struct vrex_file_stream *stream;
	int ret = 0;

	if (args->pad)
		return -EINVAL;
	ret = vrex_lock_interruptible(vdev);
	if (ret)
		return ret;
	stream = vrex_stream_find(to_vrex_file(file), args->stream);
	if (stream)
		vrex_stream_close(stream);
	else
		ret = -ENOENT;
	mutex_unlock(&vdev->lock);
	return ret;
}

/*
 * The FCC computes each region's motion from the vectors its search wrote
 * (lib vrex_fcc_region_motion()), four regions a register. Output only: the
 * caller's bytes are overwritten; a 96-byte (pre-1.5) caller never sees them.
 * A 1.0 device has no such registers (they read 0, "still"): it reports 255,
 * "unknown", as the HAL does for a pre-1.5 driver, so a gate refuses rather
 * than trusts a motion that was never measured.
 */
static void vrex_frame_read_region_motion(struct vrex_device *vdev,
					  __u8 motion[VREX_FCC_REGIONS])
{
	u32 i, k, v;

	BUILD_BUG_ON(sizeof(((struct drm_vrex_frame_submit *)0)->region_motion) !=
		     VREX_FCC_REGIONS);
	if (vdev->hw_version < VREX_VERSION_REGION_MOTION) {
		memset(motion, 0xff, VREX_FCC_REGIONS);
		return;
	}
	for (i = 0; i < VREX_FCC_REGION_MOTION_REGS; i++) {
		v = vrex_read(vdev, VREX_REG_FCC_REGION_MOTION(i));
		for (k = 0; k < 4; k++)
			motion[4 * i + k] = (v >> (8 * k)) & 0xff;
	}
}

static void vrex_frame_read_result(struct vrex_device *vdev, struct drm_vrex_frame_submit *args)
{
	u32 resf = vrex_read(vdev, VREX_REG_RES_FLAGS);

	vrex_read_fp(vdev, VREX_REG_RES_FP(0), args->fp);
	args->frame = vrex_read(vdev, VREX_REG_RES_FRAME);
	args->group = vrex_read(vdev, VREX_REG_RES_GROUP);
	args->bank_first = vrex_read(vdev, VREX_REG_RES_BANK_FIRST);
	args->bank_count = vrex_read(vdev, VREX_REG_RES_BANK_COUNT);
	args->result_flags = 0;
	if (resf & VREX_RESF_OPENED)
		args->result_flags |= DRM_VREX_FRAME_OPENED_GROUP;
	if (resf & VREX_RESF_CONFLICT)
		args->result_flags |= DRM_VREX_FRAME_CONFLICT;
	args->centre_motion = vrex_read(vdev, VREX_REG_FCC_CENTRE_MOTION);
	args->static_ratio = vrex_read(vdev, VREX_REG_FCC_STATIC_RATIO);
	args->roi_dx = (s32)vrex_read(vdev, VREX_REG_FCC_ROI_DX);
	args->roi_dy = (s32)vrex_read(vdev, VREX_REG_FCC_ROI_DY);
	vrex_frame_read_region_motion(vdev, args->region_motion);
}

static struct vrex_frame_event *vrex_frame_event_reserve(struct drm_device *drm,
							 struct drm_file *file, u64 user_data)
{
	struct vrex_frame_event *e;
	int ret;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return ERR_PTR(-ENOMEM);
	e->ev.base.type = DRM_VREX_EVENT_FRAME_DONE;
	e->ev.base.length = sizeof(e->ev);
	e->ev.user_data = user_data;
	ret = drm_event_reserve_init(drm, file, &e->base, &e->ev.base);
	if (ret) {
		kfree(e);
		return ERR_PTR(ret);
	}
	return e;
}

int vrex_ioctl_frame_submit(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	struct drm_vrex_frame_submit *args = data;
	struct vrex_frame_event *e = NULL;
	struct drm_gem_object *obj;
	struct vrex_file_stream *stream;
	struct vrex_check_limits lim;
	u64 src, plane;
	int ret, idx;

	vrex_check_limits_init(vdev, &lim);
	ret = vrex_check_frame(args, &lim, &plane);
	if (ret)
		return ret;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	ret = vrex_bo_check_device_range(obj, args->offset, plane);
	if (ret)
		goto out_put;
	src = vrex_bo_dev_addr(obj) + args->offset;

	if (args->flags & DRM_VREX_FRAME_EVENT) {
		e = vrex_frame_event_reserve(drm, file, args->user_data);
		if (IS_ERR(e)) {
			ret = PTR_ERR(e);
			goto out_put;
		}
	}

	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto out_event;
	}
	ret = vrex_lock_interruptible(vdev);
	if (ret)
		goto out_exit;
	stream = vrex_stream_find(to_vrex_file(file), args->stream);
	if (!stream) {
		ret = -ENOENT;
		goto out_unlock;
	}
	vrex_write(vdev, VREX_REG_ARG_STREAM, stream->hw);
	vrex_write(vdev, VREX_REG_ARG_SRC_LO, lower_32_bits(src));
	vrex_write(vdev, VREX_REG_ARG_SRC_HI, upper_32_bits(src));
	vrex_write(vdev, VREX_REG_ARG_WIDTH, args->width);
	vrex_write(vdev, VREX_REG_ARG_HEIGHT, args->height);
	vrex_write(vdev, VREX_REG_ARG_STRIDE, args->stride);
	ret = vrex_cmd(vdev, VREX_CMD_FRAME);
	if (!ret)
		vrex_frame_read_result(vdev, args);
out_unlock:
	mutex_unlock(&vdev->lock);
out_exit:
	drm_dev_exit(idx);
out_event:
	if (e && !ret) {
		e->ev.stream = args->stream;
		e->ev.frame = args->frame;
		e->ev.group = args->group;
		e->ev.fp[0] = args->fp[0];
		e->ev.fp[1] = args->fp[1];
		drm_send_event(drm, &e->base);
	} else if (e) {
		drm_event_cancel_free(drm, &e->base);
	}
out_put:
	drm_gem_object_put(obj);
	return ret;
}
