/* SPDX-License-Identifier: MIT */
/*
 * Random ReSV operation sequences on a small head: token adds (hashes near a few centres, also
 * computed by the HCU from fuzzed int16 keys), selections with fuzzed parameters, clears. Checked
 * step by step: every member within th of its representative, counts add up, the WiCSum selection
 * equals the shortest prefix of the (distance, id) order by a quadratic brute force, and the KVMU
 * token and block ranges cover exactly the selected tokens. Invalid arguments must be rejected
 * without a change.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "resv.h"

#define TOKENS 96
#define CLUSTERS 40
#define DIM 24

static u8 *arena;

static u32 dist(u32 a, u32 b)
{
	return (u32)__builtin_popcount(a ^ b);
}

static u64 weight(const struct vrex_resv_params *p, const struct vrex_resv_cluster *c, u32 d)
{
	return p->mode == VREX_RESV_MODE_TOKENS ? c->count : (u64)c->count * p->lut[d];
}

static void check_clusters(const struct vrex_resv_head *h, u32 th)
{
	u32 count[CLUSTERS] = { 0 };

	for (u32 t = 0; t < h->ntokens; t++) {
		u32 c = h->cluster[t];

		if (c >= h->nclusters || dist(h->hash[t], h->c[c].rep) > th)
			abort();
		count[c]++;
	}
	for (u32 c = 0; c < h->nclusters; c++)
		if (count[c] != h->c[c].count || !count[c] || h->hash[h->c[c].first] != h->c[c].rep)
			abort();
}

/* The quadratic brute force: repeatedly take the unselected cluster first in (distance, id). */
static void check_selection(const struct vrex_resv_head *h, u32 q, const struct vrex_resv_params *p,
			    const struct vrex_resv_selection *sel)
{
	u8 want[CLUSTERS] = { 0 };
	u64 total = 0, cum = 0;

	for (u32 c = 0; c < h->nclusters; c++)
		total += weight(p, &h->c[c], dist(h->c[c].rep, q));
	for (;;) {
		u32 best = VREX_NIL;

		if ((unsigned __int128)cum * VREX_RESV_RATIO_ONE >= (unsigned __int128)total * p->ratio)
			break;
		for (u32 c = 0; c < h->nclusters; c++)
			if (!want[c] && (best == VREX_NIL ||
					 dist(h->c[c].rep, q) < dist(h->c[best].rep, q)))
				best = c;
		if (best == VREX_NIL)
			abort();	/* the whole sum always reaches ratio <= 1 */
		want[best] = 1;
		cum += weight(p, &h->c[best], dist(h->c[best].rep, q));
	}
	if (sel->total != total || sel->sum != cum)
		abort();
	for (u32 c = 0; c < h->nclusters; c++)
		if (want[c] != h->c[c].selected)
			abort();
}

static void check_ranges(const struct vrex_resv_head *h, u32 tpb)
{
	struct vrex_resv_range r[TOKENS];
	u8 covered[TOKENS] = { 0 }, blocks[TOKENS] = { 0 };
	u32 n = vrex_resv_token_ranges(h, r, TOKENS), end = 0;

	for (u32 i = 0; i < n; i++) {
		if (!r[i].count || (i && r[i].first <= end) || r[i].first + r[i].count > h->ntokens)
			abort();
		for (u32 t = r[i].first; t < r[i].first + r[i].count; t++)
			covered[t] = 1;
		end = r[i].first + r[i].count;
	}
	for (u32 t = 0; t < h->ntokens; t++)
		if (covered[t] != h->c[h->cluster[t]].selected)
			abort();
	n = vrex_resv_block_ranges(h, tpb, r, TOKENS);
	end = 0;
	for (u32 i = 0; i < n; i++) {
		if (!r[i].count || (i && r[i].first <= end))
			abort();
		for (u32 b = r[i].first; b < r[i].first + r[i].count; b++)
			blocks[b] = 1;
		end = r[i].first + r[i].count;
	}
	for (u32 t = 0; t < h->ntokens; t++)
		if (h->c[h->cluster[t]].selected && !blocks[t / tpb])
			abort();
	for (u32 b = 0; b < TOKENS; b++) {
		u32 any = 0;

		for (u32 t = b * tpb; t < h->ntokens && t < (b + 1) * tpb; t++)
			any |= h->c[h->cluster[t]].selected;
		if (blocks[b] != any)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { data, size, 0 };
	static struct vrex_resv_head h;
	static struct vrex_resv_hcu hcu;
	struct vrex_resv_params p;
	size_t need = vrex_resv_head_arena_size(TOKENS, CLUSTERS);
	u32 centres[4], th;

	if (!arena)
		arena = malloc(need);
	if (!need || !arena || vrex_resv_head_init(&h, TOKENS, CLUSTERS, arena, need))
		abort();
	if (vrex_resv_hcu_init(&hcu, fuzz_take(&in, 8), DIM))
		abort();
	vrex_resv_default_params(&p);
	for (int i = 0; i < 4; i++)
		centres[i] = (u32)fuzz_take(&in, 4);
	th = (u32)fuzz_take(&in, 1) % 40;	/* > VREX_RESV_MAX_TH sometimes */

	while (!fuzz_done(&in)) {
		u32 op = (u32)fuzz_take(&in, 1) % 8, hash, before = h.ntokens, nc = h.nclusters;
		struct vrex_resv_selection sel;
		s16 key[DIM];
		int ret;

		switch (op) {
		case 0:
		case 1:
		case 2:
			hash = centres[fuzz_take(&in, 1) % 4] ^ (u32)fuzz_take(&in, 1) << (fuzz_take(&in, 1) % 32);
			goto add;
		case 3:
			for (int i = 0; i < DIM; i++)
				key[i] = (s16)fuzz_take(&in, 2);
			hash = vrex_resv_hash(&hcu, key);
add:
			ret = vrex_resv_add(&h, hash, th, NULL, NULL);
			if (th > VREX_RESV_MAX_TH) {
				if (ret != VREX_EINVAL || h.ntokens != before)
					abort();
				th %= VREX_RESV_MAX_TH + 1;
				break;
			}
			if (ret == VREX_ENOSPC) {
				if (h.ntokens != before || h.nclusters != nc)
					abort();
				break;
			}
			if (ret || h.ntokens != before + 1)
				abort();
			check_clusters(&h, th);
			break;
		case 4:
		case 5:
		case 6:
			p.ratio = (u32)fuzz_take(&in, 3) % (VREX_RESV_RATIO_ONE + 2);
			p.mode = (u32)fuzz_take(&in, 1) % 3;
			if (fuzz_take(&in, 1) & 1)
				for (int i = 0; i < VREX_RESV_LUT_SIZE; i++)
					p.lut[i] = (u16)fuzz_take(&in, 2);
			hash = (u32)fuzz_take(&in, 4);
			ret = vrex_resv_select(&h, hash, &p, &sel);
			if (p.ratio > VREX_RESV_RATIO_ONE || p.mode > VREX_RESV_MODE_MAX) {
				if (ret != VREX_EINVAL)
					abort();
				vrex_resv_default_params(&p);
				break;
			}
			if (ret)
				abort();
			check_selection(&h, hash, &p, &sel);
			check_ranges(&h, 1 + (u32)fuzz_take(&in, 1) % 16);
			break;
		default:
			if (fuzz_take(&in, 1) % 8 == 0)
				vrex_resv_head_clear(&h);
			break;
		}
	}
	return 0;
}
