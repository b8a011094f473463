/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * Internal to lib/: the block table operations the device model (vrex_model*.c) builds its
 * commands from. Not installed; the public contract is lifecycle.h.
 *
 * A block slot is in one of three states:
 *   free     - on the free list (chained through next)
 *   live     - on its owner stream's live list (doubly linked), entries
 *              chained from first_entry through entry_next
 *   released - not on any list, its record waits in the release FIFO; the
 *              slot becomes free when the record is popped, so a block id is
 *              never reused before its owner has seen the release.
 */
#ifndef VREX_LIFECYCLE_OPS_H
#define VREX_LIFECYCLE_OPS_H

#include "lifecycle.h"

int vrex_blocks_init(struct vrex_blocks *bl, u32 capacity, u32 shie_capacity, u32 max_streams,
		     void *arena, size_t arena_size);
/* Every slot free, no records queued; generations go on from where they were. */
void vrex_blocks_clear(struct vrex_blocks *bl, u32 max_streams);

static inline int vrex_blocks_is_live(const struct vrex_blocks *bl, u32 block)
{
	return block < bl->capacity && bl->b[block].live;
}

/* Takes the lowest free slot onto @stream's live list; VREX_NIL when none is free. */
u32 vrex_blocks_alloc(struct vrex_blocks *bl, u16 stream, u8 bank, const struct vrex_kv_ref *kv,
		      u32 frame);
/* Exact inverse of the vrex_blocks_alloc() that returned @block (no entries yet). */
void vrex_blocks_undo_alloc(struct vrex_blocks *bl, u32 block);
void vrex_blocks_link_entry(struct vrex_blocks *bl, u32 block, u32 entry);

/* Record queue; the FIFO holds one record per released slot, so it cannot overflow. */
u32 vrex_blocks_queued(const struct vrex_blocks *bl);
/* Pops the oldest record and frees its slot; returns 0 when the FIFO is empty. */
int vrex_blocks_pop_released(struct vrex_blocks *bl, struct vrex_released *rec);

/*
 * Model-level lifecycle (block table + SHIE + bank accounting together).
 * Releasing a block removes all its SHIE entries in the same step. With
 * VREX_RELEASE_REMOVED the slot is freed at once; otherwise the record is
 * queued and the slot is held until it is popped.
 */
void vrex_lifecycle_release(struct vrex_model *m, u32 block, u8 reason,
			    struct vrex_released *rec);
/* Releases blocks of @stream cold for more than @zombie_frames; returns how many. */
u32 vrex_lifecycle_retire(struct vrex_model *m, u32 stream, u32 zombie_frames);
/* Releases every block of @stream, drops its entries on others' blocks; returns blocks released. */
u32 vrex_lifecycle_release_stream(struct vrex_model *m, u32 stream);
/* last_access = max(last_access, owner stream's current frame). */
void vrex_lifecycle_touch(struct vrex_model *m, u32 block);
/* Adds (@sign > 0) or removes a live block's KV range from its bank's occupancy. */
void vrex_lifecycle_account(struct vrex_model *m, const struct vrex_block *b, int sign);

#endif /* VREX_LIFECYCLE_OPS_H */
