// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The group scan kernel (interface: shie_group_scan.h; design and figures:
 * docs/hw/shie.md). A block is read in one pass that keeps, per query, only
 * the smallest distance in the block: the group's queries and their minima
 * are the loop's only state, so the compiler keeps them in registers and the
 * pass stores nothing. The lists are made in a second pass, for the queries
 * whose minimum is within their limit only: once a query has a near hit that
 * is rare, and it costs one more read of a block that sits in L1.
 */
#include "shie_group_scan.h"
#include "shie_popcount.h"

#define GROUP_Q VREX_SHIE_GROUP_QUERIES

/* @hw: count with the popcnt instruction (only inside a clone that has it). */
static inline u64 group_popcount(u64 x, int hw)
{
	return hw ? (u64)__builtin_popcountll(x) : (u64)shie_popcount64(x);
}

/*
 * The codes of the block within @limit of one query, appended without a
 * branch (the index is always written, the count advances by the
 * comparison): on clustered tables half the codes can match, and a branch
 * per code would mispredict half the time.
 */
static inline u32 group_list(const struct vrex_fp *p, u32 m, u64 q0, u64 q1, u32 limit, u8 *idx,
			     int hw)
{
	u32 j, c = 0;

	for (j = 0; j < m; j++) {
		u64 d = group_popcount(p[j].w[0] ^ q0, hw) + group_popcount(p[j].w[1] ^ q1, hw);

		idx[c] = (u8)j;
		c += d <= limit;
	}
	return c;
}

/*
 * Distances are u64 so that the vectorised pass stays in the 64-bit lanes
 * the popcount produces (no narrowing per code); every loop bound but m is a
 * constant, so the query loop unrolls into registers.
 */
static inline u32 group_block_body(const struct vrex_fp *p, u32 m, const struct vrex_shie_group *g,
				   struct vrex_shie_group_hits *hits, int hw)
{
	u64 low[GROUP_Q];
	u32 j, k, mask = 0;

	for (k = 0; k < GROUP_Q; k++)
		low[k] = ~0ull;
	for (j = 0; j < m; j++) {
		const u64 c0 = p[j].w[0], c1 = p[j].w[1];

		for (k = 0; k < GROUP_Q; k++) {
			u64 d = group_popcount(c0 ^ g->q0[k], hw) +
				group_popcount(c1 ^ g->q1[k], hw);

			low[k] = d < low[k] ? d : low[k];
		}
	}
	for (k = 0; k < g->nq && k < GROUP_Q; k++) {
		hits->count[k] = 0;
		if (low[k] > g->limit[k])
			continue;
		mask |= 1u << k;
		hits->count[k] = group_list(p, m, g->q0[k], g->q1[k], g->limit[k], hits->idx[k],
					    hw);
	}
	return mask;
}

/* Full blocks get a body with a constant trip count (no loop remainder). */
static inline u32 group_block_any(const struct vrex_fp *p, u32 m, const struct vrex_shie_group *g,
				  struct vrex_shie_group_hits *hits, int hw)
{
	if (m == VREX_SHIE_GROUP_BLOCK)
		return group_block_body(p, VREX_SHIE_GROUP_BLOCK, g, hits, hw);
	return group_block_body(p, m < VREX_SHIE_GROUP_BLOCK ? m : VREX_SHIE_GROUP_BLOCK, g, hits,
				hw);
}

static u32 group_block_portable(const struct vrex_fp *p, u32 m, const struct vrex_shie_group *g,
				struct vrex_shie_group_hits *hits)
{
	return group_block_any(p, m, g, hits, 0);
}

#ifdef SHIE_POPCNT_CLONES
__attribute__((target("popcnt"))) static u32
group_block_popcnt(const struct vrex_fp *p, u32 m, const struct vrex_shie_group *g,
		   struct vrex_shie_group_hits *hits)
{
	return group_block_any(p, m, g, hits, 1);
}

/* The same C: the compiler vectorises the pass over the codes, 8 per register. */
__attribute__((target("popcnt,avx512f,avx512vl,avx512bw,avx512vpopcntdq"))) static u32
group_block_vpopcntdq(const struct vrex_fp *p, u32 m, const struct vrex_shie_group *g,
		      struct vrex_shie_group_hits *hits)
{
	return group_block_any(p, m, g, hits, 1);
}

static int group_cpu_has(u32 which)
{
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("popcnt"))
		return 0;
	if (which == VREX_SHIE_GROUP_POPCNT)
		return 1;
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
	       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vpopcntdq");
}
#else
static int group_cpu_has(u32 which)
{
	(void)which;
	return 0;
}
#endif

static const struct vrex_shie_group_kernel group_kernels[VREX_SHIE_GROUP_KERNELS] = {
	[VREX_SHIE_GROUP_PORTABLE] = { "portable", group_block_portable },
#ifdef SHIE_POPCNT_CLONES
	[VREX_SHIE_GROUP_POPCNT] = { "popcnt", group_block_popcnt },
	[VREX_SHIE_GROUP_VPOPCNTDQ] = { "avx512-vpopcntdq", group_block_vpopcntdq },
#endif
};

const struct vrex_shie_group_kernel *vrex_shie_group_find(u32 which)
{
	if (which >= VREX_SHIE_GROUP_KERNELS || !group_kernels[which].block)
		return NULL;
	if (which != VREX_SHIE_GROUP_PORTABLE && !group_cpu_has(which))
		return NULL;
	return &group_kernels[which];
}

const struct vrex_shie_group_kernel *vrex_shie_group_best(int vector)
{
	const struct vrex_shie_group_kernel *k = NULL;

	if (vector)
		k = vrex_shie_group_find(VREX_SHIE_GROUP_VPOPCNTDQ);
	if (!k)
		k = vrex_shie_group_find(VREX_SHIE_GROUP_POPCNT);
	return k ? k : &group_kernels[VREX_SHIE_GROUP_PORTABLE];
}

void vrex_shie_group_pad(struct vrex_shie_group *g)
{
	u32 k;

	for (k = g->nq; k < GROUP_Q; k++) {
		g->q0[k] = g->q0[0];
		g->q1[k] = g->q1[0];
		g->limit[k] = g->limit[0];
	}
}
