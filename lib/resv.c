// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * ReSV reference model: HCU (key hashing), clustering, WTU (WiCSum) and KVMU
 * (ranges). Semantics and the choices behind them: docs/hw/resv.md.
 */
#include "resv.h"

#define RESV_ALIGN 64

/*
 * Default mass-mode weights: round(65535 * exp(6 * (cos(pi * d / 32) - 1))),
 * the softmax weight of a key at angle pi * d / 32 from the query relative to
 * a key on the query's direction, for a logit scale |q| |k| / sqrt(dim) of 6.
 * Computed offline: the model has no floating point.
 */
static const u16 resv_default_lut[VREX_RESV_LUT_SIZE] = {
	65535, 63669, 58399, 50614, 41507, 32269, 23841, 16788, 11305, 7308, 4554,
	2748, 1614, 927, 524, 292, 162, 90, 50, 28, 16, 10, 6, 4, 2, 2, 1, 1, 1, 1,
	0, 0, 0,
};

void vrex_resv_default_params(struct vrex_resv_params *p)
{
	p->th = VREX_RESV_DEFAULT_TH;
	p->ratio = VREX_RESV_DEFAULT_RATIO;
	p->mode = VREX_RESV_MODE_MASS;
	vrex_memcpy(p->lut, resv_default_lut, sizeof(p->lut));
}

