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
#include "shie_table.h"
#include "shie_group_scan.h"
#include "shie_popcount.h"

#define SHIE_ALIGN 64
#define SHIE_RULE_MIN_BITS 10	/* the geometry rule's shortest substring */
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

/*
 * How many records of the scalar scan one record of the vector scan costs,
 * for the probe budget (measured on AMD Zen 4 at 16k entries: about 4-5).
 */
#define SHIE_VECTOR_GAIN 4

/* @hw: count with the popcnt instruction (only inside the popcnt clone). */
static inline u32 shie_popcount_hw(u64 x, int hw)
{
	return hw ? (u32)__builtin_popcountll(x) : shie_popcount64(x);
}

static inline u32 shie_distance(const struct vrex_fp *a, const struct vrex_fp *b, int hw)
{
	return shie_popcount_hw(a->w[0] ^ b->w[0], hw) + shie_popcount_hw(a->w[1] ^ b->w[1], hw);
}

struct shie_layout {
	struct shie_geometry {
		u32 tables;
		u32 heads;
		u32 min_bits;
		u32 base[VREX_MIH_MAX_TABLES];
		u8 word[VREX_MIH_MAX_TABLES];
		u8 shift[VREX_MIH_MAX_TABLES];
		u8 bits[VREX_MIH_MAX_TABLES];
	} g;
	u64 fps_off;
	u64 link_off;
	u64 thash_off;
	u64 count_off;
	u64 mih_off;
	u64 total;
	u32 thash_size;
	u32 slots;
	u32 chunk_size;
	u32 nchunks;
};

static u64 shie_align(u64 v)
{
	return (v + SHIE_ALIGN - 1) & ~(u64)(SHIE_ALIGN - 1);
}

/*
 * The geometry rule (measured: docs/hw/shie.md, "Parameters (geometry)").
 * MIH theory (Norouzi et al.) puts the substring length b near log2(N),
 * about one record per bucket, counting a probe and a candidate check as
 * equal costs. Here they are not: a candidate is an 8-byte word read in
 * sequence from the bucket's chunk and rejected by one popcount, a probe a
 * dependent random read (bucket size, then the chunk) plus the cursor's
 * work; at radius 20 fewer, fuller buckets win until a bucket holds about
 * 4-8 records (MIH alone prefers up to 16, but with the fallback scan in
 * play the shorter schedule of a few more tables wins). So
 * b = clamp(ceil(log2(N)) - 2, 10, 16) and m = 2 * ceil(64 / b) substrings,
 * half per 64-bit word: up to 4k entries -> 14 x 10/9 bits, 8k-16k ->
 * 12 x 11/10 bits, 32k-128k -> 10 x 13/12 bits, from 128k + 1 on the old
 * fixed 8 x 16 bits. Measured on uniform codes at radius 20 with the
 * default budget, batches of 8, queries/s by m:
 *   2k:   12: 2058k  14: 2070k  16: 1840k
 *   4k:    8:  857k  10: 1265k  12: 1241k  14: 1243k  16: 1064k
 *   8k:    8:  332k  10:  308k  12:  447k  14:  445k
 *   16k:  10:  286k  12:  460k  14:  346k
 *   100k: 8: 111k  10: 252k  12: 63k  (MIH alone, one query per call)
 */
u32 vrex_shie_mih_tables(u32 capacity)
{
	u32 b = 0;

	while (b < 32 && (1ull << b) < capacity)
		b++;
	b = b > SHIE_RULE_MIN_BITS + 2 ? b - 2 : SHIE_RULE_MIN_BITS;
	if (b > VREX_MIH_MAX_BITS)
		b = VREX_MIH_MAX_BITS;
	return 2 * ((64 + b - 1) / b);
}

/*
 * ceil(m / 2) substrings in word 0, floor(m / 2) in word 1; a word of p
 * substrings gives the first 64 % p of them one bit more than 64 / p.
 * Tables are laid out one after the other, 1 << bits[j] first chunks each.
 */
