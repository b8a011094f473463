// SPDX-License-Identifier: GPL-2.0-only
/*
 * SHIE batches: insert, lookup and retire. Each batch is copied in, validated
 * as a whole under the device lock (a malformed item changes nothing), then
 * applied item by item as register commands; device-side outcomes are per
 * item. The kernel mirrors every live hardware block in vdev->blocks so ids
 * coming back from the hardware are translated to the caller's BO handle and
 * offset, and so a BO cannot go away while a block points into it.
 */
#include <linux/list.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/vrex_accel.h>

#include "vrex_device.h"
#include "vrex_drv.h"
#include "vrex_model.h"

/*
 * Collects the release records of one stream while the FIFO is drained: the
 * block refs themselves (on @refs by their pending link, oldest first), so
 * a record that cannot be delivered goes back to its stream, never lost.
 */
struct vrex_release_sink {
	struct vrex_file_stream *stream;
	struct list_head refs;
	u32 count;
};

/*
 * The hardware no longer points at @block. Its record goes to @sink when the
 * sink collects for the block's stream, otherwise it waits on that stream's
 * released list for the stream's next RETIRE: no record is ever dropped while
 * its stream lives (vrex_blocks_forget_stream() frees them with the stream).
 */
static void vrex_block_released(struct vrex_device *vdev, u32 block, u32 reason,
				struct vrex_release_sink *sink)
{
	struct vrex_file_stream *stream;
	struct vrex_block_ref *ref;

	lockdep_assert_held(&vdev->lock);
	ref = xa_erase(&vdev->blocks, block);
	if (!ref)
		return;
	stream = ref->stream;
	stream->nblocks--;
	vrex_user_uncharge(stream->vfile->user, VREX_RES_ENTRIES, ref->entries);
	if (vrex_bo_is_imported(ref->obj)) {
		vdev->imported_kv_blocks--;
		vdev->imported_kv_bytes -= ref->length;
	}
	drm_gem_object_put(ref->obj);
	ref->obj = NULL;
	atomic_dec(&vdev->live_blocks);
	ref->block = block;
	ref->reason = reason;
	if (sink && sink->stream == stream) {
		list_add_tail(&ref->pending, &sink->refs);
		sink->count++;
		return;
	}
	list_add_tail(&ref->pending, &stream->released);
	stream->nreleased++;
}

/* Records queued on the sink's stream by earlier drains go out first. */
static void vrex_sink_take_pending(struct vrex_release_sink *sink)
{
	struct vrex_file_stream *stream = sink->stream;

	list_splice_tail_init(&stream->released, &sink->refs);
	sink->count += stream->nreleased;
	stream->nreleased = 0;
}

/* Pops every queued release record; the hardware no longer points at those blocks. */
static void vrex_blocks_drain_into(struct vrex_device *vdev, struct vrex_release_sink *sink)
{
	u32 n, block, reason;

	for (n = 0; n <= vdev->block_capacity; n++) {
		if (vrex_cmd(vdev, VREX_CMD_POP_RELEASED))
			return;
		if (!(vrex_read(vdev, VREX_REG_RES_FLAGS) & VREX_RESF_HIT))
			return;
		block = vrex_read(vdev, VREX_REG_RES_BLOCK);
		reason = vrex_read(vdev, VREX_REG_RES_REASON);
		vrex_block_released(vdev, block,
				    reason == VREX_RELEASE_ZOMBIE ? DRM_VREX_RELEASE_ZOMBIE :
								   DRM_VREX_RELEASE_REMOVED,
				    sink);
		cond_resched();
	}
}

void vrex_blocks_drain(struct vrex_device *vdev)
{
	vrex_blocks_drain_into(vdev, NULL);
}

/* The device was reset: every block is gone from the hardware. */
void vrex_blocks_reset(struct vrex_device *vdev)
{
	struct vrex_block_ref *ref;
	unsigned long block;

	lockdep_assert_held(&vdev->lock);
	xa_for_each(&vdev->blocks, block, ref)
		vrex_block_released(vdev, block, DRM_VREX_RELEASE_RESET, NULL);
}

void vrex_blocks_forget_stream(struct vrex_device *vdev, struct vrex_file_stream *stream)
{
	struct vrex_block_ref *ref, *tmp;
	unsigned long block;

	lockdep_assert_held(&vdev->lock);
	xa_for_each(&vdev->blocks, block, ref)
		if (ref->stream == stream)
			vrex_block_released(vdev, block, DRM_VREX_RELEASE_REMOVED, NULL);
	list_for_each_entry_safe(ref, tmp, &stream->released, pending) {
		list_del(&ref->pending);
		kfree(ref);
	}
	stream->nreleased = 0;
}

