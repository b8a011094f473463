/* SPDX-License-Identifier: MIT */
/*
 * Random SHIE operation sequences on a small table, checked step by step against the brute-force
 * reference: every similarity and range lookup of the multi-index hash must equal the linear scan
 * (ids and distances), the temporal index must agree with a shadow array, and the live count must
 * match. Fingerprints are drawn near a few centres so that buckets collide and radii matter.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "shie_table.h"

#define CAP 48
#define MAXR 64

static u8 *arena;

struct shadow {
	int live;
	u16 stream;
	u8 region;
	u32 frame;
};

static struct vrex_fp draw_fp(struct fuzz_input *in, const struct vrex_fp *centres)
{
	struct vrex_fp fp = centres[fuzz_take(in, 1) % 4];
	u32 flips = (u32)fuzz_take(in, 1) % 40;

	for (u32 i = 0; i < flips; i++) {
		u32 bit = (u32)fuzz_take(in, 1) % 128;

		fp.w[bit / 64] ^= 1ull << (bit % 64);
	}
	return fp;
}

static int cmp_u32(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { data, size, 0 };
	static struct vrex_shie_table t;
	static struct shadow sh[CAP];
	struct vrex_fp centres[4];
	size_t need = vrex_shie_arena_size(CAP);
	u32 live = 0;

	if (!arena)
		arena = malloc(need);
	if (!need || !arena || vrex_shie_init(&t, CAP, arena, need))
		abort();
	memset(sh, 0, sizeof(sh));
	for (int i = 0; i < 4; i++) {
		centres[i].w[0] = fuzz_take(&in, 8);
		centres[i].w[1] = fuzz_take(&in, 8);
	}

	for (int step = 0; step < 400 && !fuzz_done(&in); step++) {
		u32 op = (u32)fuzz_take(&in, 1) % 4;

		if (op == 0) { /* insert */
			struct vrex_fp fp = draw_fp(&in, centres);
			u16 stream = (u16)(fuzz_take(&in, 1) % 3);
			u8 region = (u8)(fuzz_take(&in, 1) % 18); /* 16, 17 invalid */
			u32 frame = (u32)fuzz_take(&in, 1) % 8;
			u32 id = VREX_NIL;
			int dup = 0, rc;

			for (u32 i = 0; i < CAP; i++)
				dup |= sh[i].live && sh[i].stream == stream && sh[i].region == region &&
				       sh[i].frame == frame;
			rc = vrex_shie_insert(&t, &fp, stream, stream, region, frame, 7, &id);
			if (region >= VREX_SHIE_REGIONS) {
				if (rc != VREX_EINVAL)
					abort();
			} else if (dup) {
				if (rc != VREX_EEXIST)
					abort();
			} else if (live == CAP) {
				if (rc != VREX_ENOSPC)
					abort();
			} else {
				if (rc || id >= CAP || sh[id].live)
					abort();
				sh[id] = (struct shadow){ 1, stream, region, frame };
				live++;
			}
		} else if (op == 1) { /* remove */
			u32 id = (u32)fuzz_take(&in, 1) % (CAP + 2);
			int rc = vrex_shie_remove(&t, id);

			if (id < CAP && sh[id].live) {
				if (rc)
					abort();
				sh[id].live = 0;
				live--;
			} else if (rc != VREX_ENOENT) {
				abort();
			}
		} else if (op == 2) { /* similarity + range vs brute force */
			struct vrex_shie_query q;
			u32 d1 = 0, d2 = 0, a, b, na, nb;
			u32 ra[MAXR], rb[MAXR];

			memset(&q, 0, sizeof(q));
			q.fp = draw_fp(&in, centres);
			q.stream = (u16)(fuzz_take(&in, 1) % 3);
			q.pool = q.stream;
			q.region = (u8)(fuzz_take(&in, 1) % 16);
			q.scope = (u8)(fuzz_take(&in, 1) % 2);
			q.radius = (u32)fuzz_take(&in, 1) % 34; /* 32, 33 invalid */
			q.frame_limit = fuzz_take(&in, 1) & 1 ? VREX_NIL : (u32)fuzz_take(&in, 1) % 8;
			a = vrex_shie_find_similar(&t, &q, &d1);
			b = vrex_shie_find_similar_bruteforce(&t, &q, &d2);
			if (a != b || (a != VREX_NIL && d1 != d2))
				abort();
			na = vrex_shie_find_range(&t, &q, ra, MAXR);
			nb = vrex_shie_find_range_bruteforce(&t, &q, rb, MAXR);
			if (na != nb || na > CAP)
				abort();
			qsort(ra, na, sizeof(u32), cmp_u32);
			qsort(rb, nb, sizeof(u32), cmp_u32);
			if (memcmp(ra, rb, na * sizeof(u32)))
				abort();
		} else { /* temporal vs shadow */
			u16 stream = (u16)(fuzz_take(&in, 1) % 3);
			u8 region = (u8)(fuzz_take(&in, 1) % 16);
			u32 frame = (u32)fuzz_take(&in, 1) % 8;
			u32 id = vrex_shie_find_temporal(&t, stream, region, frame), want = VREX_NIL;

			for (u32 i = 0; i < CAP; i++)
				if (sh[i].live && sh[i].stream == stream && sh[i].region == region &&
				    sh[i].frame == frame)
					want = i;
			if (id != want)
				abort();
		}
		if (t.live != live)
			abort();
	}
	return 0;
}
