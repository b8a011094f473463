/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * SHIE: the spatio-temporal hash index. Entries are keyed by
 * (stream, frame, region) for temporal lookups and indexed by fingerprint for
 * similarity lookups; each holds a block id (a pointer into the block table),
 * never KV data.
 *
 * Similarity lookups use multi-index hashing: the 128-bit fingerprint is cut
 * into m substrings (m chosen from the capacity at init, see
 * vrex_shie_mih_tables()); a code within radius r of the query agrees with it
 * to within floor(r / m) bits on at least one substring, so probing those
 * buckets finds every match (exact recall) while touching a small part of the
 * table. A brute-force scan with
 * identical semantics is kept as the reference the tests compare against.
 *
 * Result order (both implementations): smallest distance, then the most
 * recent frame, then the lowest entry index.
 *
 * All storage lives in a caller-provided arena sized by vrex_shie_arena_size();
 * no operation allocates.
 */
#ifndef VREX_SHIE_TABLE_H
#define VREX_SHIE_TABLE_H

#include "vrex_compat.h"
#include "vrex_fp.h"

#define VREX_SHIE_REGIONS 16
#define VREX_SHIE_OFF_MIN (-3)
#define VREX_SHIE_OFF_MAX 2
#define VREX_SHIE_DEFAULT_RADIUS 20
#define VREX_SHIE_MAX_RADIUS 31
#define VREX_SHIE_MAX_CAPACITY 0x1000000u
/*
 * MIH geometry: m substrings (tables), ceil(m / 2) cut from fingerprint word
 * 0 and floor(m / 2) from word 1, each word split into near-equal widths, so
 * every substring lies in one 64-bit word. 8 <= m <= 16 keeps every width
 * within 8..16 bits. VREX_MIH_FIXED_TABLES (8 x 16 bits) is the geometry used
 * for every capacity before it was sized to the table (and still is from 64k
 * entries on).
 */
#define VREX_MIH_MIN_TABLES 8
#define VREX_MIH_MAX_TABLES 16
#define VREX_MIH_FIXED_TABLES 8
#define VREX_MIH_MAX_BITS 16
/*
 * A similarity lookup whose planned probes cost more than this percentage of
 * a linear scan (crowded buckets of near-duplicate codes, or a long probe
 * schedule) finishes as that scan instead: same result, bounded cost. 100:
 * the break-even, so a lookup costs at most about twice the cheaper of the
 * two (probes spent before the switch are lost).
 */
#define VREX_SHIE_FALLBACK_PCT 100
/*
 * What one bucket probe costs, in records of the scalar scan, on top of the
 * records it reads: the probe is a dependent random read (bucket size, then
 * the records) plus the cursor's work, the scan a sequential one. Measured
 * with the capacity-sized geometry at 4k, 16k and 100k entries: about 36 ns
 * per probe with its 8-25 records, a scalar scan record about 1.1 ns.
 * Without this weight a lookup that probes hundreds of sparse buckets never
 * reaches the budget and costs more than the scan would.
 */
#define VREX_SHIE_PROBE_COST 24
/*
 * The vector fallback scan is cheaper per record than the scalar one only
 * while the dense codes (16 B per entry) sit in L2; beyond it both stream
 * from L3 or DRAM and the probe budget gets no discount (init's default for
 * vector_l2, bytes: the L2 of the x86-64 cores measured, 1 MiB).
 */
#define VREX_SHIE_VECTOR_L2 0x100000u
/*
 * find_similar_batch: queries of one batch whose search falls back to the
 * dense scan share it, this many at a time, so each block of codes is read
 * once for the group instead of once per query.
 */
#define VREX_SHIE_SCAN_GROUP 8

/*
 * The tier of an entry (vrex_shie_entry.valid: 0 free, else one of these)
 * and the tiers a similarity query accepts (vrex_shie_query.tiers, a mask; 0:
 * every tier, the behaviour before tiers could be asked for).
 */
#define VREX_SHIE_TIER_DEVICE 1	/* vrex_shie_insert(): device memory, temporal key too */
#define VREX_SHIE_TIER_HOST 2	/* vrex_shie_insert_host(): a demoted copy, similarity only */
#define VREX_SHIE_TIERS (VREX_SHIE_TIER_DEVICE | VREX_SHIE_TIER_HOST)

/* Most answers one nearest-first query returns (vrex_shie_find_nearest()). */
#define VREX_SHIE_MAX_NEAREST 8

/* Search scope of a similarity lookup. */
#define VREX_SCOPE_STREAM 0	/* entries of the querying stream */
#define VREX_SCOPE_POOL 1	/* entries of every stream in the querying stream's pool */

/*
 * The hot part of an entry, what a lookup reads to verify a candidate: one
 * 32-byte record, so two share a cache line. Links live in a separate array.
 */
