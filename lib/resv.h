/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * ReSV: token-level KV retrieval by key hashing (docs/hw/resv.md).
 *
 *   HCU   hash unit: 32 sign bits of a key against +-1 hyperplanes that a
 *         splitmix64 stream expands from the seed register. Keys are int16
 *         fixed point (scale-free: the sign of a projection does not depend
 *         on a positive scale, so user space scales each key to the int16
 *         range); the accumulators are int32.
 *   CLU   online leader clustering per (layer, head): a token joins the
 *         nearest cluster whose representative (its first member's hash) is
 *         within Hamming th, else opens a cluster.
 *   WTU   WiCSum threshold unit: clusters ranked by the Hamming distance of
 *         their representative to the query hash, selected in that order
 *         until the weighted cumulative sum reaches ratio of the total.
 *   KVMU  KV manager: the selected clusters as sorted, merged token ranges
 *         and block ranges.
 *
 * No floating point, no allocation: a head's tables live in a caller-provided
 * arena sized by vrex_resv_head_arena_size(). Everything is deterministic, so
 * the kernel's simulated device and the HAL's emulation agree bit for bit.
 */
#ifndef VREX_RESV_H
#define VREX_RESV_H

#include "vrex_compat.h"

#define VREX_RESV_BITS 32		/* N_hp: hyperplanes, hash bits per key */
#define VREX_RESV_MAX_DIM 256		/* head dimension */
#define VREX_RESV_DIM_WORDS (VREX_RESV_MAX_DIM / 64)
#define VREX_RESV_DEFAULT_TH 7
#define VREX_RESV_MAX_TH 32
#define VREX_RESV_RATIO_ONE 65536u	/* ratio register: Q16 fraction */
#define VREX_RESV_DEFAULT_RATIO 19661u	/* 0.3 */
#define VREX_RESV_LUT_SIZE (VREX_RESV_BITS + 1)	/* weight per Hamming distance */
#define VREX_RESV_MAX_TOKENS 0x1000000u
#define VREX_RESV_DEFAULT_SEED 0x5245535631323334ull	/* "RESV1234" */
#define VREX_RESV_POS_ONE 65536u	/* position weight: Q16, at most 1 */
#define VREX_RESV_BLOCKS_MAX_TOKENS 32768u	/* keeps the Q16 sums below 2^63 */

/* What the WiCSum cumulative sum adds per cluster (mode register). */
#define VREX_RESV_MODE_MASS 0	/* count * lut[d]: estimated attention mass */
#define VREX_RESV_MODE_TOKENS 1	/* count: a token budget (fixed-k control) */
#define VREX_RESV_MODE_MAX 1

/*
 * The HCU's projection: row r, column i is -1 where bit i of row r's splitmix64
 * words is set, +1 elsewhere. Kept as +-1 bytes, so that hashing a key is 32 dot
 * products with no test per term (a compiler vectorises them; the bits alone
 * cost a shift, a test and a mask per term).
 */
struct vrex_resv_hcu {
	u64 seed;
	u32 dim;
	s8 entry[VREX_RESV_BITS][VREX_RESV_MAX_DIM];
};

struct vrex_resv_params {
	u32 th;			/* 0..VREX_RESV_MAX_TH */
	u32 ratio;		/* 0..VREX_RESV_RATIO_ONE */
	u32 mode;		/* VREX_RESV_MODE_* */
	u16 lut[VREX_RESV_LUT_SIZE];	/* mass mode weight by distance */
};

struct vrex_resv_cluster {
	u32 rep;		/* representative hash: the first member's */
	u32 count;		/* members */
	u32 first;		/* first and last member token */
	u32 last;
	u32 selected;		/* set by the last vrex_resv_select() */
};

/* One (layer, head) of one sequence: its tokens in arrival order. */
struct vrex_resv_head {
	u32 max_tokens;
	u32 max_clusters;
	u32 ntokens;
	u32 nclusters;
	u32 *hash;		/* [max_tokens] */
	u32 *cluster;		/* [max_tokens] cluster of each token */
	struct vrex_resv_cluster *c;	/* [max_clusters] */
};

struct vrex_resv_range {
	u32 first;
	u32 count;
};

/* What one selection did (the counters add these up). */
struct vrex_resv_selection {
	u32 clusters;		/* selected clusters */
	u32 tokens;		/* selected tokens */
	u32 cutoff;		/* Hamming distance of the last selected cluster */
	u64 total;		/* the cumulative sum over all clusters */
	u64 sum;		/* ... over the selected ones */
};

void vrex_resv_default_params(struct vrex_resv_params *p);

/* Returns VREX_EINVAL for dim 0 or > VREX_RESV_MAX_DIM. */
int vrex_resv_hcu_init(struct vrex_resv_hcu *h, u64 seed, u32 dim);
/* +1 or -1: the projection entry of row r (< 32), column i (< dim). */
int vrex_resv_hcu_entry(const struct vrex_resv_hcu *h, u32 r, u32 i);
/* Bit r is set iff the projection of @key (h->dim values) on row r is >= 0. */
u32 vrex_resv_hash(const struct vrex_resv_hcu *h, const s16 *key);

/* 0 for sizes init would reject. */
size_t vrex_resv_head_arena_size(u32 max_tokens, u32 max_clusters);
/*
 * VREX_EINVAL for max_tokens 0 or > VREX_RESV_MAX_TOKENS, max_clusters 0 or
 * > max_tokens; VREX_ENOMEM if the arena is short. Any alignment.
 */
int vrex_resv_head_init(struct vrex_resv_head *hd, u32 max_tokens, u32 max_clusters,
			void *arena, size_t arena_size);
void vrex_resv_head_clear(struct vrex_resv_head *hd);

/*
 * Appends a token with key hash @hash. VREX_EINVAL for th > VREX_RESV_MAX_TH,
 * VREX_ENOSPC when the token table is full or the token needs a cluster and
 * the cluster table is full (nothing changes). *cluster_out (if not NULL)
 * gets the token's cluster, *opened whether it opened it.
 */
int vrex_resv_add(struct vrex_resv_head *hd, u32 hash, u32 th, u32 *cluster_out, u32 *opened);

/*
 * Keeps the first @keep tokens: the head is then exactly what adding only
 * those tokens would have built (a batch that failed half way is undone this
 * way). VREX_EINVAL for keep > ntokens.
 */
int vrex_resv_truncate(struct vrex_resv_head *hd, u32 keep);

/*
 * WiCSum: marks the selected clusters (c[].selected) for the query hash.
 * VREX_EINVAL for invalid params. @sel (if not NULL) gets the summary.
 */
int vrex_resv_select(struct vrex_resv_head *hd, u32 qhash, const struct vrex_resv_params *p,
		     struct vrex_resv_selection *sel);

/*
 * KVMU: the tokens of the selected clusters as ascending, maximal ranges.
 * Writes at most @max to @out and returns how many there are.
 */
u32 vrex_resv_token_ranges(const struct vrex_resv_head *hd, struct vrex_resv_range *out,
			   u32 max);
/*
 * The same as ranges of blocks of @tokens_per_block tokens (token t is in
 * block t / tokens_per_block): blocks holding at least one selected token.
 * Returns 0 for tokens_per_block 0.
 */
u32 vrex_resv_block_ranges(const struct vrex_resv_head *hd, u32 tokens_per_block,
			   struct vrex_resv_range *out, u32 max);

/*
 * Position-aware WiCSum over blocks (docs/hw/resv.md §8.2): token i weighs
 * lut[Hamming(hash[i], qhash)] * pos[i], pos[i] being the position table's
 * exp(bias) of the token in Q16 (at most VREX_RESV_POS_ONE); a block of
 * @tokens_per_block consecutive tokens weighs the sum of its tokens. Blocks
 * are taken heaviest first (ties: the lower block) until their sum reaches
 * @ratio (Q16) of the total; nothing is taken when the total is 0.
 * @weight: the caller's scratch, n / tokens_per_block entries. The selected
 * blocks go to @out in that order (at most @max of them), their number to
 * *nsel. VREX_EINVAL for n 0, above VREX_RESV_BLOCKS_MAX_TOKENS or not a
 * multiple of tokens_per_block, a pos entry or ratio above 1.
 */
int vrex_resv_select_blocks(const u32 *hash, const u32 *pos, u32 n, u32 tokens_per_block,
			    u32 qhash, const u16 *lut, u32 ratio, u64 *weight, u32 *out,
			    u32 max, u32 *nsel);

#endif /* VREX_RESV_H */
