/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * Internal to lib/: what the files of the SHIE table share (shie_geometry.c,
 * shie_table.c, shie_search.c with shie_scan.h, shie_batch.c): the arena's
 * accessors, the MIH keys, distances, and one search's state and result
 * rules. Not installed; the public contract is shie_table.h.
 */
#ifndef VREX_SHIE_INTERNAL_H
#define VREX_SHIE_INTERNAL_H

#include "shie_table.h"
#include "shie_popcount.h"

#define SHIE_ALIGN 64
#define SHIE_NO_CHUNK 0		/* overflow chunks are numbered from mih_heads on */

/* The probe loop's popcnt clone (shie_popcount.h). */
#ifdef SHIE_POPCNT_CLONES
#define SHIE_POPCNT_DISPATCH 1
#endif

/*
 * The fallback scan also exists as a vector clone on x86-64 user space (the
 * HAL's emulation): plain C that the compiler vectorises for AVX-512
 * VPOPCNTDQ, picked at run time. The kernel's simulated device keeps the
 * scalar scan (vector registers are not free to use there); both return the
 * same result.
 */
#ifdef SHIE_POPCNT_DISPATCH
#define SHIE_VECTOR_DISPATCH 1
#endif

/* @hw: count with the popcnt instruction (only inside the popcnt clone). */
static inline u32 shie_popcount_hw(u64 x, int hw)
{
	return hw ? (u32)__builtin_popcountll(x) : shie_popcount64(x);
}

static inline u32 shie_distance(const struct vrex_fp *a, const struct vrex_fp *b, int hw)
{
	return shie_popcount_hw(a->w[0] ^ b->w[0], hw) + shie_popcount_hw(a->w[1] ^ b->w[1], hw);
}

static inline u64 shie_align(u64 v)
{
	return (v + SHIE_ALIGN - 1) & ~(u64)(SHIE_ALIGN - 1);
}

/*
 * The fingerprints again, densely packed (16 bytes per entry, zero when free),
 * right after the entry array: the fallback scan streams half the bytes of
 * the 32-byte entries and touches an entry only on a hit. Located from the
 * capacity, so the table struct (a shared header) needs no new field.
 */
static inline struct vrex_fp *shie_fps(const struct vrex_shie_table *t)
{
	return (struct vrex_fp *)((u8 *)t->e +
				  shie_align((u64)t->capacity * sizeof(struct vrex_shie_entry)));
}

/* The link record of entry @id: VREX_SHIE_LINK_WORDS(mih_tables) u32. */
static inline u32 *shie_link(const struct vrex_shie_table *t, u32 id)
{
	return t->link + (size_t)id * VREX_SHIE_LINK_WORDS(t->mih_tables);
}

static inline u32 *link_next(const struct vrex_shie_table *t, u32 id)
{
	return shie_link(t, id) + VREX_SHIE_LINK_NEXT;
}

static inline u32 *link_prev(const struct vrex_shie_table *t, u32 id)
{
	return shie_link(t, id) + VREX_SHIE_LINK_PREV;
}

/* Slot of entry @id in its bucket of MIH table @tb (chunk * chunk_slots + slot). */
static inline u32 *link_pos(const struct vrex_shie_table *t, u32 id, u32 tb)
{
	return shie_link(t, id) + VREX_SHIE_LINK_POS + tb;
}

static inline u8 *chunk_at(const struct vrex_shie_table *t, u32 c)
{
	return t->mih + (size_t)c * t->chunk_size;
}

/*
 * Chunk layout: u64 word[K], u32 id[K], u32 next. Words come first so that a
 * probe that rejects every record (the common case) reads 8 * n bytes only;
 * bucket sizes live in their own array (mih_count), hot in cache.
 */
static inline u64 *chunk_words(u8 *c)
{
	return (u64 *)c;
}

static inline u32 *chunk_ids(const struct vrex_shie_table *t, u8 *c)
{
	return (u32 *)(c + (size_t)t->chunk_slots * sizeof(u64));
}

static inline u32 *chunk_next(const struct vrex_shie_table *t, u8 *c)
{
	return (u32 *)(c + (size_t)t->chunk_slots * (sizeof(u64) + sizeof(u32)));
}

static inline u32 mih_key(const struct vrex_shie_table *t, const struct vrex_fp *fp, u32 tb)
{
	return (u32)(fp->w[t->mih_word[tb]] >> t->mih_shift[tb]) & ((1u << t->mih_bits[tb]) - 1);
}

/* The fingerprint word that does not contain table @tb's substring. */
static inline u64 mih_other(const struct vrex_shie_table *t, const struct vrex_fp *fp, u32 tb)
{
	return fp->w[t->mih_word[tb] ^ 1];
}