/*
 * Copies @count elements of @elem_size bytes at user address @uptr into a new
 * array of @ksize-byte ones with copy_struct_from_user() semantics: a smaller
 * element (an older binary) is zero-extended, a larger one (a newer binary) is
 * accepted only if every byte past @ksize is zero, else -E2BIG, so no field a
 * newer caller set is ever silently ignored. The caller has bounded @count and
 * @elem_size (vrex_check_batch(), vrex_check_resv_batch()). kvfree() the result.
 */
void *vrex_elems_copy_in(u64 uptr, u32 count, u32 elem_size, size_t ksize)
{
	void __user *src = u64_to_user_ptr(uptr);
	void *buf;
	int ret;
	u32 i;

	buf = kvmalloc_array(count, ksize, GFP_KERNEL);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	if (elem_size == ksize) {
		if (copy_from_user(buf, src, array_size(count, ksize))) {
			ret = -EFAULT;
			goto err_free;
		}
		return buf;
	}
	for (i = 0; i < count; i++) {
		ret = copy_struct_from_user(buf + (size_t)i * ksize, ksize,
					    src + (size_t)i * elem_size, elem_size);
		if (ret)
			goto err_free;
	}
	return buf;

err_free:
	kvfree(buf);
	return ERR_PTR(ret);
}

/* A SHIE batch: the header (vrex_check_batch()), then its elements. */
static void *vrex_batch_copy_in(const struct drm_vrex_shie_batch *args, size_t ksize)
{
	int ret;

	ret = vrex_check_batch(args, ksize);
	if (ret)
		return ERR_PTR(ret);
	return vrex_elems_copy_in(args->items, args->count, args->elem_size, ksize);
}

/*
 * Writes back min(@elem_size, @ksize) bytes of each element: an older caller
 * gets the fields it knows, a newer one's bytes past ours are untouched.
 */
int vrex_batch_copy_out(u64 uptr, u32 elem_size, const void *buf, u32 count, size_t ksize)
{
	void __user *dst = u64_to_user_ptr(uptr);
	size_t n = min_t(size_t, elem_size, ksize);
	u32 i;

	if (elem_size == ksize)
		return copy_to_user(dst, buf, array_size(count, ksize)) ? -EFAULT : 0;
	for (i = 0; i < count; i++)
		if (copy_to_user(dst + (size_t)i * elem_size, buf + (size_t)i * ksize, n))
			return -EFAULT;
	return 0;
}

/* ---- insert ------------------------------------------------------------ */

static int vrex_insert_validate(struct vrex_file *vfile, struct drm_file *file,
				struct vrex_file_stream *stream,
				const struct drm_vrex_shie_insert_item *it,
				struct drm_gem_object **objp)
{
	struct vrex_device *vdev = vfile->vdev;
	struct vrex_block_ref *ref;
	struct drm_gem_object *obj;
	int ret;

	ret = vrex_check_insert_item(it);
	if (ret)
		return ret;

	if (it->flags & DRM_VREX_INSERT_ALIAS) {
		ref = xa_load(&vdev->blocks, it->block);
		if (!ref || ref->stream->vfile != vfile)
			return -ENOENT;
		/* A generation names one incarnation of the id: its successor is another block. */
		if (it->block_gen && it->block_gen != ref->block_gen)
			return -ENOENT;
		return 0;
	}

	obj = drm_gem_object_lookup(file, it->handle);
	if (!obj)
		return -ENOENT;
	*objp = obj;
	return vrex_check_range(it->offset, it->length, obj->size);
}

static int vrex_insert_one(struct vrex_device *vdev, struct vrex_file_stream *stream,
			   struct drm_vrex_shie_insert_item *it, struct drm_gem_object *obj)
{
	bool alias = it->flags & DRM_VREX_INSERT_ALIAS;
	struct vrex_user *user = stream->vfile->user;
	struct vrex_block_ref *ref = NULL;
	u64 addr = 0;
	u32 block;
	int ret;

	/* Every item adds one SHIE entry, charged until its block is released. */
	ret = vrex_user_charge(user, VREX_RES_ENTRIES, 1, stream->vfile->limited);
	if (ret)
		return ret;
	if (!alias) {
		ref = kzalloc(sizeof(*ref), GFP_KERNEL_ACCOUNT);
		if (!ref) {
			ret = -ENOMEM;
			goto err_free;
		}
		addr = vrex_bo_kv_addr(obj, it->offset);
	}