static int shie_geometry(u32 tables, struct shie_geometry *g)
{
	u32 j, w, base = 0;

	if (tables < VREX_MIH_MIN_TABLES || tables > VREX_MIH_MAX_TABLES)
		return VREX_EINVAL;
	g->tables = tables;
	g->min_bits = VREX_MIH_MAX_BITS;
	j = 0;
	for (w = 0; w < 2; w++) {
		u32 p = w ? tables / 2 : (tables + 1) / 2;
		u32 i, shift = 0;

		for (i = 0; i < p; i++, j++) {
			u32 bits = 64 / p + (i < 64 % p);

			g->word[j] = (u8)w;
			g->shift[j] = (u8)shift;
			g->bits[j] = (u8)bits;
			g->base[j] = base;
			shift += bits;
			base += 1u << bits;
			if (bits < g->min_bits)
				g->min_bits = bits;
		}
	}
	g->heads = base;
	return VREX_OK;
}

/*
 * Chunks are sized so that a bucket of average occupancy (in the tables with
 * the fewest buckets) fits its first chunk: a probe is then one prefetchable
 * read at an address computed from the key, with no pointer chasing.
 */
static void shie_chunk_geometry(u32 capacity, u32 min_bits, u32 *slots, u32 *size)
{
	u32 avg = (u32)(((u64)capacity + (1u << min_bits) - 1) >> min_bits);

	if (avg <= 1) {
		*slots = 1;
		*size = 16;
	} else if (avg <= 2) {
		*slots = 2;
		*size = 32;
	} else if (avg <= 4) {
		*slots = 4;
		*size = 64;
	} else if (avg <= 10) {
		*slots = 10;
		*size = 128;
	} else {
		*slots = 20;
		*size = 256;
	}
}

static int shie_layout(u32 capacity, u32 tables, struct shie_layout *l)
{
	u64 off;

	if (!capacity || capacity > VREX_SHIE_MAX_CAPACITY || shie_geometry(tables, &l->g))
		return VREX_EINVAL;
	shie_chunk_geometry(capacity, l->g.min_bits, &l->slots, &l->chunk_size);
	/* Per table, overflow chunks never exceed live / slots: see mih_add(). */
	l->nchunks = l->g.heads + tables * ((capacity + l->slots - 1) / l->slots);
	l->thash_size = 1;
	while (l->thash_size < capacity)
		l->thash_size <<= 1;

	off = shie_align((u64)capacity * sizeof(struct vrex_shie_entry));
	l->fps_off = off;
	off = shie_align(off + (u64)capacity * sizeof(struct vrex_fp));
	l->link_off = off;
	off = shie_align(off + (u64)capacity * VREX_SHIE_LINK_WORDS(tables) * sizeof(u32));
	l->thash_off = off;
	off = shie_align(off + (u64)l->thash_size * sizeof(u32));
	l->count_off = off;
	off = shie_align(off + (u64)l->g.heads * sizeof(u32));
	l->mih_off = off;
	off += (u64)l->nchunks * l->chunk_size;
	/* Slack so that init can align an arbitrary arena pointer. */
	l->total = off + SHIE_ALIGN - 1;
	if (l->total > (u64)(size_t)-1)
		return VREX_EINVAL;
	return VREX_OK;
}

/*
 * The fingerprints again, densely packed (16 bytes per entry, zero when free),
 * right after the entry array: the fallback scan streams half the bytes of
 * the 32-byte entries and touches an entry only on a hit. Located from the
 * capacity, so the table struct (a shared header) needs no new field.
 */
static struct vrex_fp *shie_fps(const struct vrex_shie_table *t)
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

size_t vrex_shie_arena_size_geometry(u32 capacity, u32 tables)
{
	struct shie_layout l;

	if (shie_layout(capacity, tables, &l))
		return 0;
	return (size_t)l.total;
}

size_t vrex_shie_arena_size(u32 capacity)
{
	return vrex_shie_arena_size_geometry(capacity, vrex_shie_mih_tables(capacity));
}

/* ---- MIH chunks ------------------------------------------------------- */