struct vrex_shie_entry {
	struct vrex_fp fp;
	u32 frame;
	u32 block;
	u32 pool;
	u16 stream;
	u8 region;
	u8 valid;		/* 0: free; else the tier, VREX_SHIE_TIER_* */
};

/*
 * The cold part of an entry, touched by insert and remove only: a link record
 * of VREX_SHIE_LINK_WORDS(m) u32, sized to the table's m so that a table with
 * few MIH tables does not pay for the maximum (m = 8 from 128k entries on:
 * 40 instead of 72 bytes per entry). Word VREX_SHIE_LINK_NEXT is the temporal
 * hash chain (the free list when not live), VREX_SHIE_LINK_PREV its back link,
 * then the slot of the entry in the bucket of each MIH table.
 */
#define VREX_SHIE_LINK_NEXT 0
#define VREX_SHIE_LINK_PREV 1
#define VREX_SHIE_LINK_POS 2
#define VREX_SHIE_LINK_WORDS(tables) (VREX_SHIE_LINK_POS + (tables))

/*
 * MIH buckets are chunk chains: chunk b (mih_base[table] + key) is the first
 * chunk of bucket b, overflow chunks come from a pool behind them.
 * A chunk holds chunk_slots records (the fingerprint word that does not hold
 * the bucket key, and the entry id) so that a probe reads candidates
 * sequentially and rejects most of them without touching the entry array.
 * Layout details: docs/hw/shie.md.
 */
/*
 * Which code path answered each similarity lookup. Counted only when the
 * table's paths pointer is set (the benchmarks set it for one untimed pass;
 * init leaves it NULL and the device has no such counters).
 */
struct vrex_shie_paths {
	u64 probes;		/* answered by the MIH probes alone */
	u64 crowd_scan;		/* stage 0 crowded: fell back to the scan before probing */
	u64 budget_scan;	/* the probes exceeded the budget: fell back to the scan */
	u64 group_scan;		/* of those fallbacks, scanned with a batch's group */
	u64 bruteforce;		/* the reference scan (the *_bruteforce entry points) */
};

struct vrex_shie_table {
	u32 capacity;
	u32 live;
	u32 free_head;		/* free entries chain through their link's next word */
	/*
	 * High-water mark: no entry at or above it was used since the last
	 * clear (all free, all zero), so the dense scans stop there. Ids come
	 * from a LIFO free list seeded in order, so the used ids stay packed
	 * at the bottom: a table that never held more than n entries scans n,
	 * not its capacity. The answers do not change (free entries never
	 * match), only what a scan reads.
	 */
	u32 top;
	u32 thash_mask;
	u32 chunk_slots;	/* records per MIH chunk */
	u32 chunk_size;		/* bytes per MIH chunk */
	u32 chunk_free;		/* released overflow chunks (0: none) */
	u32 chunk_top;		/* first never-used overflow chunk */
	u32 nchunks;
	u32 fallback_pct;	/* 0..100, init sets VREX_SHIE_FALLBACK_PCT; 0: never */
	u32 probe_cost;		/* init sets VREX_SHIE_PROBE_COST; 0: probes are free */
	u32 vector_scan;	/* 1 (init): vector fallback scan where the CPU has one */
	u32 vector_l2;		/* bytes: the vector scan's discount holds while the codes fit */
	u32 batch_scan;		/* 1 (init): a batch shares its fallback scans; 0: one by one */
	u32 mih_tables;		/* m, VREX_MIH_MIN_TABLES..VREX_MIH_MAX_TABLES */
	u32 mih_heads;		/* first chunks: the sum of 1 << mih_bits[] */
	u32 mih_base[VREX_MIH_MAX_TABLES];	/* first chunk of each table */
	u8 mih_word[VREX_MIH_MAX_TABLES];	/* fingerprint word holding the substring */
	u8 mih_shift[VREX_MIH_MAX_TABLES];	/* its lowest bit in that word */
	u8 mih_bits[VREX_MIH_MAX_TABLES];	/* its width */
	struct vrex_shie_entry *e;	/* [capacity] */
	u32 *link;			/* [capacity * VREX_SHIE_LINK_WORDS(mih_tables)] */
	u32 *thash;			/* [thash_mask + 1] heads */
	u32 *mih_count;			/* [mih_heads] bucket sizes */
	u8 *mih;			/* [nchunks] chunks of chunk_size bytes */
	struct vrex_shie_paths *paths;	/* NULL (init): nothing counted */
};

struct vrex_shie_query {
	struct vrex_fp fp;
	u32 pool;
	u16 stream;
	u8 region;
	u8 scope;		/* VREX_SCOPE_* */
	u32 radius;		/* <= VREX_SHIE_MAX_RADIUS */
	u32 frame_limit;	/* only entries with frame < frame_limit; VREX_NIL: no limit */
	u32 tiers;		/* VREX_SHIE_TIER_* accepted; 0: every tier */
};