	vrex_write(vdev, VREX_REG_ARG_STREAM, stream->hw);
	vrex_write(vdev, VREX_REG_ARG_REGION, it->region);
	vrex_write(vdev, VREX_REG_ARG_OFFSET, (u32)it->frame_offset);
	vrex_write(vdev, VREX_REG_ARG_FLAGS, (alias ? VREX_ARGF_ALIAS : 0) |
		   (it->flags & DRM_VREX_INSERT_HOST_TIER ? VREX_ARGF_HOST_TIER : 0));
	vrex_write_fp(vdev, VREX_REG_ARG_FP(0), it->fp);
	vrex_write(vdev, VREX_REG_ARG_BLOCK, alias ? it->block : VREX_NIL);
	/* The device checks the generation too (0: any); validated above already. */
	vrex_write(vdev, VREX_REG_ARG_BLOCK_GEN_LO, lower_32_bits(it->block_gen));
	vrex_write(vdev, VREX_REG_ARG_BLOCK_GEN_HI, upper_32_bits(it->block_gen));
	vrex_write(vdev, VREX_REG_ARG_KV_TAG, it->handle);
	vrex_write(vdev, VREX_REG_ARG_KV_ADDR_LO, lower_32_bits(addr));
	vrex_write(vdev, VREX_REG_ARG_KV_ADDR_HI, upper_32_bits(addr));
	vrex_write(vdev, VREX_REG_ARG_KV_LEN, (u32)it->length);
	ret = vrex_cmd(vdev, VREX_CMD_INSERT);
	if (ret)
		goto err_free;
	block = vrex_read(vdev, VREX_REG_RES_BLOCK);
	if (alias) {
		ref = xa_load(&vdev->blocks, it->block);
		it->bo_gen = ref ? ref->bo_gen : 0;
		it->block_gen = ref ? ref->block_gen : 0;
		if (ref)
			ref->entries++;
		else
			vrex_user_uncharge(user, VREX_RES_ENTRIES, 1);
		it->block = block;
		return 0;
	}

	ref->stream = stream;
	ref->entries = 1;
	ref->obj = obj;
	ref->bo_gen = vrex_bo_gen(obj);
	ref->block_gen = (u64)vrex_read(vdev, VREX_REG_RES_BLOCK_GEN_HI) << 32 |
			 vrex_read(vdev, VREX_REG_RES_BLOCK_GEN_LO);
	ref->handle = it->handle;
	ref->offset = it->offset;
	ref->length = it->length;
	INIT_LIST_HEAD(&ref->pending);
	ret = xa_insert(&vdev->blocks, block, ref, GFP_KERNEL);
	if (ret) {
		/* Cannot track it: take it back from the hardware. */
		vrex_write(vdev, VREX_REG_ARG_BLOCK, block);
		vrex_cmd(vdev, VREX_CMD_REMOVE);
		goto err_free;
	}
	drm_gem_object_get(obj);
	if (vrex_bo_is_imported(obj)) {
		vdev->imported_kv_blocks++;
		vdev->imported_kv_bytes += it->length;
	}
	stream->nblocks++;
	atomic_inc(&vdev->live_blocks);
	it->block = block;
	it->bo_gen = ref->bo_gen;
	it->block_gen = ref->block_gen;
	return 0;

err_free:
	vrex_user_uncharge(user, VREX_RES_ENTRIES, 1);
	if (!alias)
		kfree(ref);
	return ret;
}

int vrex_ioctl_shie_insert(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	struct vrex_file *vfile = to_vrex_file(file);
	struct drm_vrex_shie_batch *args = data;
	struct drm_vrex_shie_insert_item *items;
	struct drm_gem_object **objs;
	struct vrex_file_stream *stream;
	bool applied = false;
	int ret, idx;
	u32 i;

	items = vrex_batch_copy_in(args, sizeof(*items));
	if (IS_ERR(items))
		return PTR_ERR(items);
	objs = kvcalloc(args->count, sizeof(*objs), GFP_KERNEL);
	if (!objs) {
		ret = -ENOMEM;
		goto out_items;
	}
	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto out_objs;
	}
	ret = vrex_lock_interruptible(vdev);
	if (ret)
		goto out_exit;
	stream = vrex_stream_find(vfile, args->stream);
	if (!stream) {
		ret = -ENOENT;
		goto out_unlock;
	}
	for (i = 0; i < args->count; i++) {
		ret = vrex_insert_validate(vfile, file, stream, &items[i], &objs[i]);
		if (ret)
			goto out_unlock;
	}
	/*
	 * Device outcomes (-EEXIST, -ENOSPC, ...) are per item; a command that
	 * failed itself (vrex_cmd_failed()) stops the batch: later items get
	 * -ECANCELED, the ioctl returns that error and the results are still
	 * copied out, so the caller learns which blocks exist.
	 */
	applied = true;
	for (i = 0; i < args->count; i++) {
		if (ret) {
			items[i].result = -ECANCELED;
			continue;
		}
		items[i].result = vrex_insert_one(vdev, stream, &items[i], objs[i]);
		if (vrex_cmd_failed(items[i].result))
			ret = items[i].result;
		cond_resched();
	}
