/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * FCC bank-group mapping: frames whose placement key is within Hamming
 * distance < VREX_GROUP_RADIUS of a group's representative land in that group
 * (a run of contiguous banks). A new scene opens a free group, else takes the
 * least-loaded group of its own pool, else the least-loaded group overall
 * (counted as a bank conflict).
 *
 * Placement key = fingerprint XOR a 128-bit salt derived from the stream's
 * pool. Streams sharing a pool (pooled mode) share the salt, so similar scenes
 * of different streams land together; a private pool's salt keeps its keys
 * ~64 bits away from every other pool, so one stream's scene cut never moves
 * another stream's placement.
 */
#ifndef VREX_FCC_BANKMAP_H
#define VREX_FCC_BANKMAP_H

#include "vrex_compat.h"
#include "vrex_fp.h"

#define VREX_MAX_BANKS 64
#define VREX_MAX_GROUPS VREX_MAX_BANKS
#define VREX_GROUP_RADIUS 15

struct vrex_bank_group {
	struct vrex_fp rep;	/* placement key of the frame that opened it */
	u32 pool;
	u32 in_use;
	u32 frames;		/* frames placed here since it was (re)opened */
};

struct vrex_bankmap {
	u32 nbanks;
	u32 group_banks;
	u32 ngroups;
	struct vrex_bank_group group[VREX_MAX_GROUPS];
	u64 bank_bytes[VREX_MAX_BANKS];	/* live KV bytes per bank (lifecycle keeps it) */
	u32 bank_blocks[VREX_MAX_BANKS];	/* live KV blocks per bank */
};

struct vrex_bank_assign {
	u32 group;
	u32 bank_first;
	u32 bank_count;
	u32 distance;	/* to the representative; 0 when the group was opened */
	u32 opened;	/* 1: new scene opened or took over the group */
	u32 conflict;	/* 1: took over a group of another pool */
};

/* @group_banks must divide @nbanks; nbanks <= VREX_MAX_BANKS. */
int vrex_bankmap_init(struct vrex_bankmap *bm, u32 nbanks, u32 group_banks);
void vrex_pool_key(const struct vrex_fp *fp, u32 pool, struct vrex_fp *key);
void vrex_bankmap_assign(struct vrex_bankmap *bm, const struct vrex_fp *fp, u32 pool,
			 struct vrex_bank_assign *out);
u64 vrex_bankmap_group_bytes(const struct vrex_bankmap *bm, u32 group);
/* Forgets the groups a pool owns (stream close of its last member). */
void vrex_bankmap_release_pool(struct vrex_bankmap *bm, u32 pool);

#endif /* VREX_FCC_BANKMAP_H */
