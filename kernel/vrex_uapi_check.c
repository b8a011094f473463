// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Pure ioctl argument checks (see vrex_uapi_check.h). No kernel object is
 * touched here, so the same file is fuzzed in user space.
 */
#include "vrex_uapi_check.h"

int vrex_check_range(__u64 offset, __u64 length, __u64 size)
{
	/* Written so that nothing can wrap: length <= size first, then the offset. */
	if (!length || length > size || offset > size - length)
		return -EINVAL;
	return 0;
}

int vrex_check_bo_create(const struct drm_vrex_bo_create *args,
			 const struct vrex_check_limits *lim)
{
	__u64 all_banks;

	if (!lim->nbanks || lim->nbanks > DRM_VREX_MAX_BANKS)
		return -EINVAL;
	all_banks = lim->nbanks == 64 ? ~0ull : (1ull << lim->nbanks) - 1;
	if (args->pad || (args->flags & ~DRM_VREX_BO_VALID_FLAGS))
		return -EINVAL;
	if (!args->size || args->size > lim->bank_size)
		return -EINVAL;
	if (!args->bank_mask || (args->bank_mask & ~all_banks))
		return -EINVAL;
	return 0;
}

int vrex_check_stream_create(const struct drm_vrex_stream_create *args,
			     const struct vrex_check_limits *lim)
{
	if (args->pad || (args->flags & ~DRM_VREX_STREAM_VALID_FLAGS))
		return -EINVAL;
	if (!(args->flags & DRM_VREX_STREAM_POOLED) && args->pool)
		return -EINVAL;
	if ((args->flags & DRM_VREX_STREAM_POOLED) && !lim->pooled)
		return -EOPNOTSUPP;
	return 0;
}

int vrex_check_frame(const struct drm_vrex_frame_submit *args,
		     const struct vrex_check_limits *lim, __u64 *plane_bytes)
{
	if (args->pad || (args->flags & ~DRM_VREX_FRAME_VALID_FLAGS))
		return -EINVAL;
	if (args->width < lim->fcc_min_dim || args->width > lim->fcc_max_dim ||
	    args->height < lim->fcc_min_dim || args->height > lim->fcc_max_dim ||
	    args->stride < args->width)
		return -EINVAL;
	/* u32 x u32 + u32 cannot wrap in 64 bits. */
	*plane_bytes = (__u64)(args->height - 1) * args->stride + args->width;
	return 0;
}

int vrex_check_batch(const struct drm_vrex_shie_batch *args, __u32 item_size)
{
	__u32 widest = args->elem_size > item_size ? args->elem_size : item_size;

	if (args->flags || !args->count || args->count > DRM_VREX_MAX_BATCH)
		return -EINVAL;
	/* Smaller elements are zero-extended, larger ones need a zero tail (checked on copy). */
	if (!args->elem_size)
		return -EINVAL;
	if (args->elem_size > DRM_VREX_MAX_ELEM_SIZE)
		return -E2BIG;
	/* Fits in 64 bits (count <= 4096); must also fit the kernel's size_t. */
	if ((__u64)args->count * widest > (__u64)(size_t)-1)
		return -EINVAL;
	return 0;
}

static int vrex_frame_offset_ok(__s32 off)
{
	return off >= DRM_VREX_OFFSET_MIN && off <= DRM_VREX_OFFSET_MAX;
}

int vrex_check_insert_item(const struct drm_vrex_shie_insert_item *it)
{
	__u32 host = it->flags & DRM_VREX_INSERT_HOST_TIER;

	if ((it->flags & ~DRM_VREX_INSERT_VALID_FLAGS) || it->region >= DRM_VREX_REGIONS)
		return -EINVAL;
	/* A host-tier entry goes under the frame that computed the block: any past frame. */
	if (host ? it->frame_offset > 0 : !vrex_frame_offset_ok(it->frame_offset))
		return -EINVAL;
	if (host && (it->flags & DRM_VREX_INSERT_ALIAS))
		return -EINVAL;
	if (it->flags & DRM_VREX_INSERT_ALIAS)
		return it->handle || it->offset || it->length ? -EINVAL : 0;
	/* A new block has no generation yet: only an alias can name one. */
	if (it->block_gen)
		return -EINVAL;
	/* The KV length register is 32 bits wide. */
	if (!it->length || it->length > 0xffffffffull || it->offset > ~0ull - it->length)
		return -EINVAL;
	return 0;
}