/* splitmix64: one 64-bit step per call; cheap in gates and fully specified. */
static u64 resv_splitmix64(u64 *state)
{
	u64 z;

	*state += 0x9e3779b97f4a7c15ull;
	z = *state;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int vrex_resv_hcu_init(struct vrex_resv_hcu *h, u64 seed, u32 dim)
{
	u64 state = seed, bits;
	u32 r, w, b;

	if (!dim || dim > VREX_RESV_MAX_DIM)
		return VREX_EINVAL;
	/*
	 * Every row gets all VREX_RESV_DIM_WORDS words whatever the dimension,
	 * so a smaller head uses a prefix of the same hyperplanes.
	 */
	for (r = 0; r < VREX_RESV_BITS; r++)
		for (w = 0; w < VREX_RESV_DIM_WORDS; w++) {
			bits = resv_splitmix64(&state);
			for (b = 0; b < 64; b++)
				h->entry[r][w * 64 + b] = (bits >> b) & 1 ? -1 : 1;
		}
	h->seed = seed;
	h->dim = dim;
	return 0;
}

int vrex_resv_hcu_entry(const struct vrex_resv_hcu *h, u32 r, u32 i)
{
	return h->entry[r][i];
}

u32 vrex_resv_hash(const struct vrex_resv_hcu *h, const s16 *key)
{
	u32 hash = 0, r, i;
	s32 dot;

	for (r = 0; r < VREX_RESV_BITS; r++) {
		dot = 0;
		for (i = 0; i < h->dim; i++)
			dot += key[i] * h->entry[r][i];
		if (dot >= 0)
			hash |= 1u << r;
	}
	return hash;
}

struct resv_layout {
	u64 hash;
	u64 cluster;
	u64 c;
	u64 total;
};

static u64 resv_align(u64 v)
{
	return (v + RESV_ALIGN - 1) & ~(u64)(RESV_ALIGN - 1);
}

static int resv_layout(u32 max_tokens, u32 max_clusters, struct resv_layout *l)
{
	if (!max_tokens || max_tokens > VREX_RESV_MAX_TOKENS)
		return 0;
	if (!max_clusters || max_clusters > max_tokens)
		return 0;
	l->hash = 0;
	l->cluster = resv_align(l->hash + (u64)max_tokens * sizeof(u32));
	l->c = resv_align(l->cluster + (u64)max_tokens * sizeof(u32));
	/* Slack so that init can align any arena pointer. */
	l->total = l->c + (u64)max_clusters * sizeof(struct vrex_resv_cluster) + RESV_ALIGN - 1;
	return l->total <= (u64)(size_t)-1;
}

size_t vrex_resv_head_arena_size(u32 max_tokens, u32 max_clusters)
{
	struct resv_layout l;

	if (!resv_layout(max_tokens, max_clusters, &l))
		return 0;
	return (size_t)l.total;
}

int vrex_resv_head_init(struct vrex_resv_head *hd, u32 max_tokens, u32 max_clusters,
			void *arena, size_t arena_size)
{
	struct resv_layout l;
	u8 *base;

	if (!hd || !resv_layout(max_tokens, max_clusters, &l))
		return VREX_EINVAL;
	if (!arena || arena_size < l.total)
		return VREX_ENOMEM;
	base = (u8 *)arena;
	base += (RESV_ALIGN - ((uintptr_t)base & (RESV_ALIGN - 1))) & (RESV_ALIGN - 1);
	hd->max_tokens = max_tokens;
	hd->max_clusters = max_clusters;
	hd->hash = (u32 *)(base + l.hash);
	hd->cluster = (u32 *)(base + l.cluster);
	hd->c = (struct vrex_resv_cluster *)(base + l.c);
	vrex_resv_head_clear(hd);
	return 0;
}

void vrex_resv_head_clear(struct vrex_resv_head *hd)
{
	/* Only [0, ntokens) and [0, nclusters) are ever read. */
	hd->ntokens = 0;
	hd->nclusters = 0;
}

static u32 resv_distance(u32 a, u32 b)
{
	return vrex_popcount64(a ^ b);
}

int vrex_resv_add(struct vrex_resv_head *hd, u32 hash, u32 th, u32 *cluster_out, u32 *opened)
{
	struct vrex_resv_cluster *c;
	u32 best = VREX_NIL, best_d = th + 1, d, i;

	if (th > VREX_RESV_MAX_TH)
		return VREX_EINVAL;
	if (hd->ntokens >= hd->max_tokens)
		return VREX_ENOSPC;
	/* Nearest representative within th; ties go to the oldest cluster. */
	for (i = 0; i < hd->nclusters && best_d; i++) {
		d = resv_distance(hd->c[i].rep, hash);
		if (d < best_d) {
			best_d = d;
			best = i;
		}
	}
	if (best == VREX_NIL) {
		if (hd->nclusters >= hd->max_clusters)
			return VREX_ENOSPC;
		best = hd->nclusters++;
		c = &hd->c[best];
		c->rep = hash;
		c->count = 0;
		c->first = hd->ntokens;
		c->selected = 0;
	}
	c = &hd->c[best];
	c->count++;
	c->last = hd->ntokens;
	hd->hash[hd->ntokens] = hash;
	hd->cluster[hd->ntokens] = best;
	hd->ntokens++;
	if (cluster_out)
		*cluster_out = best;
	if (opened)
		*opened = c->count == 1;
	return 0;
}

/*
 * Clusters are numbered in the order of their first member, so the clusters a
 * removed token opened are a suffix of the table. The survivors' last member
 * is found again by one backward scan that stops once none is pending.
 */
int vrex_resv_truncate(struct vrex_resv_head *hd, u32 keep)
{
	struct vrex_resv_cluster *c;
	u32 t, pending = 0;

	if (keep > hd->ntokens)
		return VREX_EINVAL;
	for (t = keep; t < hd->ntokens; t++)
		hd->c[hd->cluster[t]].count--;
	while (hd->nclusters && hd->c[hd->nclusters - 1].first >= keep)
		hd->nclusters--;
	for (t = 0; t < hd->nclusters; t++) {
		c = &hd->c[t];
		if (c->last >= keep) {
			c->last = VREX_NIL;
			pending++;
		}
	}
	for (t = keep; pending && t-- > 0;) {
		c = &hd->c[hd->cluster[t]];
		if (c->last == VREX_NIL) {
			c->last = t;
			pending--;
		}
	}
	hd->ntokens = keep;
	return 0;
}

static int resv_params_valid(const struct vrex_resv_params *p)
{
	return p && p->th <= VREX_RESV_MAX_TH && p->ratio <= VREX_RESV_RATIO_ONE &&
	       p->mode <= VREX_RESV_MODE_MAX;
}

static u64 resv_weight(const struct vrex_resv_params *p, const struct vrex_resv_cluster *c,
		       u32 d)
{
	if (p->mode == VREX_RESV_MODE_TOKENS)
		return c->count;
	return (u64)c->count * p->lut[d];
}

/* cum / total >= ratio / RATIO_ONE without division: products stay below 2^57. */
static int resv_reached(u64 cum, u64 total, u32 ratio)
{
	return cum * VREX_RESV_RATIO_ONE >= total * ratio;
}

/*
 * Ranking by distance is a 33-bin counting sort: the first pass sums the
 * weight per distance, the cut-off distance is where the cumulative sum
 * reaches the threshold, the second pass selects every cluster nearer than
 * the cut-off and, at the cut-off, clusters in id order until the sum
 * reaches it. The result is the shortest prefix of the order (distance, id)
 * whose sum reaches ratio * total.
 */
int vrex_resv_select(struct vrex_resv_head *hd, u32 qhash, const struct vrex_resv_params *p,
		     struct vrex_resv_selection *sel)
{
	u64 bin[VREX_RESV_LUT_SIZE];
	struct vrex_resv_selection s;
	struct vrex_resv_cluster *c;
	u64 total = 0, cum = 0, w;
	u32 cutoff, i, d;

	if (!resv_params_valid(p))
		return VREX_EINVAL;
	vrex_memset(bin, 0, sizeof(bin));
	vrex_memset(&s, 0, sizeof(s));
	for (i = 0; i < hd->nclusters; i++) {
		c = &hd->c[i];
		c->selected = 0;
		w = resv_weight(p, c, resv_distance(c->rep, qhash));
		bin[resv_distance(c->rep, qhash)] += w;
		total += w;
	}
	s.total = total;
	/* The empty prefix reaches the threshold already (ratio 0, or nothing to weigh). */
	if (resv_reached(0, total, p->ratio)) {
		if (sel)
			*sel = s;
		return 0;
	}
	for (cutoff = 0; cutoff < VREX_RESV_LUT_SIZE; cutoff++) {
		if (resv_reached(cum + bin[cutoff], total, p->ratio))
			break;
		cum += bin[cutoff];
	}
	/* ratio <= 1 makes the whole sum reach it, so cutoff < LUT_SIZE. */
	for (i = 0; i < hd->nclusters; i++) {
		c = &hd->c[i];
		d = resv_distance(c->rep, qhash);
		if (d > cutoff)
			continue;
		if (d == cutoff) {
			if (resv_reached(cum, total, p->ratio))
				continue;
			cum += resv_weight(p, c, d);
		}
		c->selected = 1;
		s.clusters++;
		s.tokens += c->count;
		s.sum += resv_weight(p, c, d);
	}
	s.cutoff = cutoff;
	if (sel)
		*sel = s;
	return 0;
}

struct resv_ranges {
	struct vrex_resv_range *out;
	u32 max;
	u32 n;
	u32 end;		/* end of the last range, VREX_NIL before the first */
};

/* Appends [first, first + count), merged into the last range where they touch. */
static void resv_emit(struct resv_ranges *r, u32 first, u32 count)
{
	if (r->n && r->end == first) {
		if (r->n <= r->max)
			r->out[r->n - 1].count += count;
	} else {
		if (r->n < r->max) {
			r->out[r->n].first = first;
			r->out[r->n].count = count;
		}
		r->n++;
	}
	r->end = first + count;
}

/*
 * Both scans walk the token table once, the way the KVMU streams it: a range
 * is open while consecutive tokens (blocks) are selected. Ranges past @max are
 * counted by their start only, which needs no storage.
 */
u32 vrex_resv_token_ranges(const struct vrex_resv_head *hd, struct vrex_resv_range *out,
			   u32 max)
{
	struct resv_ranges r = { out, max, 0, VREX_NIL };
	u32 t, start = 0, open = 0;

	for (t = 0; t < hd->ntokens; t++) {
		if (hd->c[hd->cluster[t]].selected) {
			if (!open)
				start = t;
			open = 1;
		} else if (open) {
			resv_emit(&r, start, t - start);
			open = 0;
		}
	}
	if (open)
		resv_emit(&r, start, hd->ntokens - start);
	return r.n;
}

u32 vrex_resv_block_ranges(const struct vrex_resv_head *hd, u32 tokens_per_block,
			   struct vrex_resv_range *out, u32 max)
{
	struct resv_ranges r = { out, max, 0, VREX_NIL };
	u32 t, block = 0, in_block = 0, last = VREX_NIL;

	if (!tokens_per_block)
		return 0;
	/* block and in_block follow t, so the scan needs no division. */
	for (t = 0; t < hd->ntokens; t++) {
		if (hd->c[hd->cluster[t]].selected && block != last) {
			resv_emit(&r, block, 1);
			last = block;
		}
		if (++in_block == tokens_per_block) {
			in_block = 0;
			block++;
		}
	}
	return r.n;
}

/*
 * A selected block's weight gets this bit: weights stay below 2^48
 * (VREX_RESV_BLOCKS_MAX_TOKENS tokens of at most 2^32 each), so it never
 * collides with one. The blocks a question reads are few (the window of its
 * reach), so each pick is a linear scan for the heaviest unselected block.
 */
#define RESV_TAKEN 0x8000000000000000ull

int vrex_resv_select_blocks(const u32 *hash, const u32 *pos, u32 n, u32 tokens_per_block,
			    u32 qhash, const u16 *lut, u32 ratio, u64 *weight, u32 *out,
			    u32 max, u32 *nsel)
{
	u64 total = 0, cum = 0, w;
	u32 nblocks, b, i, best, taken = 0;

	if (!n || n > VREX_RESV_BLOCKS_MAX_TOKENS || !tokens_per_block ||
	    n % tokens_per_block || ratio > VREX_RESV_RATIO_ONE)
		return VREX_EINVAL;
	nblocks = n / tokens_per_block;
	for (b = 0; b < nblocks; b++) {
		w = 0;
		for (i = b * tokens_per_block; i < (b + 1) * tokens_per_block; i++) {
			if (pos[i] > VREX_RESV_POS_ONE)
				return VREX_EINVAL;
			w += (u64)lut[resv_distance(hash[i], qhash)] * pos[i];
		}
		weight[b] = w;
		total += w;
	}
	while (total && !resv_reached(cum, total, ratio)) {
		best = VREX_NIL;
		for (b = 0; b < nblocks; b++)
			if (!(weight[b] & RESV_TAKEN) &&
			    (best == VREX_NIL || weight[b] > weight[best]))
				best = b;
		/* ratio <= 1: the whole sum reaches it before the blocks run out. */
		if (best == VREX_NIL)
			break;
		cum += weight[best];
		weight[best] |= RESV_TAKEN;
		if (taken < max)
			out[taken] = best;
		taken++;
	}
	*nsel = taken;
	return 0;
}