out_unlock:
	mutex_unlock(&vdev->lock);
out_exit:
	drm_dev_exit(idx);
	if (applied) {
		int err = vrex_batch_copy_out(args->items, args->elem_size, items, args->count,
					      sizeof(*items));

		if (!ret)
			ret = err;
	}
out_objs:
	for (i = 0; i < args->count; i++)
		if (objs[i])
			drm_gem_object_put(objs[i]);
	kvfree(objs);
out_items:
	kvfree(items);
	return ret;
}

/* ---- lookup ------------------------------------------------------------ */

/* What the device reported for one lookup, from RES_* or a batch record. */
struct vrex_lookup_report {
	u32 resf;
	u32 block;
	u32 hw_stream;
	u32 distance;
	u32 frame;
	u64 fp[2];
};

/*
 * A hit is reported only for a block of the caller (the device's word on a
 * block is never trusted); its handle only while it still names the BO.
 * Returns whether @c now holds the hit.
 */
static bool vrex_lookup_resolve(struct vrex_device *vdev, struct drm_file *file,
				const struct vrex_lookup_report *rep,
				struct drm_vrex_shie_candidate *c)
{
	struct vrex_file *vfile = to_vrex_file(file);
	u32 hw_stream = rep->hw_stream;
	struct vrex_block_ref *ref;
	struct drm_gem_object *obj;

	if (!(rep->resf & VREX_RESF_HIT))
		return false;
	ref = xa_load(&vdev->blocks, rep->block);
	if (!ref || ref->stream->vfile != vfile || hw_stream >= VREX_MAX_STREAMS_HW ||
	    !vdev->hw_streams[hw_stream] || vdev->hw_streams[hw_stream]->vfile != vfile)
		return false;

	memset(c, 0, sizeof(*c));
	c->hit_flags = DRM_VREX_HIT |
		       ((rep->resf & VREX_RESF_APPROX) ? DRM_VREX_HIT_APPROX : 0) |
		       ((rep->resf & VREX_RESF_HOST_TIER) ? DRM_VREX_HIT_HOST_TIER : 0);
	c->distance = rep->distance;
	c->block = rep->block;
	c->frame = rep->frame;
	c->stream = vdev->hw_streams[hw_stream]->id;
	obj = drm_gem_object_lookup(file, ref->handle);
	c->handle = obj == ref->obj ? ref->handle : 0;
	if (obj)
		drm_gem_object_put(obj);
	c->offset = ref->offset;
	c->length = ref->length;
	c->found_fp[0] = rep->fp[0];
	c->found_fp[1] = rep->fp[1];
	c->block_gen = ref->block_gen;
	return true;
}

/* The nearest hit into the fields every caller knows (the host-tier bit is the candidates'). */
static void vrex_lookup_fill(struct drm_vrex_shie_lookup_item *it,
			     const struct drm_vrex_shie_candidate *c)
{
	it->hit_flags = c->hit_flags & (DRM_VREX_HIT | DRM_VREX_HIT_APPROX);
	it->distance = c->distance;
	it->block = c->block;
	it->frame = c->frame;
	it->stream = c->stream;
	it->handle = c->handle;
	it->offset = c->offset;
	it->length = c->length;
	it->found_fp[0] = c->found_fp[0];
	it->found_fp[1] = c->found_fp[1];
	it->block_gen = c->block_gen;
}

/*
 * Answer @j (nearest first) of a similarity lookup: the nearest fills the
 * item's own fields, and with max_candidates every answer that is the
 * caller's is appended to the candidates.
 */