int vrex_check_lookup_item(const struct drm_vrex_shie_lookup_item *it)
{
	if (it->pad || it->region >= DRM_VREX_REGIONS)
		return -EINVAL;
	switch (it->kind) {
	case DRM_VREX_LOOKUP_TEMPORAL:
		if (it->fp[0] || it->fp[1] || it->flags || it->radius || it->max_candidates ||
		    !vrex_frame_offset_ok(it->frame_offset))
			return -EINVAL;
		return 0;
	case DRM_VREX_LOOKUP_SIMILAR:
		if ((it->flags & ~DRM_VREX_LOOKUP_VALID_FLAGS) || it->frame_offset ||
		    it->radius > DRM_VREX_MAX_RADIUS ||
		    it->max_candidates > DRM_VREX_LOOKUP_MAX_CANDIDATES)
			return -EINVAL;
		return 0;
	default:
		return -EINVAL;
	}
}

int vrex_check_retire(const struct drm_vrex_shie_retire *args)
{
	if (args->flags || args->pad || args->remove_count > DRM_VREX_MAX_BATCH)
		return -EINVAL;
	/* Records are written min(elem_size, ours) bytes each. */
	if (!args->elem_size)
		return -EINVAL;
	if (args->elem_size > DRM_VREX_MAX_ELEM_SIZE)
		return -E2BIG;
	if ((__u64)args->released_cap * args->elem_size > (__u64)(size_t)-1)
		return -EINVAL;
	return 0;
}

int vrex_check_resv_head_create(const struct drm_vrex_resv_head_create *args)
{
	const struct drm_vrex_resv_params *p = &args->params;

	if (args->flags || p->pad[0] || p->pad[1] || p->pad[2])
		return -EINVAL;
	if (!p->dim || p->dim > DRM_VREX_RESV_MAX_DIM || p->th > DRM_VREX_RESV_MAX_TH ||
	    p->ratio > DRM_VREX_RESV_RATIO_ONE || p->mode > DRM_VREX_RESV_MODE_TOKENS ||
	    !p->tokens_per_block)
		return -EINVAL;
	return 0;
}

int vrex_check_resv_hash(const struct drm_vrex_resv_hash *args)
{
	/* The keys are int16: a 2-aligned device address. */
	if (args->flags || !args->count || args->offset % 2)
		return -EINVAL;
	return 0;
}

int vrex_check_resv_batch(const struct drm_vrex_resv_batch *args, __u32 item_size)
{
	struct drm_vrex_shie_batch b = {
		.count = args->count,
		.elem_size = args->elem_size,
		.flags = args->flags,
	};

	if (args->pad)
		return -EINVAL;
	return vrex_check_batch(&b, item_size);
}

int vrex_check_resv_select_item(const struct drm_vrex_resv_select_item *it)
{
	if ((it->flags & ~DRM_VREX_RESV_SELECT_VALID_FLAGS) || it->pad || it->query_offset % 2)
		return -EINVAL;
	/* Ranges are pairs of u32; no output buffer is looked at without room. */
	if (it->max_ranges && it->out_offset % 4)
		return -EINVAL;
	return 0;
}

int vrex_check_unique_ids(const __u32 *ids, __u32 n, __u32 *scratch)
{
	__u32 gap, i, j, v;

	for (i = 0; i < n; i++)
		scratch[i] = ids[i];
	/* Shell sort: n <= DRM_VREX_MAX_BATCH, no allocation, no recursion. */
	for (gap = n / 2; gap; gap /= 2) {
		for (i = gap; i < n; i++) {
			v = scratch[i];
			for (j = i; j >= gap && scratch[j - gap] > v; j -= gap)
				scratch[j] = scratch[j - gap];
			scratch[j] = v;
		}
	}
	for (i = 1; i < n; i++)
		if (scratch[i] == scratch[i - 1])
			return -EINVAL;
	return 0;
}
