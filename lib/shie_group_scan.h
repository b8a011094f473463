/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * The dense-scan kernel that find_similar_batch's fallback scan runs for a
 * group of up to VREX_SHIE_GROUP_QUERIES queries (internal to lib/; the
 * design and its measurements: docs/hw/shie.md, "Group scan").
 *
 * One call covers one block of at most VREX_SHIE_GROUP_BLOCK dense codes:
 * every code is loaded once and compared against all the queries of the
 * group, which stay in registers for the whole block. For each query whose
 * block holds a code within that query's own limit, the kernel lists those
 * codes (their indices in the block). The caller applies the entry filters
 * and the nearest order, shrinks the limits, and calls again for the next
 * block. The lists carry no distances: the kernel's stack (the simulated
 * device runs this) stays at half a KiB, and a listed code is rare once a
 * query has a near hit.
 */
#ifndef VREX_SHIE_GROUP_SCAN_H
#define VREX_SHIE_GROUP_SCAN_H

#include "vrex_compat.h"
#include "vrex_fp.h"

#define VREX_SHIE_GROUP_QUERIES 8
#define VREX_SHIE_GROUP_BLOCK 64	/* <= 256: block indices are u8 */

/*
 * The queries of a group. All VREX_SHIE_GROUP_QUERIES slots are read: a
 * group of fewer queries (nq) fills the others with copies of a real one
 * (vrex_shie_group_pad()), whose results are not reported.
 */
struct vrex_shie_group {
	u64 q0[VREX_SHIE_GROUP_QUERIES];	/* fingerprint word 0 of each query */
	u64 q1[VREX_SHIE_GROUP_QUERIES];	/* fingerprint word 1 */
	u32 limit[VREX_SHIE_GROUP_QUERIES];	/* codes farther than this are not listed */
	u32 nq;					/* 1..VREX_SHIE_GROUP_QUERIES */
};

/* Per query k < nq: count[k] codes of the block, in ascending index order. */
struct vrex_shie_group_hits {
	u32 count[VREX_SHIE_GROUP_QUERIES];
	u8 idx[VREX_SHIE_GROUP_QUERIES][VREX_SHIE_GROUP_BLOCK];
};

/*
 * Scans codes p[0..m-1] (m <= VREX_SHIE_GROUP_BLOCK) for the group @g.
 * Returns the mask of the queries with at least one code within their limit;
 * hits->count[k] is written for every k < nq, the lists only for the queries
 * in the mask.
 */
struct vrex_shie_group_kernel {
	const char *name;
	u32 (*block)(const struct vrex_fp *p, u32 m, const struct vrex_shie_group *g,
		     struct vrex_shie_group_hits *hits);
};

#define VREX_SHIE_GROUP_PORTABLE 0	/* plain C, every build (the kernel's) */
#define VREX_SHIE_GROUP_POPCNT 1	/* x86-64 user space: the popcnt instruction */
#define VREX_SHIE_GROUP_VPOPCNTDQ 2	/* x86-64 user space: AVX-512 VPOPCNTDQ */
#define VREX_SHIE_GROUP_KERNELS 3

/* The kernel @which, or NULL when this build or this CPU does not have it. */
const struct vrex_shie_group_kernel *vrex_shie_group_find(u32 which);

/* The fastest kernel this CPU runs; the AVX-512 one only if @vector. */
const struct vrex_shie_group_kernel *vrex_shie_group_best(int vector);

/* Fills the slots nq..VREX_SHIE_GROUP_QUERIES-1 with copies of query 0. */
void vrex_shie_group_pad(struct vrex_shie_group *g);

#endif /* VREX_SHIE_GROUP_SCAN_H */
