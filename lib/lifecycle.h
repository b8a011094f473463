/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * Block lifecycle: every KV block the SHIE points to has a last-access frame
 * (in its owner stream's numbering). At frame retirement, blocks of the stream
 * that have been cold for more than zombie_frames frames are zombies: they are
 * released together with all their SHIE entries in one step, and a release
 * record is queued so the owner can reuse the memory. A lookup therefore
 * never returns a released block.
 *
 * Host-tier blocks (INSERT with VREX_ARGF_HOST_TIER: a demoted block's copy
 * in external memory) are never zombies: the host owns that memory and
 * bounds it, so such a block and its entry stay until it is removed or its
 * stream closes.
 */
#ifndef VREX_LIFECYCLE_H
#define VREX_LIFECYCLE_H

#include "vrex_compat.h"

struct vrex_model;

/* A pointer to KV memory as the hardware holds it (HBPT: pointers only). */
struct vrex_kv_ref {
	u64 addr;	/* device address (offset into bank memory) */
	u32 length;	/* bytes */
	u32 tag;	/* software tag, returned verbatim (the BO handle) */
};

struct vrex_block {
	struct vrex_kv_ref kv;
	u32 last_access;	/* owner stream's frame number */
	u32 first_entry;	/* SHIE entries, chained through vrex_blocks.entry_next */
	u32 nentries;
	u32 next;		/* per-stream live list, or the free list */
	u32 prev;
	u16 stream;
	u8 bank;
	u8 live;
	u8 host;		/* host-tier block: never aged */
	u64 gen;		/* generation: unique per allocation, never 0 (0 while free) */
};

struct vrex_released {
	u32 block;
	u16 stream;
	u8 bank;
	u8 reason;		/* VREX_RELEASE_* */
	struct vrex_kv_ref kv;
	u64 gen;		/* the released block's generation */
};

#define VREX_RELEASE_ZOMBIE 1
#define VREX_RELEASE_REMOVED 2
#define VREX_RELEASE_STREAM_CLOSED 3

struct vrex_blocks {
	u32 capacity;
	u32 live;
	u32 free_head;
	struct vrex_block *b;		/* [capacity] */
	u32 *entry_next;		/* [shie capacity] */
	u32 *stream_head;		/* [max_streams] live list heads */
	struct vrex_released *fifo;	/* [capacity] release records */
	u32 fifo_head;
	u32 fifo_count;
	u64 next_gen;			/* next block generation; survives vrex_blocks_clear() */
};

size_t vrex_blocks_arena_size(u32 capacity, u32 shie_capacity, u32 max_streams);

#endif /* VREX_LIFECYCLE_H */
