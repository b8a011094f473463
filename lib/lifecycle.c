// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * Block lifecycle: the block table (free list, per-stream live lists, entry
 * chains, release FIFO) and the releases that keep it consistent with the
 * SHIE and the bank occupancy. Slot states: see lifecycle_ops.h.
 */
#include "lifecycle_ops.h"
#include "vrex_model.h"

#define BLOCKS_ALIGN 64u

static u64 align_up(u64 v)
{
	return (v + BLOCKS_ALIGN - 1) & ~(u64)(BLOCKS_ALIGN - 1);
}

size_t vrex_blocks_arena_size(u32 capacity, u32 shie_capacity, u32 max_streams)
{
	u64 total;

	if (!capacity || !shie_capacity || !max_streams)
		return 0;
	/* Slack so that any arena pointer can be aligned up. */
	total = BLOCKS_ALIGN - 1;
	total += align_up((u64)capacity * sizeof(struct vrex_block));
	total += align_up((u64)shie_capacity * sizeof(u32));
	total += align_up((u64)max_streams * sizeof(u32));
	total += align_up((u64)capacity * sizeof(struct vrex_released));
	if (total > (u64)(size_t)-1)
		return 0;
	return (size_t)total;
}

static void *carve(u8 **cursor, u64 bytes)
{
	void *p = *cursor;

	*cursor += align_up(bytes);
	return p;
}

int vrex_blocks_init(struct vrex_blocks *bl, u32 capacity, u32 shie_capacity, u32 max_streams,
		     void *arena, size_t arena_size)
{
	size_t need = vrex_blocks_arena_size(capacity, shie_capacity, max_streams);
	u8 *cursor;
	u32 i;

	if (!need)
		return VREX_EINVAL;
	if (!arena || arena_size < need)
		return VREX_ENOMEM;

	cursor = (u8 *)arena;
	cursor += (BLOCKS_ALIGN - ((uintptr_t)cursor & (BLOCKS_ALIGN - 1))) & (BLOCKS_ALIGN - 1);
	bl->b = carve(&cursor, (u64)capacity * sizeof(struct vrex_block));
	bl->entry_next = carve(&cursor, (u64)shie_capacity * sizeof(u32));
	bl->stream_head = carve(&cursor, (u64)max_streams * sizeof(u32));
	bl->fifo = carve(&cursor, (u64)capacity * sizeof(struct vrex_released));
	bl->capacity = capacity;
	bl->next_gen = 1;
	for (i = 0; i < shie_capacity; i++)
		bl->entry_next[i] = VREX_NIL;
	vrex_blocks_clear(bl, max_streams);
	return 0;
}

void vrex_blocks_clear(struct vrex_blocks *bl, u32 max_streams)
{
	u32 i;

	vrex_memset(bl->b, 0, (size_t)bl->capacity * sizeof(struct vrex_block));
	for (i = 0; i < bl->capacity; i++) {
		bl->b[i].first_entry = VREX_NIL;
		bl->b[i].prev = VREX_NIL;
		bl->b[i].next = i + 1 < bl->capacity ? i + 1 : VREX_NIL;
	}
	for (i = 0; i < max_streams; i++)
		bl->stream_head[i] = VREX_NIL;
	bl->free_head = 0;
	bl->live = 0;
	bl->fifo_head = 0;
	bl->fifo_count = 0;
}

static void free_push(struct vrex_blocks *bl, u32 block)
{
	struct vrex_block *b = &bl->b[block];

	vrex_memset(b, 0, sizeof(*b));
	b->first_entry = VREX_NIL;
	b->prev = VREX_NIL;
	b->next = bl->free_head;
	bl->free_head = block;
}

static void stream_unlink(struct vrex_blocks *bl, u32 block)
{
	struct vrex_block *b = &bl->b[block];

	if (b->prev != VREX_NIL)
		bl->b[b->prev].next = b->next;
	else
		bl->stream_head[b->stream] = b->next;
	if (b->next != VREX_NIL)
		bl->b[b->next].prev = b->prev;
	b->next = VREX_NIL;
	b->prev = VREX_NIL;
}

u32 vrex_blocks_alloc(struct vrex_blocks *bl, u16 stream, u8 bank, const struct vrex_kv_ref *kv,
		      u32 frame)
{
	u32 id = bl->free_head;
	struct vrex_block *b;

	if (id == VREX_NIL)
		return VREX_NIL;
	b = &bl->b[id];
	bl->free_head = b->next;

	b->kv = *kv;
	b->last_access = frame;
	b->first_entry = VREX_NIL;
	b->nentries = 0;
	b->stream = stream;
	b->bank = bank;
	b->live = 1;
	b->host = 0;
	b->gen = bl->next_gen++;
	if (!bl->next_gen)	/* 2^64 allocations: 0 stays "no generation" */
		bl->next_gen = 1;
	b->prev = VREX_NIL;
	b->next = bl->stream_head[stream];
	if (b->next != VREX_NIL)
		bl->b[b->next].prev = id;
	bl->stream_head[stream] = id;
	bl->live++;
	return id;
}

void vrex_blocks_undo_alloc(struct vrex_blocks *bl, u32 block)
{
	stream_unlink(bl, block);
	bl->live--;
	free_push(bl, block);
}