static void vrex_lookup_take(struct vrex_device *vdev, struct drm_file *file,
			     const struct vrex_lookup_report *rep, u32 j,
			     struct drm_vrex_shie_lookup_item *it)
{
	struct drm_vrex_shie_candidate c;

	if (!vrex_lookup_resolve(vdev, file, rep, &c))
		return;
	if (!j)
		vrex_lookup_fill(it, &c);
	if (it->candidate_count < it->max_candidates)
		it->candidates[it->candidate_count++] = c;
}

static void vrex_lookup_clear(struct drm_vrex_shie_lookup_item *it)
{
	it->hit_flags = 0;
	it->distance = 0;
	it->block = 0;
	it->frame = 0;
	it->stream = 0;
	it->handle = 0;
	it->offset = 0;
	it->length = 0;
	it->found_fp[0] = 0;
	it->found_fp[1] = 0;
	it->block_gen = 0;
	it->candidate_count = 0;
	memset(it->candidates, 0, sizeof(it->candidates));
}

static u32 vrex_lookup_argf(const struct drm_vrex_shie_lookup_item *it)
{
	return ((it->flags & DRM_VREX_LOOKUP_SCOPE_POOL) ? VREX_ARGF_SCOPE_POOL : 0) |
	       ((it->flags & DRM_VREX_LOOKUP_PAST_ONLY) ? VREX_ARGF_PAST_ONLY : 0) |
	       ((it->flags & DRM_VREX_LOOKUP_TIER_DEVICE) ? VREX_ARGF_TIER_DEVICE : 0) |
	       ((it->flags & DRM_VREX_LOOKUP_TIER_HOST) ? VREX_ARGF_TIER_HOST : 0);
}

/* Records per query the device writes for @it: its candidates, or the nearest only. */
static u32 vrex_lookup_records(const struct drm_vrex_shie_lookup_item *it)
{
	return it->kind == DRM_VREX_LOOKUP_SIMILAR && it->max_candidates > 1 ?
	       it->max_candidates : 1;
}

static int vrex_lookup_one(struct vrex_device *vdev, struct drm_file *file,
			   struct vrex_file_stream *stream, struct drm_vrex_shie_lookup_item *it)
{
	struct vrex_lookup_report rep;
	u32 cmd;
	int ret;

	vrex_lookup_clear(it);
	/* The RES_* registers hold one answer: more need the batch's records. */
	if (vrex_lookup_records(it) > 1)
		return -EOPNOTSUPP;
	vrex_write(vdev, VREX_REG_ARG_STREAM, stream->hw);
	vrex_write(vdev, VREX_REG_ARG_REGION, it->region);
	if (it->kind == DRM_VREX_LOOKUP_TEMPORAL) {
		vrex_write(vdev, VREX_REG_ARG_OFFSET, (u32)it->frame_offset);
		cmd = VREX_CMD_LOOKUP_TEMPORAL;
	} else {
		vrex_write_fp(vdev, VREX_REG_ARG_FP(0), it->fp);
		vrex_write(vdev, VREX_REG_ARG_RADIUS, it->radius);
		vrex_write(vdev, VREX_REG_ARG_FLAGS, vrex_lookup_argf(it));
		cmd = VREX_CMD_LOOKUP_SIMILAR;
	}
	ret = vrex_cmd(vdev, cmd);
	/*
	 * The arguments were validated, so the device refusing the lookup means
	 * the stream has no frame there yet (-EINVAL: none at all, -ERANGE:
	 * before its first frame): nothing can be found, a miss.
	 */
	if (ret == -EINVAL || ret == -ERANGE)
		return 0;
	if (ret)
		return ret;
	rep.resf = vrex_read(vdev, VREX_REG_RES_FLAGS);
	rep.block = vrex_read(vdev, VREX_REG_RES_BLOCK);
	rep.hw_stream = vrex_read(vdev, VREX_REG_RES_STREAM);
	rep.distance = vrex_read(vdev, VREX_REG_RES_DISTANCE);
	rep.frame = vrex_read(vdev, VREX_REG_RES_FRAME);
	vrex_read_fp(vdev, VREX_REG_RES_FP(0), rep.fp);
	vrex_lookup_take(vdev, file, &rep, 0, it);
	return 0;
}

/* The similarity items @idx[0..@n) of @items as single commands. */
static int vrex_lookup_singles(struct vrex_device *vdev, struct drm_file *file,
			       struct vrex_file_stream *stream,
			       struct drm_vrex_shie_lookup_item *items, const u32 *idx, u32 n)
{
	int ret = 0;
	u32 j;

