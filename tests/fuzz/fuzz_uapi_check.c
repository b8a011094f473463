/* SPDX-License-Identifier: MIT */
/*
 * The kernel's pure ioctl argument checks (kernel/vrex_uapi_check.c, compiled
 * here unchanged) against an oracle written from uapi/drm/vrex_accel.h and
 * docs/uapi.md in 128-bit arithmetic: for every struct the fuzzer builds, the
 * verdict (0 or which errno) must match the oracle, accepted ranges must lie
 * inside the object, and the duplicate-id check must agree with a quadratic
 * scan. The first input byte picks the check; the rest fills the struct.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "vrex_uapi_check.h"

typedef unsigned __int128 u128;

#define EXPECT(cond)                  \
	do {                          \
		if (!(cond))          \
			abort();      \
	} while (0)

static void take_bytes(struct fuzz_input *in, void *dst, size_t n)
{
	unsigned char *d = dst;
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = (unsigned char)fuzz_take(in, 1);
}

static struct vrex_check_limits take_limits(struct fuzz_input *in)
{
	struct vrex_check_limits lim;

	lim.nbanks = (uint32_t)fuzz_take(in, 1) % (DRM_VREX_MAX_BANKS + 2);
	lim.bank_size = fuzz_take(in, 1) & 1 ? fuzz_take(in, 8) : 4096ull << (fuzz_take(in, 1) % 20);
	lim.fcc_min_dim = 64;
	lim.fcc_max_dim = 8192;
	lim.pooled = (uint32_t)fuzz_take(in, 1) & 1;
	return lim;
}

static int oracle_range(uint64_t off, uint64_t len, uint64_t size)
{
	return len && (u128)off + len <= size ? 0 : -EINVAL;
}

static void check_range(struct fuzz_input *in)
{
	uint64_t off = fuzz_take(in, 8), len = fuzz_take(in, 8), size = fuzz_take(in, 8);
	int r = vrex_check_range(off, len, size);

	EXPECT(r == oracle_range(off, len, size));
}

static void check_bo(struct fuzz_input *in)
{
	struct vrex_check_limits lim = take_limits(in);
	struct drm_vrex_bo_create a;
	int want = 0;
	u128 all;

	take_bytes(in, &a, sizeof(a));
	all = ((u128)1 << lim.nbanks) - 1;
	if (!lim.nbanks || lim.nbanks > DRM_VREX_MAX_BANKS)
		want = -EINVAL;
	else if (a.pad || (a.flags & ~(DRM_VREX_BO_KV | DRM_VREX_BO_STAGING)))
		want = -EINVAL;
	else if (a.size == 0 || a.size > lim.bank_size)
		want = -EINVAL;
	else if (a.bank_mask == 0 || ((u128)a.bank_mask & ~all))
		want = -EINVAL;
	EXPECT(vrex_check_bo_create(&a, &lim) == want);
}

static void check_stream(struct fuzz_input *in)
{
	struct vrex_check_limits lim = take_limits(in);
	struct drm_vrex_stream_create a;
	int want = 0;

	take_bytes(in, &a, sizeof(a));
	if (a.pad || a.flags > 1)
		want = -EINVAL;
	else if (a.flags == 0 && a.pool)
		want = -EINVAL;
	else if (a.flags == 1 && !lim.pooled)
		want = -EOPNOTSUPP;
	EXPECT(vrex_check_stream_create(&a, &lim) == want);
}

static void check_frame(struct fuzz_input *in)
{
	struct vrex_check_limits lim = take_limits(in);
	struct drm_vrex_frame_submit a;
	__u64 plane = 0;
	int want = 0, r;
	size_t i;

	take_bytes(in, &a, sizeof(a));
	/* Mostly plausible dimensions, so the plane arithmetic is reached. */
	if (fuzz_take(in, 1) & 1) {
		a.width = 64 + a.width % 8200;
		a.height = 64 + a.height % 8200;
		a.stride = a.width + a.stride % 64;
		a.pad = 0;
		a.flags &= 1;
	}
	if (a.pad || a.flags > 1)
		want = -EINVAL;
	else if (a.width < 64 || a.width > 8192 || a.height < 64 || a.height > 8192 ||
		 a.stride < a.width)
		want = -EINVAL;
	r = vrex_check_frame(&a, &lim, &plane);
	EXPECT(r == want);
	if (!r) {
		EXPECT((u128)plane == (u128)(a.height - 1) * a.stride + a.width);
		EXPECT(plane >= a.width);
	}
	/* region_motion (1.5) is output only: what the caller passes in never changes the verdict. */
	for (i = 0; i < sizeof(a.region_motion); i++)
		a.region_motion[i] = (__u8)~a.region_motion[i];
	EXPECT(vrex_check_frame(&a, &lim, &plane) == want);
}

static void check_batch(struct fuzz_input *in)
{
	struct drm_vrex_shie_batch a;
	uint32_t isz = fuzz_take(in, 1) & 1 ? sizeof(struct drm_vrex_shie_insert_item) :
					      sizeof(struct drm_vrex_shie_lookup_item);
	int want = 0;

	take_bytes(in, &a, sizeof(a));
	if (fuzz_take(in, 1) & 1) {
		a.count %= DRM_VREX_MAX_BATCH + 2;
		a.flags = 0;
	}
	if (a.flags || a.count == 0 || a.count > 4096 || a.elem_size == 0)
		want = -EINVAL;
	else if (a.elem_size > DRM_VREX_MAX_ELEM_SIZE)
		want = -E2BIG;
	EXPECT(vrex_check_batch(&a, isz) == want);
}

