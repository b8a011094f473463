// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * SHIE table geometry: the MIH substring rule, the arena layout it implies
 * and the init that carves the arena. Format and parameters: docs/hw/shie.md.
 */
#include "shie_internal.h"

#define SHIE_RULE_MIN_BITS 10	/* the geometry rule's shortest substring */

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
	t->paths = NULL;
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

