// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * SHIE table: temporal hash + multi-index hashing (MIH) over the fingerprint.
 * Format, parameters and the exact-recall argument: docs/hw/shie.md.
 *
 * Everything is deterministic: ids come from a LIFO free list seeded in
 * ascending order and overflow chunks likewise, so two instances fed the same
 * operations (the kernel's simulated device and the HAL's emulation) hold the
 * same ids and return the same results.
 */
#include "shie_internal.h"

static u32 chunk_alloc(struct vrex_shie_table *t)
{
	u32 c = t->chunk_free;

	if (c != SHIE_NO_CHUNK) {
		t->chunk_free = *chunk_next(t, chunk_at(t, c));
		return c;
	}
	return t->chunk_top++;
}

static void chunk_release(struct vrex_shie_table *t, u32 c)
{
	*chunk_next(t, chunk_at(t, c)) = t->chunk_free;
	t->chunk_free = c;
}

/*
 * A bucket of n records: the first chunk holds min(n, K); the overflow chunk
 * right behind it is the partial one, every later chunk is full. So the last
 * record (the one remove moves into the hole) is always found in O(1), and a
 * bucket with n > K owns ceil((n - K) / K) <= n / K overflow chunks: the pool
 * of capacity / K chunks per table can never run dry.
 */
static void mih_add(struct vrex_shie_table *t, u32 tb, u32 id)
{
	const struct vrex_fp *fp = &t->e[id].fp;
	u32 head = t->mih_base[tb] + mih_key(t, fp, tb);
	u8 *h = chunk_at(t, head);
	u32 n = t->mih_count[head];
	u32 k = t->chunk_slots;
	u32 ci = head;
	u32 slot = n;
	u8 *c;

	if (n >= k) {
		slot = (n - k) % k;
		if (!slot) {
			ci = chunk_alloc(t);
			*chunk_next(t, chunk_at(t, ci)) = *chunk_next(t, h);
			*chunk_next(t, h) = ci;
		} else {
			ci = *chunk_next(t, h);
		}
	}
	c = chunk_at(t, ci);
	chunk_words(c)[slot] = mih_other(t, fp, tb);
	chunk_ids(t, c)[slot] = id;
	*link_pos(t, id, tb) = ci * k + slot;
	t->mih_count[head] = n + 1;
}

static void mih_del(struct vrex_shie_table *t, u32 tb, u32 id)
{
	u32 head = t->mih_base[tb] + mih_key(t, &t->e[id].fp, tb);
	u8 *h = chunk_at(t, head);
	u32 n = t->mih_count[head];
	u32 k = t->chunk_slots;
	u32 pos = *link_pos(t, id, tb);
	u32 last_ci = head;
	u32 last_slot = n - 1;
	u8 *last;

	if (n > k) {
		last_ci = *chunk_next(t, h);
		last_slot = (n - k - 1) % k;
	}
	last = chunk_at(t, last_ci);
	if (pos != last_ci * k + last_slot) {
		u8 *c = chunk_at(t, pos / k);
		u32 slot = pos % k;
		u32 moved = chunk_ids(t, last)[last_slot];

		chunk_words(c)[slot] = chunk_words(last)[last_slot];
		chunk_ids(t, c)[slot] = moved;
		*link_pos(t, moved, tb) = pos;
	}
	t->mih_count[head] = n - 1;
	if (n > k && !last_slot) {
		*chunk_next(t, h) = *chunk_next(t, last);
		chunk_release(t, last_ci);
	}
}

void vrex_shie_clear(struct vrex_shie_table *t)
{
	u32 i;

	vrex_memset(t->e, 0, (size_t)t->capacity * sizeof(*t->e));
	vrex_memset(shie_fps(t), 0, (size_t)t->capacity * sizeof(struct vrex_fp));
	for (i = 0; i < t->capacity; i++) {
		*link_next(t, i) = i + 1 < t->capacity ? i + 1 : VREX_NIL;
		*link_prev(t, i) = VREX_NIL;
	}
	t->free_head = 0;
	t->top = 0;
	t->live = 0;
	vrex_memset(t->thash, 0xff, (size_t)(t->thash_mask + 1) * sizeof(u32));
	/* Overflow chunks are handed out in order from chunk_top: no need to touch them. */
	vrex_memset(t->mih_count, 0, (size_t)t->mih_heads * sizeof(u32));
	for (i = 0; i < t->mih_heads; i++)
		*chunk_next(t, chunk_at(t, i)) = SHIE_NO_CHUNK;
	t->chunk_free = SHIE_NO_CHUNK;
	t->chunk_top = t->mih_heads;
}

