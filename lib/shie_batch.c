// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * Batched SHIE nearest lookups: each query searches alone until its probes
 * exceed the (shared) budget, then the deferred ones are scanned together,
 * up to VREX_SHIE_SCAN_GROUP at a time, by the register-blocked group scan
 * kernel (shie_group_scan.c).
 */
#include "shie_internal.h"
#include "shie_group_scan.h"

/*
 * The fallback scan of up to VREX_SHIE_SCAN_GROUP deferred nearest searches
 * at once, by the group scan kernel (shie_group_scan.h): each block of
 * VREX_SHIE_GROUP_BLOCK dense codes (1 KiB) is read from L2, L3 or DRAM once
 * and compared against every query of the group held in registers, each with
 * its own limit (its radius, then its best distance so far). The codes a
 * query lists go through its filters and the nearest order, as in
 * shie_scan_dense(). The nearest entry is the minimum of a total order, so
 * the result does not depend on the order in which candidates are met.
 */
#if VREX_SHIE_SCAN_GROUP > VREX_SHIE_GROUP_QUERIES
#error "a scan group must fit the group scan kernel"
#endif

static void shie_scan_group(struct shie_search *const *g, u32 ng)
{
	const struct vrex_shie_table *t = g[0]->t;
	const struct vrex_fp *fps = shie_fps(t);
	const struct vrex_shie_group_kernel *kern = vrex_shie_group_best(t->vector_scan);
	struct vrex_shie_group grp;
	struct vrex_shie_group_hits hits;
	u32 i, j, k, m, mask, d;

	for (k = 0; k < ng; k++) {
		grp.q0[k] = g[k]->q->fp.w[0];
		grp.q1[k] = g[k]->q->fp.w[1];
		grp.limit[k] = g[k]->limit;
	}
	grp.nq = ng;
	vrex_shie_group_pad(&grp);
	for (i = 0; i < t->top; i += m) {
		m = t->top - i;
		m = m > VREX_SHIE_GROUP_BLOCK ? VREX_SHIE_GROUP_BLOCK : m;
		mask = kern->block(fps + i, m, &grp, &hits);
		for (k = 0; mask; k++, mask >>= 1) {
			struct shie_search *sr = g[k];

			if (!(mask & 1))
				continue;
			for (j = 0; j < hits.count[k]; j++) {
				u32 id = i + hits.idx[k][j];
				const struct vrex_shie_entry *e = &t->e[id];

				if (!shie_entry_matches(e, sr->q))
					continue;
				d = shie_distance(&e->fp, &sr->q->fp, 0);
				shie_take_nearest(sr, id, d, e->frame);
			}
			grp.limit[k] = sr->limit;
		}
	}
}

static u32 shie_put_nearest(const struct shie_search *sr, u32 i, u32 *entry, u32 *distance)
{
	entry[i] = sr->best;
	if (sr->best == VREX_NIL)
		return 0;
	if (distance)
		distance[i] = sr->best_distance;
	return 1;
}

/* Scans the @np deferred searches of @pend together and writes their results. */
static u32 shie_flush_group(struct shie_search *pend, const u32 *idx, u32 np, u32 *entry,
			    u32 *distance)
{
	struct shie_search *g[VREX_SHIE_SCAN_GROUP];
	u32 k, hits = 0;

	for (k = 0; k < np; k++)
		g[k] = &pend[k];
	shie_scan_group(g, np);
	for (k = 0; k < np; k++)
		hits += shie_put_nearest(&pend[k], idx[k], entry, distance);
	return hits;
}

u32 vrex_shie_find_similar_batch(const struct vrex_shie_table *t, const struct vrex_shie_query *q,
				 u32 n, u32 *entry, u32 *distance)
{
	struct shie_search pend[VREX_SHIE_SCAN_GROUP];
	u32 idx[VREX_SHIE_SCAN_GROUP];
	u32 share = 1, np = 0, hits = 0, i;

	if (t->batch_scan)
		share = n < VREX_SHIE_SCAN_GROUP ? n : VREX_SHIE_SCAN_GROUP;
	for (i = 0; i < n; i++) {
		struct shie_search *sr = &pend[np];

		entry[i] = VREX_NIL;
		if (!shie_query_valid(&q[i]))
			continue;
		shie_search_init(sr, t, &q[i], 0, NULL, 0);
		sr->share = share;
		vrex_shie_search(sr);
		if (!sr->deferred) {
			hits += shie_put_nearest(sr, i, entry, distance);
			continue;
		}
		idx[np++] = i;
		if (np == VREX_SHIE_SCAN_GROUP) {
			hits += shie_flush_group(pend, idx, np, entry, distance);
			np = 0;
		}
	}
	if (np)
		hits += shie_flush_group(pend, idx, np, entry, distance);
	return hits;
}
