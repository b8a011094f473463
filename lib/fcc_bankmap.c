// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * FCC bank-group mapping (reference model). Algorithm: docs/hw/fcc.md.
 *
 * Banks are split into ngroups = nbanks / group_banks runs of contiguous
 * banks. For each frame, with key = fingerprint XOR salt(pool):
 *   1. the nearest in-use group of the same pool (lowest index on ties) takes
 *      the frame when its representative is closer than VREX_GROUP_RADIUS;
 *   2. otherwise the lowest-numbered free group is opened with key as its
 *      representative;
 *   3. otherwise the pool's least-loaded group (live bytes of its banks, lowest
 *      index on ties) is re-opened for the new scene;
 *   4. otherwise (the pool owns no group) the least-loaded group overall is
 *      taken over from its pool, which is reported as a bank conflict.
 * Every step is a linear scan over at most VREX_MAX_GROUPS entries with fixed
 * tie-breaks, so hardware and model agree bit for bit.
 */
#include "fcc_bankmap.h"

/* splitmix64 finaliser: a bijective mix, so distinct pools get unrelated salts. */
static u64 bankmap_mix64(u64 x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void vrex_pool_key(const struct vrex_fp *fp, u32 pool, struct vrex_fp *key)
{
	key->w[0] = fp->w[0] ^ bankmap_mix64((u64)pool << 1);
	key->w[1] = fp->w[1] ^ bankmap_mix64(((u64)pool << 1) | 1);
}

int vrex_bankmap_init(struct vrex_bankmap *bm, u32 nbanks, u32 group_banks)
{
	if (!bm || !nbanks || nbanks > VREX_MAX_BANKS || !group_banks || nbanks % group_banks)
		return VREX_EINVAL;

	vrex_memset(bm, 0, sizeof(*bm));
	bm->nbanks = nbanks;
	bm->group_banks = group_banks;
	bm->ngroups = nbanks / group_banks;
	return VREX_OK;
}

u64 vrex_bankmap_group_bytes(const struct vrex_bankmap *bm, u32 group)
{
	u64 bytes = 0;
	u32 b;

	if (!bm || group >= bm->ngroups)
		return 0;
	for (b = group * bm->group_banks; b < (group + 1) * bm->group_banks; b++)
		bytes += bm->bank_bytes[b];
	return bytes;
}

/* Least-loaded group, restricted to @pool's in-use groups unless @any_pool. */
static u32 bankmap_least_loaded(const struct vrex_bankmap *bm, u32 pool, int any_pool)
{
	u32 g, best = VREX_NIL;
	u64 best_bytes = 0;

	for (g = 0; g < bm->ngroups; g++) {
		const struct vrex_bank_group *grp = &bm->group[g];
		u64 bytes;

		if (!any_pool && (!grp->in_use || grp->pool != pool))
			continue;
		bytes = vrex_bankmap_group_bytes(bm, g);
		if (best == VREX_NIL || bytes < best_bytes) {
			best = g;
			best_bytes = bytes;
		}
	}
	return best;
}

static u32 bankmap_first_free(const struct vrex_bankmap *bm)
{
	u32 g;

	for (g = 0; g < bm->ngroups; g++)
		if (!bm->group[g].in_use)
			return g;
	return VREX_NIL;
}

/* Nearest in-use group of @pool; *@dist is meaningful only when a group is returned. */
static u32 bankmap_nearest(const struct vrex_bankmap *bm, const struct vrex_fp *key, u32 pool,
			   u32 *dist)
{
	u32 g, best = VREX_NIL, best_dist = VREX_FP_BITS + 1;

	for (g = 0; g < bm->ngroups; g++) {
		const struct vrex_bank_group *grp = &bm->group[g];
		u32 d;

		if (!grp->in_use || grp->pool != pool)
			continue;
		d = vrex_fp_distance(key, &grp->rep);
		if (d < best_dist) {
			best = g;
			best_dist = d;
		}
	}
	*dist = best_dist;
	return best;
}

static void bankmap_open(struct vrex_bankmap *bm, u32 g, const struct vrex_fp *key, u32 pool)
{
	struct vrex_bank_group *grp = &bm->group[g];

	grp->rep = *key;
	grp->pool = pool;
	grp->in_use = 1;
	grp->frames = 0;
}

void vrex_bankmap_assign(struct vrex_bankmap *bm, const struct vrex_fp *fp, u32 pool,
			 struct vrex_bank_assign *out)
{
	struct vrex_fp key;
	u32 g, dist;

	vrex_memset(out, 0, sizeof(*out));
	out->group = VREX_NIL;
	if (!bm->ngroups || bm->ngroups > VREX_MAX_GROUPS)
		return;

	vrex_pool_key(fp, pool, &key);

	g = bankmap_nearest(bm, &key, pool, &dist);
	if (g != VREX_NIL && dist < VREX_GROUP_RADIUS) {
		out->distance = dist;
		goto placed;
	}

	g = bankmap_first_free(bm);
	if (g == VREX_NIL)
		g = bankmap_least_loaded(bm, pool, 0);
	if (g == VREX_NIL) {
		g = bankmap_least_loaded(bm, pool, 1);
		out->conflict = 1;
	}
	bankmap_open(bm, g, &key, pool);
	out->opened = 1;

placed:
	bm->group[g].frames++;
	out->group = g;
	out->bank_first = g * bm->group_banks;
	out->bank_count = bm->group_banks;
}

void vrex_bankmap_release_pool(struct vrex_bankmap *bm, u32 pool)
{
	u32 g;

	for (g = 0; g < bm->ngroups && g < VREX_MAX_GROUPS; g++)
		if (bm->group[g].in_use && bm->group[g].pool == pool)
			vrex_memset(&bm->group[g], 0, sizeof(bm->group[g]));
}