	for (j = 0; j < n && !ret; j++)
		ret = vrex_lookup_one(vdev, file, stream, &items[idx[j]]);
	return ret;
}

/*
 * The similarity items @idx[0..@n) of @items (validated, each with @k
 * records, n * k <= the batch maximum) as one LOOKUP_SIMILAR_BATCH staged in
 * vdev's staging area. Each record is checked exactly as RES_* of a single
 * lookup (vrex_lookup_resolve()): the device's word on a block is never
 * trusted.
 */
static int vrex_lookup_batch(struct vrex_device *vdev, struct drm_file *file,
			     struct vrex_file_stream *stream,
			     struct drm_vrex_shie_lookup_item *items, const u32 *idx, u32 n, u32 k)
{
	u64 src = vdev->stage_addr;
	u64 dst = src + VREX_LOOKUP_BATCH_MAX * sizeof(struct vrex_lookup_desc);
	struct vrex_lookup_report rep;
	struct vrex_lookup_desc d;
	struct vrex_lookup_rec r;
	u32 i, j;
	int ret;

	/* One query gains nothing from staging (unless it wants more than RES_* holds). */
	if ((n == 1 && k == 1) || !vdev->has_stage)
		return vrex_lookup_singles(vdev, file, stream, items, idx, n);

	for (j = 0; j < n; j++) {
		const struct drm_vrex_shie_lookup_item *it = &items[idx[j]];

		d.stream = cpu_to_le32(stream->hw);
		d.region = cpu_to_le32(it->region);
		d.radius = cpu_to_le32(it->radius);
		d.flags = cpu_to_le32(vrex_lookup_argf(it));
		d.fp[0] = cpu_to_le64(it->fp[0]);
		d.fp[1] = cpu_to_le64(it->fp[1]);
		vrex_mem_write(vdev, src + j * sizeof(d), &d, sizeof(d));
	}
	vrex_write(vdev, VREX_REG_ARG_SRC_LO, lower_32_bits(src));
	vrex_write(vdev, VREX_REG_ARG_SRC_HI, upper_32_bits(src));
	vrex_write(vdev, VREX_REG_ARG_DST_LO, lower_32_bits(dst));
	vrex_write(vdev, VREX_REG_ARG_DST_HI, upper_32_bits(dst));
	vrex_write(vdev, VREX_REG_ARG_COUNT, n);
	vrex_write(vdev, VREX_REG_ARG_NEAREST, k);
	ret = vrex_cmd(vdev, VREX_CMD_LOOKUP_SIMILAR_BATCH);
	/*
	 * Refused whole (it wrote nothing and changed nothing): each item then
	 * gets what a single lookup gets, a refusal being a miss there; a
	 * query for candidates has no single form.
	 */
	if ((ret == -EINVAL || ret == -ERANGE) && k == 1)
		return vrex_lookup_singles(vdev, file, stream, items, idx, n);
	if (ret)
		return ret;

	for (j = 0; j < n; j++) {
		struct drm_vrex_shie_lookup_item *it = &items[idx[j]];

		vrex_lookup_clear(it);
		for (i = 0; i < k; i++) {
			vrex_mem_read(vdev, dst + (j * k + i) * sizeof(r), &r, sizeof(r));
			/* A query the device refused (PAST_ONLY before the first frame): a miss. */
			if (r.status)
				break;
			rep.resf = le32_to_cpu(r.flags);
			rep.block = le32_to_cpu(r.block);
			rep.hw_stream = le32_to_cpu(r.stream);
			rep.distance = le32_to_cpu(r.distance);
			rep.frame = le32_to_cpu(r.frame);
			rep.fp[0] = le64_to_cpu(r.fp[0]);
			rep.fp[1] = le64_to_cpu(r.fp[1]);
			vrex_lookup_take(vdev, file, &rep, i, it);
		}
	}
	return 0;
}

/*
 * Temporal items run one by one as they come; similarity items are grouped
 * by their records per query, up to VREX_LOOKUP_BATCH_MAX records per
 * command. Lookups only age blocks (to the owner's current frame, the same
 * for every order) and count, so the grouping gives every item what an
 * in-order run would.
 */
static int vrex_lookup_apply(struct vrex_device *vdev, struct drm_file *file,
			     struct vrex_file_stream *stream,
			     struct drm_vrex_shie_lookup_item *items, u32 count)
{
	u32 idx[VREX_LOOKUP_BATCH_MAX];
	u32 i, k = 1, n = 0;
	int ret = 0;

