// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * One SHIE similarity search: the MIH probe schedule (stages in order of
 * substring distance, prefetched ahead), its budget and its fallback to the
 * dense scan (shie_scan.h), compiled generic and as a popcnt clone; and the
 * single-query lookups built on it. Exactness argument: docs/hw/shie.md.
 */
#include "shie_internal.h"
#include "shie_scan.h"

/*
 * How many records of the scalar scan one record of the vector scan costs,
 * for the probe budget (measured on AMD Zen 4 at 16k entries: about 4-5).
 */
#define SHIE_VECTOR_GAIN 4

#define SHIE_CROWD_DIV 8	/* stage-0 records > budget / this: scan at once */

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
		/*
		 * The scan reads the entries below the high-water mark
		 * (vrex_shie_table.top), not the capacity: on a sparse
		 * table a long probe schedule (a wide radius) costs far
		 * more than that scan, and the budget says so.
		 */
		budget = t->top / 100 * t->fallback_pct + t->top % 100 * t->fallback_pct / 100;
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
		if (vec && (u64)t->top * sizeof(struct vrex_fp) <= t->vector_l2)
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
					sr->fallback = SHIE_FALLBACK_CROWD;
					shie_fall_back(sr, hw, vec);
					return;
				}
			}
			tb = (item >> SHIE_TABLE_SHIFT) & 0xff;
			key = item & SHIE_KEY_MASK;
			records += mih_prefetch_records(t, t->mih_base[tb] + key) + t->probe_cost;
			if (records > budget) {
				sr->fallback = SHIE_FALLBACK_BUDGET;
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

void vrex_shie_search(struct shie_search *sr)
{
	struct vrex_shie_paths *p = sr->t->paths;

	mih_search(sr);
	if (!p)
		return;
	if (sr->fallback == SHIE_FALLBACK_CROWD)
		p->crowd_scan++;
	else if (sr->fallback == SHIE_FALLBACK_BUDGET)
		p->budget_scan++;
	else
		p->probes++;
	p->group_scan += sr->deferred;
}

/* The reference: portable code only, whatever the host offers. */
static void shie_bruteforce(struct shie_search *sr)
{
	if (sr->t->paths)
		sr->t->paths->bruteforce++;
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
		vrex_shie_search(&sr);
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
		vrex_shie_search(&sr);
	return sr.count;
}

static u32 shie_nearest_n(const struct vrex_shie_table *t, const struct vrex_shie_query *q,
			  u32 max, u32 *entry, u32 *distance, int brute)
{
	struct shie_search sr;
	u32 i;

	if (!shie_query_valid(q) || !max || max > VREX_SHIE_MAX_NEAREST)
		return 0;
	if (max == 1) {
		entry[0] = shie_nearest(t, q, distance, brute);
		return entry[0] != VREX_NIL;
	}
	shie_search_init(&sr, t, q, 0, NULL, 0);
	sr.want = max;
	if (brute)
		shie_bruteforce(&sr);
	else
		vrex_shie_search(&sr);
	for (i = 0; i < sr.nkept; i++) {
		entry[i] = sr.kept_id[i];
		if (distance)
			distance[i] = sr.kept_distance[i];
	}
	return sr.nkept;
}

u32 vrex_shie_find_nearest(const struct vrex_shie_table *t, const struct vrex_shie_query *q,
			   u32 max, u32 *entry, u32 *distance)
{
	return shie_nearest_n(t, q, max, entry, distance, 0);
}

u32 vrex_shie_find_nearest_bruteforce(const struct vrex_shie_table *t,
				      const struct vrex_shie_query *q, u32 max, u32 *entry,
				      u32 *distance)
{
	return shie_nearest_n(t, q, max, entry, distance, 1);
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
