/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * Pure checks of ioctl arguments: every rule of uapi/drm/vrex_accel.h that
 * can be decided from the user's numbers alone, without looking up a handle,
 * stream or block. Shared by vrex.ko and user space (libFuzzer target
 * tests/fuzz/fuzz_uapi_check.c), so only fixed-width uAPI types are used and
 * every function returns 0 or a negative errno.
 */
#ifndef VREX_UAPI_CHECK_H
#define VREX_UAPI_CHECK_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/types.h>
#else
#include <errno.h>
#include <stddef.h>
#endif
#include <drm/vrex_accel.h>

/* What the checks need to know about the device. */
struct vrex_check_limits {
	__u32 nbanks;		/* 1..DRM_VREX_MAX_BANKS */
	__u64 bank_size;	/* bytes */
	__u32 fcc_min_dim;
	__u32 fcc_max_dim;
	__u32 pooled;		/* 1: the device has pooled streams */
};

/* Range [@offset, @offset + @length) lies in an object of @size bytes; no overflow. */
int vrex_check_range(__u64 offset, __u64 length, __u64 size);

int vrex_check_bo_create(const struct drm_vrex_bo_create *args,
			 const struct vrex_check_limits *lim);
int vrex_check_stream_create(const struct drm_vrex_stream_create *args,
			     const struct vrex_check_limits *lim);

/* Everything of FRAME_SUBMIT but the BO; @plane_bytes out: bytes the plane spans. */
int vrex_check_frame(const struct drm_vrex_frame_submit *args,
		     const struct vrex_check_limits *lim, __u64 *plane_bytes);

/*
 * SHIE_INSERT / SHIE_LOOKUP batch header, for items that are @item_size bytes
 * today. Any non-zero elem_size passes: smaller elements are zero-extended and
 * larger ones must have a zero tail (-E2BIG), checked while copying them.
 */
int vrex_check_batch(const struct drm_vrex_shie_batch *args, __u32 item_size);

/*
 * One insert item without its BO: flags, region, frame offset, the ALIAS
 * rules and the length; the range is checked against the BO by the caller
 * with vrex_check_range().
 */
int vrex_check_insert_item(const struct drm_vrex_shie_insert_item *it);
int vrex_check_lookup_item(const struct drm_vrex_shie_lookup_item *it);

/* SHIE_RETIRE header (the ids are checked against the stream's blocks by the caller). */
int vrex_check_retire(const struct drm_vrex_shie_retire *args);

/* ReSV: RESV_HEAD_CREATE (flags and parameters). */
int vrex_check_resv_head_create(const struct drm_vrex_resv_head_create *args);

/* RESV_HASH without the head and the BO: flags, count, alignment. */
int vrex_check_resv_hash(const struct drm_vrex_resv_hash *args);

/* RESV_SELECT batch header, like vrex_check_batch(). */
int vrex_check_resv_batch(const struct drm_vrex_resv_batch *args, __u32 item_size);

/* One selection without its head and BOs: flags, padding, alignment. */
int vrex_check_resv_select_item(const struct drm_vrex_resv_select_item *it);

/* Every id in @ids[0..@n) is distinct; @scratch holds @n ids and is clobbered. */
int vrex_check_unique_ids(const __u32 *ids, __u32 n, __u32 *scratch);

#endif /* VREX_UAPI_CHECK_H */