static u32 shie_thash(const struct vrex_shie_table *t, u16 stream, u8 region, u32 frame)
{
	u32 h = frame * 0x9e3779b1u ^ (((u32)stream << 4) | region) * 0x85ebca77u;

	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 13;
	return h & t->thash_mask;
}

u32 vrex_shie_find_temporal(const struct vrex_shie_table *t, u16 stream, u8 region, u32 frame)
{
	u32 i;

	if (region >= VREX_SHIE_REGIONS)
		return VREX_NIL;
	for (i = t->thash[shie_thash(t, stream, region, frame)]; i != VREX_NIL;
	     i = *link_next(t, i)) {
		const struct vrex_shie_entry *e = &t->e[i];

		if (e->frame == frame && e->stream == stream && e->region == region)
			return i;
	}
	return VREX_NIL;
}

/* @temporal: the entry is keyed by (stream, frame, region) too; else similarity lookups only. */
static int shie_insert(struct vrex_shie_table *t, const struct vrex_fp *fp, u32 pool, u16 stream,
		       u8 region, u32 frame, u32 block, int temporal, u32 *entry_out)
{
	struct vrex_shie_entry *e;
	u32 id, h, tb;

	if (region >= VREX_SHIE_REGIONS)
		return VREX_EINVAL;
	if (temporal && vrex_shie_find_temporal(t, stream, region, frame) != VREX_NIL)
		return VREX_EEXIST;
	if (t->free_head == VREX_NIL)
		return VREX_ENOSPC;

	id = t->free_head;
	t->free_head = *link_next(t, id);
	if (id >= t->top)
		t->top = id + 1;
	e = &t->e[id];
	e->fp = *fp;
	shie_fps(t)[id] = *fp;
	e->frame = frame;
	e->block = block;
	e->pool = pool;
	e->stream = stream;
	e->region = region;
	e->valid = temporal ? VREX_SHIE_TIER_DEVICE : VREX_SHIE_TIER_HOST;

	*link_prev(t, id) = VREX_NIL;
	*link_next(t, id) = VREX_NIL;
	if (temporal) {
		h = shie_thash(t, stream, region, frame);
		*link_next(t, id) = t->thash[h];
		if (t->thash[h] != VREX_NIL)
			*link_prev(t, t->thash[h]) = id;
		t->thash[h] = id;
	}

	for (tb = 0; tb < t->mih_tables; tb++)
		mih_add(t, tb, id);
	t->live++;
	if (entry_out)
		*entry_out = id;
	return VREX_OK;
}

int vrex_shie_insert(struct vrex_shie_table *t, const struct vrex_fp *fp, u32 pool, u16 stream,
		     u8 region, u32 frame, u32 block, u32 *entry_out)
{
	return shie_insert(t, fp, pool, stream, region, frame, block, 1, entry_out);
}

int vrex_shie_insert_host(struct vrex_shie_table *t, const struct vrex_fp *fp, u32 pool, u16 stream,
			  u8 region, u32 frame, u32 block, u32 *entry_out)
{
	return shie_insert(t, fp, pool, stream, region, frame, block, 0, entry_out);
}

int vrex_shie_remove(struct vrex_shie_table *t, u32 entry)
{
	struct vrex_shie_entry *e;
	u32 next, prev, tb;

	if (entry >= t->capacity || !t->e[entry].valid)
		return VREX_ENOENT;
	e = &t->e[entry];
	next = *link_next(t, entry);
	prev = *link_prev(t, entry);
	if (prev != VREX_NIL) {
		*link_next(t, prev) = next;
	} else {
		u32 *head = &t->thash[shie_thash(t, e->stream, e->region, e->frame)];

		/* A host-tier entry is in no chain: the head is another entry's (or NIL). */
		if (*head == entry)
			*head = next;
	}
	if (next != VREX_NIL)
		*link_prev(t, next) = prev;

	for (tb = 0; tb < t->mih_tables; tb++)
		mih_del(t, tb, entry);

	vrex_memset(e, 0, sizeof(*e));
	vrex_memset(&shie_fps(t)[entry], 0, sizeof(struct vrex_fp));
	*link_prev(t, entry) = VREX_NIL;
	*link_next(t, entry) = t->free_head;
	t->free_head = entry;
	t->live--;
	return VREX_OK;
}