/* The number of MIH tables init chooses for @capacity (the rule: docs/hw/shie.md). */
u32 vrex_shie_mih_tables(u32 capacity);
/* 0 for a capacity init would reject (or one whose arena does not fit in size_t). */
size_t vrex_shie_arena_size(u32 capacity);
/*
 * Returns VREX_EINVAL for capacity 0 or > VREX_SHIE_MAX_CAPACITY, VREX_ENOMEM
 * if the arena is short. The arena needs no particular alignment.
 */
int vrex_shie_init(struct vrex_shie_table *t, u32 capacity, void *arena, size_t arena_size);
/*
 * The same with a forced number of MIH tables (benchmark controls, tests):
 * the arena size is 0 and init returns VREX_EINVAL for @tables outside
 * VREX_MIH_MIN_TABLES..VREX_MIH_MAX_TABLES. Results do not depend on @tables.
 */
size_t vrex_shie_arena_size_geometry(u32 capacity, u32 tables);
int vrex_shie_init_geometry(struct vrex_shie_table *t, u32 capacity, u32 tables, void *arena,
			    size_t arena_size);
void vrex_shie_clear(struct vrex_shie_table *t);

/*
 * Returns VREX_EINVAL (region >= 16), VREX_EEXIST (an entry for
 * (stream, frame, region) exists), VREX_ENOSPC (table full).
 */
int vrex_shie_insert(struct vrex_shie_table *t, const struct vrex_fp *fp, u32 pool, u16 stream,
		     u8 region, u32 frame, u32 block, u32 *entry_out);
/*
 * A host-tier entry: found by similarity lookups only. It has no temporal key,
 * so it never collides with (stream, frame, region) of another entry (no
 * VREX_EEXIST) and temporal lookups never return it.
 */
int vrex_shie_insert_host(struct vrex_shie_table *t, const struct vrex_fp *fp, u32 pool, u16 stream,
			  u8 region, u32 frame, u32 block, u32 *entry_out);
/* Returns VREX_ENOENT for an index that is not a live entry. */
int vrex_shie_remove(struct vrex_shie_table *t, u32 entry);

u32 vrex_shie_find_temporal(const struct vrex_shie_table *t, u16 stream, u8 region, u32 frame);

/*
 * Nearest entry within q->radius, or VREX_NIL; *distance (if not NULL) is
 * written on a hit only. A query with radius > VREX_SHIE_MAX_RADIUS, an
 * unknown scope or region >= VREX_SHIE_REGIONS is invalid and matches nothing.
 */
u32 vrex_shie_find_similar(const struct vrex_shie_table *t, const struct vrex_shie_query *q,
			   u32 *distance);
/*
 * Up to @max (1..VREX_SHIE_MAX_NEAREST) entries within q->radius, nearest
 * first in the order above (the first is vrex_shie_find_similar()'s answer):
 * writes their ids to @entry and, if @distance is not NULL, their distances,
 * and returns how many. 0 for an invalid query (as above) or @max outside
 * 1..VREX_SHIE_MAX_NEAREST.
 */
u32 vrex_shie_find_nearest(const struct vrex_shie_table *t, const struct vrex_shie_query *q,
			   u32 max, u32 *entry, u32 *distance);
u32 vrex_shie_find_nearest_bruteforce(const struct vrex_shie_table *t,
				      const struct vrex_shie_query *q, u32 max, u32 *entry,
				      u32 *distance);
/*
 * @n lookups as one batch, each answered exactly as vrex_shie_find_similar
 * answers it alone: entry[i] = the nearest entry or VREX_NIL, distance[i]
 * (if @distance is not NULL) written on a hit only. Queries whose search
 * falls back to the dense scan are scanned together, VREX_SHIE_SCAN_GROUP per
 * pass over the codes (each keeps its own radius, filters and best). Returns
 * the number of hits.
 */
u32 vrex_shie_find_similar_batch(const struct vrex_shie_table *t, const struct vrex_shie_query *q,
				 u32 n, u32 *entry, u32 *distance);
u32 vrex_shie_find_similar_bruteforce(const struct vrex_shie_table *t,
				      const struct vrex_shie_query *q, u32 *distance);

/*
 * Every entry within q->radius (result set for range queries, e.g. against
 * FAISS). Writes at most @max ids to @out in unspecified order and returns the
 * total number of matches (0 for an invalid query, as above).
 */
u32 vrex_shie_find_range(const struct vrex_shie_table *t, const struct vrex_shie_query *q,
			 u32 *out, u32 max);
u32 vrex_shie_find_range_bruteforce(const struct vrex_shie_table *t,
				    const struct vrex_shie_query *q, u32 *out, u32 max);

#endif /* VREX_SHIE_TABLE_H */