	BUILD_BUG_ON(DRM_VREX_LOOKUP_MAX_CANDIDATES > VREX_LOOKUP_NEAREST_MAX);
	/* A 1.0 device ignores the tier flags and ARG_NEAREST: it cannot answer these. */
	for (i = 0; i < count && vdev->hw_version < VREX_VERSION_NEAREST; i++)
		if ((items[i].flags & (DRM_VREX_LOOKUP_TIER_DEVICE | DRM_VREX_LOOKUP_TIER_HOST)) ||
		    vrex_lookup_records(&items[i]) > 1)
			return -EOPNOTSUPP;
	for (i = 0; i < count && !ret; i++) {
		cond_resched();
		if (items[i].kind == DRM_VREX_LOOKUP_TEMPORAL) {
			ret = vrex_lookup_one(vdev, file, stream, &items[i]);
			continue;
		}
		if (n && vrex_lookup_records(&items[i]) != k) {
			ret = vrex_lookup_batch(vdev, file, stream, items, idx, n, k);
			n = 0;
			if (ret)
				break;
		}
		k = vrex_lookup_records(&items[i]);
		idx[n++] = i;
		if ((n + 1) * k > VREX_LOOKUP_BATCH_MAX) {
			ret = vrex_lookup_batch(vdev, file, stream, items, idx, n, k);
			n = 0;
		}
	}
	if (!ret && n)
		ret = vrex_lookup_batch(vdev, file, stream, items, idx, n, k);
	return ret;
}

int vrex_ioctl_shie_lookup(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	struct drm_vrex_shie_batch *args = data;
	struct drm_vrex_shie_lookup_item *items;
	struct vrex_file_stream *stream;
	int ret, idx;
	u32 i;

	items = vrex_batch_copy_in(args, sizeof(*items));
	if (IS_ERR(items))
		return PTR_ERR(items);
	for (i = 0; i < args->count; i++) {
		ret = vrex_check_lookup_item(&items[i]);
		if (ret)
			goto out_items;
	}
	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto out_items;
	}

	ret = vrex_lock_interruptible(vdev);
	if (!ret) {
		stream = vrex_stream_find(to_vrex_file(file), args->stream);
		if (stream)
			ret = vrex_lookup_apply(vdev, file, stream, items, args->count);
		else
			ret = -ENOENT;
		mutex_unlock(&vdev->lock);
	}
	drm_dev_exit(idx);

	if (!ret)
		ret = vrex_batch_copy_out(args->items, args->elem_size, items, args->count,
					  sizeof(*items));
out_items:
	kvfree(items);
	return ret;
}

/* ---- retire ------------------------------------------------------------ */

/* Every id names a live block of @stream, and none twice. */
static int vrex_retire_validate(struct vrex_device *vdev, struct vrex_file_stream *stream,
				const u32 *ids, u32 n)
{
	struct vrex_block_ref *ref;
	u32 *scratch;
	int ret;
	u32 i;

	for (i = 0; i < n; i++) {
		ref = xa_load(&vdev->blocks, ids[i]);
		if (!ref || ref->stream != stream)
			return -ENOENT;
	}
	if (n < 2)
		return 0;
	scratch = kvmalloc_array(n, sizeof(*ids), GFP_KERNEL);
	if (!scratch)
		return -ENOMEM;
	ret = vrex_check_unique_ids(ids, n, scratch);
	kvfree(scratch);
	return ret;
}

static int vrex_retire_apply(struct vrex_device *vdev, struct vrex_file_stream *stream,
			     const u32 *ids, u32 n, struct vrex_release_sink *sink)
{
	int ret = 0;
	u32 i;

	vrex_sink_take_pending(sink);
	for (i = 0; i < n && !ret; i++) {
		vrex_write(vdev, VREX_REG_ARG_BLOCK, ids[i]);
		ret = vrex_cmd(vdev, VREX_CMD_REMOVE);
		if (ret)
			break;
		vrex_block_released(vdev, ids[i], DRM_VREX_RELEASE_REMOVED, sink);
		cond_resched();
	}
	if (!ret) {
		vrex_write(vdev, VREX_REG_ARG_STREAM, stream->hw);
		ret = vrex_cmd(vdev, VREX_CMD_RETIRE);
	}
	vrex_blocks_drain_into(vdev, sink);
	return ret;
}