struct shie_search {
	const struct vrex_shie_table *t;
	const struct vrex_shie_query *q;
	u32 limit;		/* candidates farther than this cannot matter */
	u32 range;		/* 1: collect every match; 0: keep the nearest */
	u32 best;
	u32 best_distance;
	u32 best_frame;
	/*
	 * want > 1 (vrex_shie_find_nearest()): the want nearest, in order, in
	 * kept_*[0..nkept) instead of best_*; the limit is the radius until
	 * want are kept, then the farthest kept distance.
	 */
	u32 want;
	u32 nkept;
	u32 kept_id[VREX_SHIE_MAX_NEAREST];
	u32 kept_distance[VREX_SHIE_MAX_NEAREST];
	u32 kept_frame[VREX_SHIE_MAX_NEAREST];
	u32 *out;
	u32 max;
	u32 count;
	u32 share;		/* >= 2: a batch will share this query's fallback scan */
	u32 deferred;		/* the fallback scan is left to the batch */
	u32 fallback;		/* SHIE_FALLBACK_*: why the probes stopped for the scan */
};

#define SHIE_FALLBACK_NONE 0
#define SHIE_FALLBACK_CROWD 1
#define SHIE_FALLBACK_BUDGET 2

static inline int shie_query_valid(const struct vrex_shie_query *q)
{
	return q->radius <= VREX_SHIE_MAX_RADIUS && q->scope <= VREX_SCOPE_POOL &&
	       q->region < VREX_SHIE_REGIONS && !(q->tiers & ~VREX_SHIE_TIERS);
}

static inline int shie_entry_matches(const struct vrex_shie_entry *e,
				     const struct vrex_shie_query *q)
{
	if (!e->valid || e->region != q->region)
		return 0;
	if (q->tiers && !(q->tiers & e->valid))
		return 0;
	if (q->scope == VREX_SCOPE_STREAM ? e->stream != q->stream : e->pool != q->pool)
		return 0;
	return q->frame_limit == VREX_NIL || e->frame < q->frame_limit;
}

/* Whether (d, frame, id) comes before kept answer @i in the nearest order. */
static inline int shie_before_kept(const struct shie_search *sr, u32 i, u32 id, u32 d, u32 frame)
{
	if (d != sr->kept_distance[i])
		return d < sr->kept_distance[i];
	if (frame != sr->kept_frame[i])
		return frame > sr->kept_frame[i];
	return id < sr->kept_id[i];
}

/*
 * The want nearest, kept sorted by insertion (want <= VREX_SHIE_MAX_NEAREST).
 * The probes can meet an entry once per MIH table: one already kept is
 * skipped; one dropped earlier compares after every kept answer again.
 */
static inline void shie_take_kept(struct shie_search *sr, u32 id, u32 d, u32 frame)
{
	u32 i, n = sr->nkept;

	for (i = 0; i < n; i++)
		if (sr->kept_id[i] == id)
			return;
	if (n == sr->want && !shie_before_kept(sr, n - 1, id, d, frame))
		return;
	if (n < sr->want)
		n++;
	for (i = n - 1; i > 0 && shie_before_kept(sr, i - 1, id, d, frame); i--) {
		sr->kept_id[i] = sr->kept_id[i - 1];
		sr->kept_distance[i] = sr->kept_distance[i - 1];
		sr->kept_frame[i] = sr->kept_frame[i - 1];
	}
	sr->kept_id[i] = id;
	sr->kept_distance[i] = d;
	sr->kept_frame[i] = frame;
	sr->nkept = n;
	if (n == sr->want)
		sr->limit = sr->kept_distance[n - 1];
}

/* Smallest distance, then the most recent frame, then the lowest index. */
static inline void shie_take_nearest(struct shie_search *sr, u32 id, u32 d, u32 frame)
{
	if (sr->want > 1) {
		shie_take_kept(sr, id, d, frame);
		return;
	}
	if (sr->best != VREX_NIL) {
		if (d > sr->best_distance)
			return;
		if (d == sr->best_distance &&
		    (frame < sr->best_frame || (frame == sr->best_frame && id > sr->best)))
			return;
	}
	sr->best = id;
	sr->best_distance = d;
	sr->best_frame = frame;
	sr->limit = d;
}

static inline void shie_take_range(struct shie_search *sr, u32 id)
{
	if (sr->count < sr->max)
		sr->out[sr->count] = id;
	sr->count++;
}

static inline void shie_search_init(struct shie_search *sr, const struct vrex_shie_table *t,
				    const struct vrex_shie_query *q, u32 range, u32 *out, u32 max)
{
	sr->t = t;
	sr->q = q;
	sr->limit = q->radius;
	sr->range = range;
	sr->best = VREX_NIL;
	sr->best_distance = VREX_NIL;
	sr->best_frame = 0;
	sr->want = 1;
	sr->nkept = 0;
	sr->out = out;
	sr->max = out ? max : 0;
	sr->count = 0;
	sr->share = 1;
	sr->deferred = 0;
	sr->fallback = SHIE_FALLBACK_NONE;
}

/* One search: the probe schedule, falling back to the dense scan (shie_search.c). */
void vrex_shie_search(struct shie_search *sr);

#endif /* VREX_SHIE_INTERNAL_H */