static void check_insert(struct fuzz_input *in)
{
	struct drm_vrex_shie_insert_item it;
	int want = 0, r;
	bool alias, host;

	take_bytes(in, &it, sizeof(it));
	if (fuzz_take(in, 1) & 1) {
		it.flags &= DRM_VREX_INSERT_ALIAS | DRM_VREX_INSERT_HOST_TIER;
		it.region %= 17;
		it.frame_offset = (int32_t)(it.frame_offset % 8) - 4;
		if (it.flags & DRM_VREX_INSERT_ALIAS)
			it.handle = it.offset = it.length = 0;
		else
			it.block_gen = 0;
	}
	alias = it.flags & DRM_VREX_INSERT_ALIAS;
	host = it.flags & DRM_VREX_INSERT_HOST_TIER;
	if ((it.flags & ~(DRM_VREX_INSERT_ALIAS | DRM_VREX_INSERT_HOST_TIER)) || it.region > 15)
		want = -EINVAL;
	/* uAPI 1.4: a host-tier entry may name any past frame, never a future one */
	else if (host ? it.frame_offset > 0 : it.frame_offset < -3 || it.frame_offset > 2)
		want = -EINVAL;
	else if (host && alias)
		want = -EINVAL;
	else if (alias && (it.handle || it.offset || it.length))
		want = -EINVAL;
	else if (!alias && it.block_gen)	/* uAPI 1.3: only an alias names a generation */
		want = -EINVAL;
	else if (!alias && (it.length == 0 || it.length > 0xffffffffull ||
			    (u128)it.offset + it.length > (u128)UINT64_MAX))
		want = -EINVAL;
	r = vrex_check_insert_item(&it);
	EXPECT(r == want);
	/* What the driver then does with an accepted item must not wrap. */
	if (!r && !alias) {
		uint64_t bo_size = fuzz_take(in, 8);

		EXPECT(vrex_check_range(it.offset, it.length, bo_size) ==
		       oracle_range(it.offset, it.length, bo_size));
	}
}

static void check_lookup(struct fuzz_input *in)
{
	struct drm_vrex_shie_lookup_item it;
	int want = 0;

	take_bytes(in, &it, sizeof(it));
	if (fuzz_take(in, 1) & 1) {
		it.kind &= 1;
		it.pad = 0;
		it.region %= 17;
		if (it.kind == DRM_VREX_LOOKUP_TEMPORAL) {
			it.fp[0] = it.fp[1] = 0;
			it.flags = 0;
			it.radius = 0;
			it.frame_offset = (int32_t)(it.frame_offset % 8) - 4;
			it.max_candidates %= 2;
		} else {
			it.frame_offset = 0;
			it.flags &= 31;
			it.radius %= 40;
			it.max_candidates %= 10;
		}
	}
	/* uAPI 1.6: max_candidates is in, candidate_count and candidates are out (never checked) */
	if (it.pad || it.region > 15)
		want = -EINVAL;
	else if (it.kind == DRM_VREX_LOOKUP_TEMPORAL)
		want = it.fp[0] || it.fp[1] || it.flags || it.radius || it.max_candidates ||
		       it.frame_offset < -3 || it.frame_offset > 2 ? -EINVAL : 0;
	else if (it.kind == DRM_VREX_LOOKUP_SIMILAR)
		/* 1.6: flag bits 2 and 3 choose the tiers; up to 8 candidates */
		want = it.flags > 15 || it.frame_offset || it.radius > 31 || it.max_candidates > 8 ?
		       -EINVAL : 0;
	else
		want = -EINVAL;
	EXPECT(vrex_check_lookup_item(&it) == want);
}

static void check_retire(struct fuzz_input *in)
{
	struct drm_vrex_shie_retire a;
	int want = 0;

	take_bytes(in, &a, sizeof(a));
	if (fuzz_take(in, 1) & 1) {
		a.flags = a.pad = 0;
		a.remove_count %= 4100;
		a.elem_size %= 64;
	}
	if (a.flags || a.pad || a.remove_count > 4096 || a.elem_size == 0)
		want = -EINVAL;
	else if (a.elem_size > DRM_VREX_MAX_ELEM_SIZE)
		want = -E2BIG;
	EXPECT(vrex_check_retire(&a) == want);
}

static void check_ids(struct fuzz_input *in)
{
	uint32_t ids[64], scratch[64], n = (uint32_t)fuzz_take(in, 1) % 65, i, j;
	uint32_t mod = (uint32_t)fuzz_take(in, 1) + 1;
	int dup = 0;

	for (i = 0; i < n; i++)
		ids[i] = (uint32_t)fuzz_take(in, 4) % (mod < 256 ? mod : UINT32_MAX);
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			dup |= ids[i] == ids[j];
	EXPECT(vrex_check_unique_ids(ids, n, scratch) == (dup ? -EINVAL : 0));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { data, size, 0 };

	if (!size)
		return 0;
	switch (fuzz_take(&in, 1) % 9) {
	case 0:
		check_range(&in);
		break;
	case 1:
		check_bo(&in);
		break;
	case 2:
		check_stream(&in);
		break;
	case 3:
		check_frame(&in);
		break;
	case 4:
		check_batch(&in);
		break;
	case 5:
		check_insert(&in);
		break;
	case 6:
		check_lookup(&in);
		break;
	case 7:
		check_retire(&in);
		break;
	default:
		check_ids(&in);
		break;
	}
	return 0;
}