static void vrex_sink_free(struct vrex_release_sink *sink)
{
	struct vrex_block_ref *ref, *tmp;

	list_for_each_entry_safe(ref, tmp, &sink->refs, pending) {
		list_del(&ref->pending);
		kfree(ref);
	}
	sink->count = 0;
}

/*
 * The records could not be delivered: they go back to the front of their
 * stream's list, for its next RETIRE, unless the stream was destroyed
 * meanwhile (its serial tells a new stream that got the same id apart).
 */
static void vrex_sink_requeue(struct vrex_device *vdev, struct vrex_file *vfile, u32 id,
			      u64 serial, struct vrex_release_sink *sink)
{
	struct vrex_file_stream *stream;

	mutex_lock(&vdev->lock);
	stream = vrex_stream_find(vfile, id);
	if (stream && stream->serial == serial) {
		list_splice_init(&sink->refs, &stream->released);
		stream->nreleased += sink->count;
		sink->count = 0;
	}
	mutex_unlock(&vdev->lock);
	vrex_sink_free(sink);
}

/*
 * One record per collected ref. The handle is reported only while it still
 * names the very BO (same generation): a closed handle may have been handed
 * to another BO since.
 */
static int vrex_sink_copy_out(struct drm_file *file, const struct drm_vrex_shie_retire *args,
			      struct vrex_release_sink *sink)
{
	struct drm_vrex_released_block *recs, *r;
	struct drm_gem_object *obj;
	struct vrex_block_ref *ref;
	int ret;

	recs = kvcalloc(sink->count, sizeof(*recs), GFP_KERNEL);
	if (!recs)
		return -ENOMEM;
	r = recs;
	list_for_each_entry(ref, &sink->refs, pending) {
		r->block = ref->block;
		obj = drm_gem_object_lookup(file, ref->handle);
		r->handle = obj && vrex_bo_gen(obj) == ref->bo_gen ? ref->handle : 0;
		if (obj)
			drm_gem_object_put(obj);
		r->offset = ref->offset;
		r->length = ref->length;
		r->reason = ref->reason;
		r->bo_gen = ref->bo_gen;
		r->block_gen = ref->block_gen;
		r++;
	}
	ret = vrex_batch_copy_out(args->released, args->elem_size, recs, sink->count,
				  sizeof(*recs));
	kvfree(recs);
	return ret;
}

int vrex_ioctl_shie_retire(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	struct vrex_file *vfile = to_vrex_file(file);
	struct drm_vrex_shie_retire *args = data;
	struct vrex_release_sink sink = { };
	struct vrex_file_stream *stream;
	u32 *ids = NULL, need;
	u64 serial = 0;
	int ret, idx;

	INIT_LIST_HEAD(&sink.refs);
	ret = vrex_check_retire(args);
	if (ret)
		return ret;
	if (args->remove_count) {
		ids = vmemdup_user(u64_to_user_ptr(args->remove),
				   array_size(args->remove_count, sizeof(*ids)));
		if (IS_ERR(ids))
			return PTR_ERR(ids);
	}
	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto out_ids;
	}

	ret = vrex_lock_interruptible(vdev);
	if (ret) {
		drm_dev_exit(idx);
		goto out_ids;
	}
	stream = vrex_stream_find(vfile, args->stream);
	if (!stream) {
		ret = -ENOENT;
		goto out_unlock;
	}
	ret = vrex_retire_validate(vdev, stream, ids, args->remove_count);
	if (ret)
		goto out_unlock;
	/* Every live block could be released now, plus the records already waiting. */
	need = stream->nblocks + stream->nreleased;
	if (args->released_cap < need) {
		args->released_cap = need;
		ret = -ENOSPC;
		goto out_unlock;
	}
	if (need && !args->released) {
		ret = -EINVAL;
		goto out_unlock;
	}
	sink.stream = stream;
	serial = stream->serial;
	ret = vrex_retire_apply(vdev, stream, ids, args->remove_count, &sink);
out_unlock:
	mutex_unlock(&vdev->lock);
	drm_dev_exit(idx);

	/* Blocks released before a failure are gone either way: report them. */
	if (sink.stream)
		args->released_cap = sink.count;
	if (sink.count) {
		int err = vrex_sink_copy_out(file, args, &sink);

		if (err) {
			/* Not delivered: kept for the next RETIRE, and none reported now. */
			args->released_cap = 0;
			vrex_sink_requeue(vdev, vfile, args->stream, serial, &sink);
		}
		if (!ret)
			ret = err;
	}
	vrex_sink_free(&sink);
out_ids:
	kvfree(ids);
	return ret;
}