static u8 *chunk_at(const struct vrex_shie_table *t, u32 c)
{
	return t->mih + (size_t)c * t->chunk_size;
}

/*
 * Chunk layout: u64 word[K], u32 id[K], u32 next. Words come first so that a
 * probe that rejects every record (the common case) reads 8 * n bytes only;
 * bucket sizes live in their own array (mih_count), hot in cache.
 */
static u64 *chunk_words(u8 *c)
{
	return (u64 *)c;
}

static u32 *chunk_ids(const struct vrex_shie_table *t, u8 *c)
{
	return (u32 *)(c + (size_t)t->chunk_slots * sizeof(u64));
}

static u32 *chunk_next(const struct vrex_shie_table *t, u8 *c)
{
	return (u32 *)(c + (size_t)t->chunk_slots * (sizeof(u64) + sizeof(u32)));
}

static u32 mih_key(const struct vrex_shie_table *t, const struct vrex_fp *fp, u32 tb)
{
	return (u32)(fp->w[t->mih_word[tb]] >> t->mih_shift[tb]) & ((1u << t->mih_bits[tb]) - 1);
}

/* The fingerprint word that does not contain table @tb's substring. */
static u64 mih_other(const struct vrex_shie_table *t, const struct vrex_fp *fp, u32 tb)
{
	return fp->w[t->mih_word[tb] ^ 1];
}

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

/* ---- table ------------------------------------------------------------ */

int vrex_shie_init_geometry(struct vrex_shie_table *t, u32 capacity, u32 tables, void *arena,
			    size_t arena_size)
{
	struct shie_layout l;
	u8 *base;
	u32 j;
	int ret;

	ret = shie_layout(capacity, tables, &l);
	if (ret)
		return ret;
	if (!arena || arena_size < l.total)
		return VREX_ENOMEM;

	base = (u8 *)(((size_t)arena + SHIE_ALIGN - 1) & ~(size_t)(SHIE_ALIGN - 1));
	t->capacity = capacity;
	t->thash_mask = l.thash_size - 1;
	t->chunk_slots = l.slots;
	t->chunk_size = l.chunk_size;
	t->nchunks = l.nchunks;
	t->e = (struct vrex_shie_entry *)base;
	t->link = (u32 *)(base + l.link_off);
	t->thash = (u32 *)(base + l.thash_off);
	t->mih_count = (u32 *)(base + l.count_off);
	t->mih = base + l.mih_off;
	t->fallback_pct = VREX_SHIE_FALLBACK_PCT;
	t->probe_cost = VREX_SHIE_PROBE_COST;
	t->vector_scan = 1;
	t->vector_l2 = VREX_SHIE_VECTOR_L2;
	t->batch_scan = 1;
	t->mih_tables = l.g.tables;
	t->mih_heads = l.g.heads;
	for (j = 0; j < VREX_MIH_MAX_TABLES; j++) {
		t->mih_base[j] = j < tables ? l.g.base[j] : 0;
		t->mih_word[j] = j < tables ? l.g.word[j] : 0;
		t->mih_shift[j] = j < tables ? l.g.shift[j] : 0;
		t->mih_bits[j] = j < tables ? l.g.bits[j] : 0;
	}
	vrex_shie_clear(t);
	return VREX_OK;
}

