/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * The SHIE's dense scans: the reference scan over the entries and the
 * fallback scan over the packed fingerprints (with its AVX-512 clone).
 * Included by shie_search.c only: the probe loop's popcnt clone (flatten)
 * must compile the fallback it ends in with the same target flags, which
 * it can only do for code in its own translation unit.
 */
#ifndef VREX_SHIE_SCAN_H
#define VREX_SHIE_SCAN_H

#include "shie_internal.h"

static void shie_scan_all(struct shie_search *sr, int hw)
{
	const struct vrex_shie_table *t = sr->t;
	u32 i;

	/* The reference: every entry, not just those below the high-water mark. */
	for (i = 0; i < t->capacity; i++) {
		const struct vrex_shie_entry *e = &t->e[i];
		u32 d;

		if (!e->valid)
			continue;
		d = shie_distance(&e->fp, &sr->q->fp, hw);
		if (d > sr->limit || !shie_entry_matches(e, sr->q))
			continue;
		if (sr->range)
			shie_take_range(sr, i);
		else
			shie_take_nearest(sr, i, d, e->frame);
	}
}

#define SHIE_SCAN_BATCH 64	/* candidate ids collected before the filters run */

/*
 * Distances of @n (<= SHIE_SCAN_BATCH) dense fingerprints from the query,
 * then the indices (from @base) of those within @limit appended to @cand
 * without a branch (the index is always written, the count advances by the
 * comparison): on clustered tables half the entries match, so a branch per
 * entry would mispredict half the time. The distance loop (with the batch's
 * minimum) vectorises; the append loop runs only when the minimum is within
 * the limit.
 */
static inline u32 shie_collect_body(const struct vrex_fp *p, u32 n, u32 base, u64 q0, u64 q1,
				    u32 limit, u32 *cand, int hw)
{
	u32 d[SHIE_SCAN_BATCH];
	u32 j, c = 0, low = VREX_NIL;

	for (j = 0; j < n; j++) {
		d[j] = shie_popcount_hw(p[j].w[0] ^ q0, hw) + shie_popcount_hw(p[j].w[1] ^ q1, hw);
		low = d[j] < low ? d[j] : low;
	}
	/* Most batches hold no candidate (uniform codes; any once a near hit set the limit). */
	if (low > limit)
		return 0;
	for (j = 0; j < n; j++) {
		cand[c] = base + j;
		c += d[j] <= limit;
	}
	return c;
}

#ifdef SHIE_VECTOR_DISPATCH
/* Never inlined into a caller without these target flags (GCC refuses to; so does flatten). */
__attribute__((target("popcnt,avx512f,avx512vl,avx512bw,avx512vpopcntdq"))) static u32
shie_collect_vector(const struct vrex_fp *p, u32 n, u32 base, u64 q0, u64 q1, u32 limit, u32 *cand)
{
	return shie_collect_body(p, n, base, q0, q1, limit, cand, 1);
}

static int shie_have_vector(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("avx512f") &&
	       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512vpopcntdq");
}

#endif

/*
 * The fallback scan: distances over the dense fingerprint array in batches,
 * then the entry filters and the output on each batch's candidates only.
 * @vec: the vector clone collects the candidates.
 */
static void shie_scan_dense(struct shie_search *sr, int hw, int vec)
{
	const struct vrex_shie_table *t = sr->t;
	const struct vrex_fp *fps = shie_fps(t);
	const u64 q0 = sr->q->fp.w[0], q1 = sr->q->fp.w[1];
	u32 cand[SHIE_SCAN_BATCH];
	u32 i, j, n, m;

	for (i = 0; i < t->top; i += m) {
		m = t->top - i > SHIE_SCAN_BATCH ? SHIE_SCAN_BATCH : t->top - i;
#ifdef SHIE_VECTOR_DISPATCH
		if (vec)
			n = shie_collect_vector(fps + i, m, i, q0, q1, sr->limit, cand);
		else
#endif
			n = shie_collect_body(fps + i, m, i, q0, q1, sr->limit, cand, hw);
		for (j = 0; j < n; j++) {
			const struct vrex_shie_entry *e = &t->e[cand[j]];
			u32 d;

			if (!shie_entry_matches(e, sr->q))
				continue;
			if (sr->range) {
				shie_take_range(sr, cand[j]);
				continue;
			}
			d = shie_distance(&e->fp, &sr->q->fp, hw);
			shie_take_nearest(sr, cand[j], d, e->frame);
		}
	}
	(void)vec;
}

/*
 * Crowded buckets (near-duplicate codes, e.g. a static camera) can make the
 * probes read more records than the table holds entries: each entry sits in
 * 8 buckets. And on sparse tables a lookup can probe hundreds of (mostly
 * empty) buckets. Once the buckets planned so far cost more than
 * fallback_pct percent of a linear scan (records read, plus probe_cost per
 * probe), the search finishes as one linear scan; the result is the same. A
 * range search restarts; a nearest search keeps the best entry found so far
 * and scans with its distance as the limit (an entry seen twice compares
 * equal to itself and changes nothing).
 */
static void shie_fall_back(struct shie_search *sr, int hw, int vec)
{
	if (sr->range)
		sr->count = 0;
	if (sr->share > 1) {
		sr->deferred = 1;
		return;
	}
	shie_scan_dense(sr, hw, vec);
}

#endif /* VREX_SHIE_SCAN_H */