void vrex_blocks_link_entry(struct vrex_blocks *bl, u32 block, u32 entry)
{
	struct vrex_block *b = &bl->b[block];

	bl->entry_next[entry] = b->first_entry;
	b->first_entry = entry;
	b->nentries++;
}

u32 vrex_blocks_queued(const struct vrex_blocks *bl)
{
	return bl->fifo_count;
}

static void fifo_push(struct vrex_blocks *bl, const struct vrex_released *rec)
{
	u32 tail = bl->fifo_head + bl->fifo_count;

	if (tail >= bl->capacity)
		tail -= bl->capacity;
	bl->fifo[tail] = *rec;
	bl->fifo_count++;
}

int vrex_blocks_pop_released(struct vrex_blocks *bl, struct vrex_released *rec)
{
	struct vrex_released r;

	if (!bl->fifo_count)
		return 0;
	r = bl->fifo[bl->fifo_head];
	bl->fifo_head = bl->fifo_head + 1 < bl->capacity ? bl->fifo_head + 1 : 0;
	bl->fifo_count--;
	free_push(bl, r.block);
	if (rec)
		*rec = r;
	return 1;
}

void vrex_lifecycle_account(struct vrex_model *m, const struct vrex_block *b, int sign)
{
	u32 kb = (u32)(((u64)b->kv.length + 1023) / 1024);
	u32 *kb_reg;

	/* External memory (VREX_KV_ADDR_EXTERNAL) is in no bank. */
	if (b->bank == VREX_BANK_NONE)
		return;
	kb_reg = &m->regs[VREX_REG_BANK_KB(b->bank) / 4];
	if (sign > 0) {
		m->bankmap.bank_bytes[b->bank] += b->kv.length;
		m->bankmap.bank_blocks[b->bank]++;
		*kb_reg += kb;
	} else {
		m->bankmap.bank_bytes[b->bank] -= b->kv.length;
		m->bankmap.bank_blocks[b->bank]--;
		*kb_reg -= kb;
	}
}

void vrex_lifecycle_touch(struct vrex_model *m, u32 block)
{
	struct vrex_block *b = &m->blocks.b[block];
	const struct vrex_stream *owner = &m->streams[b->stream];

	if (owner->nframes && owner->frame > b->last_access)
		b->last_access = owner->frame;
}

void vrex_lifecycle_release(struct vrex_model *m, u32 block, u8 reason,
			    struct vrex_released *rec)
{
	struct vrex_blocks *bl = &m->blocks;
	struct vrex_block *b = &bl->b[block];
	struct vrex_released r;
	u32 e, next;

	/* Entries go in the same step as the block: no lookup can see it afterwards. */
	for (e = b->first_entry; e != VREX_NIL; e = next) {
		next = bl->entry_next[e];
		bl->entry_next[e] = VREX_NIL;
		vrex_shie_remove(&m->shie, e);
	}
	vrex_lifecycle_account(m, b, -1);
	stream_unlink(bl, block);
	bl->live--;

	r.block = block;
	r.stream = b->stream;
	r.bank = b->bank;
	r.reason = reason;
	r.kv = b->kv;
	r.gen = b->gen;
	if (rec)
		*rec = r;

	if (reason == VREX_RELEASE_REMOVED) {
		free_push(bl, block);
	} else {
		b->live = 0;
		b->first_entry = VREX_NIL;
		b->nentries = 0;
		fifo_push(bl, &r);
	}
}

u32 vrex_lifecycle_retire(struct vrex_model *m, u32 stream, u32 zombie_frames)
{
	const struct vrex_stream *s = &m->streams[stream];
	struct vrex_blocks *bl = &m->blocks;
	u32 id, next, n = 0;

	if (!s->nframes)
		return 0;
	for (id = bl->stream_head[stream]; id != VREX_NIL; id = next) {
		next = bl->b[id].next;
		if (bl->b[id].host)
			continue;
		if (s->frame - bl->b[id].last_access > zombie_frames) {
			vrex_lifecycle_release(m, id, VREX_RELEASE_ZOMBIE, NULL);
			n++;
		}
	}
	return n;
}

/* Entries @stream made on blocks other streams own (ALIAS inserts). */
static void drop_foreign_entries(struct vrex_model *m, u32 stream)
{
	struct vrex_blocks *bl = &m->blocks;
	u32 t, id, *link;

	for (t = 0; t < m->cfg.max_streams; t++) {
		if (t == stream)
			continue;
		for (id = bl->stream_head[t]; id != VREX_NIL; id = bl->b[id].next) {
			link = &bl->b[id].first_entry;
			while (*link != VREX_NIL) {
				u32 e = *link;

				if (m->shie.e[e].stream != stream) {
					link = &bl->entry_next[e];
					continue;
				}
				*link = bl->entry_next[e];
				bl->entry_next[e] = VREX_NIL;
				bl->b[id].nentries--;
				vrex_shie_remove(&m->shie, e);
			}
		}
	}
}

u32 vrex_lifecycle_release_stream(struct vrex_model *m, u32 stream)
{
	struct vrex_blocks *bl = &m->blocks;
	u32 head, n = 0;

	drop_foreign_entries(m, stream);
	while ((head = bl->stream_head[stream]) != VREX_NIL) {
		vrex_lifecycle_release(m, head, VREX_RELEASE_STREAM_CLOSED, NULL);
		n++;
	}
	return n;
}