int vrex_shie_init(struct vrex_shie_table *t, u32 capacity, void *arena, size_t arena_size)
{
	return vrex_shie_init_geometry(t, capacity, vrex_shie_mih_tables(capacity), arena,
				       arena_size);
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

int vrex_shie_insert(struct vrex_shie_table *t, const struct vrex_fp *fp, u32 pool, u16 stream,
		     u8 region, u32 frame, u32 block, u32 *entry_out)
{
	struct vrex_shie_entry *e;
	u32 id, h, tb;

	if (region >= VREX_SHIE_REGIONS)
		return VREX_EINVAL;
	if (vrex_shie_find_temporal(t, stream, region, frame) != VREX_NIL)
		return VREX_EEXIST;
	if (t->free_head == VREX_NIL)
		return VREX_ENOSPC;

	id = t->free_head;
	t->free_head = *link_next(t, id);
	e = &t->e[id];
	e->fp = *fp;
	shie_fps(t)[id] = *fp;
	e->frame = frame;
	e->block = block;
	e->pool = pool;
	e->stream = stream;
	e->region = region;
	e->valid = 1;

	h = shie_thash(t, stream, region, frame);
	*link_prev(t, id) = VREX_NIL;
	*link_next(t, id) = t->thash[h];
	if (t->thash[h] != VREX_NIL)
		*link_prev(t, t->thash[h]) = id;
	t->thash[h] = id;

	for (tb = 0; tb < t->mih_tables; tb++)
		mih_add(t, tb, id);
	t->live++;
	if (entry_out)
		*entry_out = id;
	return VREX_OK;
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
	if (prev != VREX_NIL)
		*link_next(t, prev) = next;
	else
		t->thash[shie_thash(t, e->stream, e->region, e->frame)] = next;
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

/* ---- similarity search ------------------------------------------------ */

struct shie_search {
	const struct vrex_shie_table *t;
	const struct vrex_shie_query *q;
	u32 limit;		/* candidates farther than this cannot matter */
	u32 range;		/* 1: collect every match; 0: keep the nearest */
	u32 best;
	u32 best_distance;
	u32 best_frame;
	u32 *out;
	u32 max;
	u32 count;
	u32 share;		/* >= 2: a batch will share this query's fallback scan */
	u32 deferred;		/* the fallback scan is left to the batch */
};

static int shie_query_valid(const struct vrex_shie_query *q)
{
	return q->radius <= VREX_SHIE_MAX_RADIUS && q->scope <= VREX_SCOPE_POOL &&
	       q->region < VREX_SHIE_REGIONS;
}

static int shie_entry_matches(const struct vrex_shie_entry *e, const struct vrex_shie_query *q)
{
	if (!e->valid || e->region != q->region)
		return 0;
	if (q->scope == VREX_SCOPE_STREAM ? e->stream != q->stream : e->pool != q->pool)
		return 0;
	return q->frame_limit == VREX_NIL || e->frame < q->frame_limit;
}

/* Smallest distance, then the most recent frame, then the lowest index. */
static void shie_take_nearest(struct shie_search *sr, u32 id, u32 d, u32 frame)
{
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

static void shie_take_range(struct shie_search *sr, u32 id)
{
	if (sr->count < sr->max)
		sr->out[sr->count] = id;
	sr->count++;
}

/*
 * Probe order is by stage (s, tb): substring distance s, then table tb. An
 * entry whose substring distances are d_i is reachable at every stage
 * (d_i, i); it is reported at the first of them in that order only.
 */
static int mih_first_stage(const struct vrex_shie_table *t, const struct vrex_fp *a,
			   const struct vrex_fp *b, u32 s, u32 tb, int hw)
{
	u32 i;

	for (i = 0; i < t->mih_tables; i++) {
		u32 d = shie_popcount_hw(mih_key(t, a, i) ^ mih_key(t, b, i), hw);

		if (i < tb ? d <= s : i > tb && d < s)
			return 0;
	}
	return 1;
}

static void shie_consider(struct shie_search *sr, u32 id, u32 s, u32 tb, int hw)
{
	const struct vrex_shie_entry *e = &sr->t->e[id];
	u32 d = shie_distance(&e->fp, &sr->q->fp, hw);

	if (d > sr->limit || !shie_entry_matches(e, sr->q))
		return;
	if (!sr->range)
		shie_take_nearest(sr, id, d, e->frame);
	else if (mih_first_stage(sr->t, &e->fp, &sr->q->fp, s, tb, hw))
		shie_take_range(sr, id);
}

static void mih_scan_bucket(struct shie_search *sr, u32 head, u32 s, u32 tb, u64 other, int hw)
{
	const struct vrex_shie_table *t = sr->t;
	u8 *c = chunk_at(t, head);
	u32 n = t->mih_count[head];
	u32 k = t->chunk_slots;
	u32 m = n < k ? n : k;
	u32 i;

	while (n) {
		const u64 *w = chunk_words(c);

		/* The bucket key contributes exactly s bits: a cheap lower bound. */
		for (i = 0; i < m; i++)
			if (s + shie_popcount_hw(w[i] ^ other, hw) <= sr->limit)
				shie_consider(sr, chunk_ids(t, c)[i], s, tb, hw);
		n -= m;
		if (!n)
			break;
		c = chunk_at(t, *chunk_next(t, c));
		/* The partial overflow chunk comes first, full ones after it. */
		m = n % k ? n % k : k;
	}
}

/* Next pattern with the same number of set bits (Gosper's hack). */
static u32 mih_next_pattern(u32 x)
{
	u32 low = x & (0u - x);
	u32 r = x + low;

	return (((r ^ x) >> 2) >> __builtin_ctz(low)) | r;
}

/*
 * Probe order: stage (s, tb) = every bucket of table tb whose key differs
 * from the query's substring in exactly s bits, stages in order s, then tb.
 * The cursor walks all stages as one sequence so that prefetching runs
 * SHIE_RING buckets ahead across stage boundaries.
 */
struct mih_cursor {
	u32 s;
	u32 tb;
	u32 x;			/* flip pattern; >= end: stage exhausted */
	u32 end;		/* 1 << mih_bits[tb] */
	u32 bound;		/* stages with m * s + tb > bound are never needed */
};

/*
 * Moves to the next bucket; returns 0 once its stage is beyond the bound.
 * A stage with more flips than its table has bits is empty and skipped.
 */
static int mih_cursor_next(const struct vrex_shie_table *t, struct mih_cursor *c)
{
	if (c->x < c->end)
		c->x = c->s ? mih_next_pattern(c->x) : c->end;
	while (c->x >= c->end) {
		if (++c->tb == t->mih_tables) {
			c->tb = 0;
			c->s++;
		}
		if (c->s * t->mih_tables + c->tb > c->bound)
			return 0;
		c->end = 1u << t->mih_bits[c->tb];
		c->x = c->s < t->mih_bits[c->tb] ? (1u << c->s) - 1 : c->end;
	}
	return 1;
}

#define SHIE_RING 32		/* power of two */
#define SHIE_AHEAD 12		/* buckets whose records are prefetched ahead of the scan */
/* Ring item: s << 24 | table << 16 | key (keys have at most 16 bits). */
#define SHIE_STAGE_SHIFT 24
#define SHIE_TABLE_SHIFT 16
#define SHIE_KEY_MASK 0xffffu

/*
 * Two prefetch waves: bucket sizes SHIE_RING buckets ahead, then, once a size
 * has arrived, exactly the record lines of that bucket (and the chain link of
 * an overflowing one) SHIE_AHEAD buckets ahead of the scan.
 */
static u32 mih_prefetch_records(const struct vrex_shie_table *t, u32 head)
{
	u8 *c = chunk_at(t, head);
	u32 n = t->mih_count[head];
	u32 k = t->chunk_slots;
	u32 off;

	for (off = 0; off < (n < k ? n : k) * sizeof(u64); off += SHIE_ALIGN)
		__builtin_prefetch(c + off);
	if (n > k)
		__builtin_prefetch(chunk_next(t, c));
	return n;
}

static void shie_scan_all(struct shie_search *sr, int hw)
{
	const struct vrex_shie_table *t = sr->t;
	u32 i;

	for (i = 0; i < t->capacity; i++) {
		const struct vrex_shie_entry *e = &t->e[i];
		u32 d;

		if (!e->valid)
			continue;
		d = shie_distance(&e->fp, &sr->q->fp, hw);
		if (d > sr->limit || !shie_entry_matches(e, sr->q))
			continue;
		if (sr->range)
			shie_take_range(sr, i);
		else
			shie_take_nearest(sr, i, d, e->frame);
	}
}

#define SHIE_SCAN_BATCH 64	/* candidate ids collected before the filters run */
#define SHIE_CROWD_DIV 8	/* stage-0 records > budget / this: scan at once */

/*
 * Distances of @n (<= SHIE_SCAN_BATCH) dense fingerprints from the query,
 * then the indices (from @base) of those within @limit appended to @cand
 * without a branch (the index is always written, the count advances by the
 * comparison): on clustered tables half the entries match, so a branch per
 * entry would mispredict half the time. The distance loop (with the batch's
 * minimum) vectorises; the append loop runs only when the minimum is within
 * the limit.
 */
static inline u32 shie_collect_body(const struct vrex_fp *p, u32 n, u32 base, u64 q0, u64 q1,
				    u32 limit, u32 *cand, int hw)
{
	u32 d[SHIE_SCAN_BATCH];
	u32 j, c = 0, low = VREX_NIL;

	for (j = 0; j < n; j++) {
		d[j] = shie_popcount_hw(p[j].w[0] ^ q0, hw) + shie_popcount_hw(p[j].w[1] ^ q1, hw);
		low = d[j] < low ? d[j] : low;
	}
	/* Most batches hold no candidate (uniform codes; any once a near hit set the limit). */
	if (low > limit)
		return 0;
	for (j = 0; j < n; j++) {
		cand[c] = base + j;
		c += d[j] <= limit;
	}
	return c;
}

#ifdef SHIE_VECTOR_DISPATCH
/* Never inlined into a caller without these target flags (GCC refuses to; so does flatten). */
__attribute__((target("popcnt,avx512f,avx512vl,avx512bw,avx512vpopcntdq"))) static u32
shie_collect_vector(const struct vrex_fp *p, u32 n, u32 base, u64 q0, u64 q1, u32 limit, u32 *cand)
{
	return shie_collect_body(p, n, base, q0, q1, limit, cand, 1);
}

static int shie_have_vector(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("avx512f") &&
	       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512vpopcntdq");
}
#endif

/*
 * The fallback scan: distances over the dense fingerprint array in batches,
 * then the entry filters and the output on each batch's candidates only.
 * @vec: the vector clone collects the candidates.
 */
static void shie_scan_dense(struct shie_search *sr, int hw, int vec)
{
	const struct vrex_shie_table *t = sr->t;
	const struct vrex_fp *fps = shie_fps(t);
	const u64 q0 = sr->q->fp.w[0], q1 = sr->q->fp.w[1];
	u32 cand[SHIE_SCAN_BATCH];
	u32 i, j, n, m;

	for (i = 0; i < t->capacity; i += m) {
		m = t->capacity - i > SHIE_SCAN_BATCH ? SHIE_SCAN_BATCH : t->capacity - i;
#ifdef SHIE_VECTOR_DISPATCH
		if (vec)
			n = shie_collect_vector(fps + i, m, i, q0, q1, sr->limit, cand);
		else
#endif
			n = shie_collect_body(fps + i, m, i, q0, q1, sr->limit, cand, hw);
		for (j = 0; j < n; j++) {
			const struct vrex_shie_entry *e = &t->e[cand[j]];
			u32 d;

			if (!shie_entry_matches(e, sr->q))
				continue;
			if (sr->range) {
				shie_take_range(sr, cand[j]);
				continue;
			}
			d = shie_distance(&e->fp, &sr->q->fp, hw);
			shie_take_nearest(sr, cand[j], d, e->frame);
		}
	}
	(void)vec;
}

/*
 * Crowded buckets (near-duplicate codes, e.g. a static camera) can make the
 * probes read more records than the table holds entries: each entry sits in
 * 8 buckets. And on sparse tables a lookup can probe hundreds of (mostly
 * empty) buckets. Once the buckets planned so far cost more than
 * fallback_pct percent of a linear scan (records read, plus probe_cost per
 * probe), the search finishes as one linear scan; the result is the same. A
 * range search restarts; a nearest search keeps the best entry found so far
 * and scans with its distance as the limit (an entry seen twice compares
 * equal to itself and changes nothing).
 */
static void shie_fall_back(struct shie_search *sr, int hw, int vec)
{
	if (sr->range)
		sr->count = 0;
	if (sr->share > 1) {
		sr->deferred = 1;
		return;
	}
	shie_scan_dense(sr, hw, vec);
}

/*
 * After stage (s, tb), every code with distance <= m * s + tb has been seen:
 * an unseen one differs by >= s + 1 bits on substrings 0..tb and >= s on the
 * others. So the search stops once that bound reaches the limit, which
 * shrinks to the best distance found so far for nearest-neighbour queries.
 */
static void mih_search_body(struct shie_search *sr, int hw, int vec)
{
	const struct vrex_shie_table *t = sr->t;
	struct mih_cursor cur = { .s = 0, .tb = 0, .x = 0, .end = 1u << t->mih_bits[0],
				  .bound = sr->limit };
	u32 ring[SHIE_RING];
	u32 qkey[VREX_MIH_MAX_TABLES];
	u32 produced = 0, planned = 0, consumed = 0, more = 1, i;
	u32 records = 0, budget = VREX_NIL, crowd_checked = 0;

	for (i = 0; i < t->mih_tables; i++)
		qkey[i] = mih_key(t, &sr->q->fp, i);
	if (t->fallback_pct) {
		budget = t->capacity / 100 * t->fallback_pct +
			 t->capacity % 100 * t->fallback_pct / 100;
		/*
		 * The vector scan is cheaper while the codes sit in L2 (beyond
		 * it both scans stream at the same bandwidth): so is the budget
		 * it allows the probes. A scan shared by a batch costs each
		 * query its share: with the register-blocked group scan
		 * (shie_group_scan.c) a group of 8 is 2.5-3x cheaper per query
		 * than one query's scan, and since probes spent before a
		 * fallback are lost, the full share discount measured best
		 * (16k uniform, batch: 514k queries/s without it, 649k with a
		 * quarter of the budget, 659k with an eighth; docs/hw/shie.md).
		 * Only the vector group kernel earns it: the popcnt and portable
		 * ones (the kernel module, arm64, a guest CPU without AVX-512)
		 * cost each query about what its own scan costs, and with the
		 * discount a batch on a sparse table scanned the whole capacity
		 * where one query finished its probes (vrex.ko under QEMU, batch
		 * of 16: 2.7k lookups/s against 62k one at a time).
		 */
		if (vec && (u64)t->capacity * sizeof(struct vrex_fp) <= t->vector_l2)
			budget /= SHIE_VECTOR_GAIN;
		if (vec && sr->share > 1)
			budget /= sr->share;
	}

	while (more || consumed < produced) {
		u32 item, s, key, tb;

		while (more && produced - consumed < SHIE_RING) {
			key = qkey[cur.tb] ^ cur.x;
			__builtin_prefetch(&t->mih_count[t->mih_base[cur.tb] + key]);
			ring[produced++ % SHIE_RING] =
				cur.s << SHIE_STAGE_SHIFT | cur.tb << SHIE_TABLE_SHIFT | key;
			more = mih_cursor_next(t, &cur);
		}
		while (planned < produced && planned - consumed < SHIE_AHEAD) {
			item = ring[planned++ % SHIE_RING];
			/*
			 * Stage 0 (the query's own bucket in each table) is
			 * planned before any bucket is scanned while m <=
			 * SHIE_AHEAD (with more tables a few stage-0 buckets
			 * are scanned first: a heuristic, exactness does not
			 * depend on it). It samples the neighbourhood: when
			 * it alone holds more than budget / SHIE_CROWD_DIV
			 * records, the later stages (hundreds of buckets
			 * around the same keys) all but certainly exceed the
			 * budget, so scan now rather than after reading that
			 * much.
			 */
			if ((item >> SHIE_STAGE_SHIFT) && !crowd_checked) {
				crowd_checked = 1;
				if (records > budget / SHIE_CROWD_DIV) {
					shie_fall_back(sr, hw, vec);
					return;
				}
			}
			tb = (item >> SHIE_TABLE_SHIFT) & 0xff;
			key = item & SHIE_KEY_MASK;
			records += mih_prefetch_records(t, t->mih_base[tb] + key) + t->probe_cost;
			if (records > budget) {
				shie_fall_back(sr, hw, vec);
				return;
			}
		}
		item = ring[consumed++ % SHIE_RING];
		s = item >> SHIE_STAGE_SHIFT;
		tb = (item >> SHIE_TABLE_SHIFT) & 0xff;
		if (s * t->mih_tables + tb > sr->limit)
			return;
		mih_scan_bucket(sr, t->mih_base[tb] + (item & SHIE_KEY_MASK), s, tb,
				mih_other(t, &sr->q->fp, tb), hw);
	}
}

static void mih_search_generic(struct shie_search *sr)
{
	mih_search_body(sr, 0, 0);
}

#ifdef SHIE_POPCNT_DISPATCH
/* flatten: the whole probe loop is compiled for popcnt, not just this frame. */
__attribute__((target("popcnt"), flatten)) static void
mih_search_popcnt(struct shie_search *sr, int vec)
{
	mih_search_body(sr, 1, vec);
}
#endif

static void mih_search(struct shie_search *sr)
{
#ifdef SHIE_POPCNT_DISPATCH
	__builtin_cpu_init();
	if (__builtin_cpu_supports("popcnt")) {
		int vec = 0;

#ifdef SHIE_VECTOR_DISPATCH
		vec = sr->t->vector_scan && shie_have_vector();
#endif
		mih_search_popcnt(sr, vec);
		return;
	}
#endif
	mih_search_generic(sr);
}

static void shie_search_init(struct shie_search *sr, const struct vrex_shie_table *t,
			     const struct vrex_shie_query *q, u32 range, u32 *out, u32 max)
{
	sr->t = t;
	sr->q = q;
	sr->limit = q->radius;
	sr->range = range;
	sr->best = VREX_NIL;
	sr->best_distance = VREX_NIL;
	sr->best_frame = 0;
	sr->out = out;
	sr->max = out ? max : 0;
	sr->count = 0;
	sr->share = 1;
	sr->deferred = 0;
}

/* ---- batched nearest lookups ------------------------------------------ */

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
	for (i = 0; i < t->capacity; i += m) {
		m = t->capacity - i;
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
		mih_search(sr);
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

/* The reference: portable code only, whatever the host offers. */
static void shie_bruteforce(struct shie_search *sr)
{
	shie_scan_all(sr, 0);
}

static u32 shie_nearest(const struct vrex_shie_table *t, const struct vrex_shie_query *q,
			u32 *distance, int brute)
{
	struct shie_search sr;

	if (!shie_query_valid(q))
		return VREX_NIL;
	shie_search_init(&sr, t, q, 0, NULL, 0);
	if (brute)
		shie_bruteforce(&sr);
	else
		mih_search(&sr);
	if (sr.best != VREX_NIL && distance)
		*distance = sr.best_distance;
	return sr.best;
}

static u32 shie_range(const struct vrex_shie_table *t, const struct vrex_shie_query *q,
		      u32 *out, u32 max, int brute)
{
	struct shie_search sr;

	if (!shie_query_valid(q))
		return 0;
	shie_search_init(&sr, t, q, 1, out, max);
	if (brute)
		shie_bruteforce(&sr);
	else
		mih_search(&sr);
	return sr.count;
}

u32 vrex_shie_find_similar(const struct vrex_shie_table *t, const struct vrex_shie_query *q,
			   u32 *distance)
{
	return shie_nearest(t, q, distance, 0);
}

u32 vrex_shie_find_similar_bruteforce(const struct vrex_shie_table *t,
				      const struct vrex_shie_query *q, u32 *distance)
{
	return shie_nearest(t, q, distance, 1);
}

u32 vrex_shie_find_range(const struct vrex_shie_table *t, const struct vrex_shie_query *q,
			 u32 *out, u32 max)
{
	return shie_range(t, q, out, max, 0);
}

u32 vrex_shie_find_range_bruteforce(const struct vrex_shie_table *t,
				    const struct vrex_shie_query *q, u32 *out, u32 max)
{
	return shie_range(t, q, out, max, 1);
}
