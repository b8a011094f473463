// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The device's ReSV unit: reset, and the hash, select and truncate
 * operations on its heads. Semantics: docs/hw/resv.md.
 */
#include "vrex_model_internal.h"

void vrex_model_resv_reset(struct vrex_model *m)
{
	struct vrex_resv_unit *u = &m->resv;
	u32 i;

	for (i = 0; i < m->cfg.resv_heads; i++)
		vrex_resv_head_clear(&u->heads[i]);
	vrex_resv_default_params(&u->params);
	u->seed = VREX_RESV_DEFAULT_SEED;
	u->dim = VREX_RESV_DEFAULT_DIM;
	u->hcu_stale = 1;
	u->tokens_per_block = VREX_RESV_DEFAULT_TPB;
	u->bytes_per_token = 2 * 2 * VREX_RESV_DEFAULT_DIM;	/* fp16 K and V */
	vrex_memset(u->cnt, 0, sizeof(u->cnt));
}

static struct vrex_resv_head *resv_head(struct vrex_model *m, u32 head)
{
	return head < m->cfg.resv_heads ? &m->resv.heads[head] : NULL;
}

static void resv_program(struct vrex_resv_unit *u)
{
	if (!u->hcu_stale)
		return;
	/* DIM is kept within 1..VREX_RESV_MAX_DIM by the register write. */
	vrex_resv_hcu_init(&u->hcu, u->seed, u->dim);
	u->hcu_stale = 0;
}

int vrex_model_resv_hash(struct vrex_model *m, u32 head, u64 src, u32 count,
			 struct vrex_resv_hash_result *res)
{
	struct vrex_resv_unit *u = &m->resv;
	struct vrex_resv_head *hd = resv_head(m, head);
	u32 before, nc, i, opened, n = 0;
	const u8 *keys;
	int ret = 0;

	if (!hd)
		return VREX_EINVAL;
	keys = dev_mem(m, src, (u64)count * u->dim * sizeof(s16), sizeof(s16));
	if (!keys)
		return VREX_ERANGE;
	if (count > hd->max_tokens - hd->ntokens)
		return VREX_ENOSPC;
	resv_program(u);
	before = hd->ntokens;
	nc = hd->nclusters;
	for (i = 0; i < count && !ret; i++) {
		ret = vrex_resv_add(hd, vrex_resv_hash(&u->hcu, (const s16 *)keys +
						       (size_t)i * u->dim),
				    u->params.th, NULL, &opened);
		n += !ret && opened;
	}
	if (ret) {
		vrex_resv_truncate(hd, before);
		return ret;
	}
	u->cnt[VREX_RESV_CNT_KEYS] += count;
	u->cnt[VREX_RESV_CNT_CLUSTERS] += n;
	if (res) {
		res->tokens = hd->ntokens;
		res->clusters = hd->nclusters;
		res->opened = hd->nclusters - nc;
	}
	return 0;
}

int vrex_model_resv_select(struct vrex_model *m, u32 head, u64 src, u32 flags, u64 dst, u32 max,
			   struct vrex_resv_select_result *res)
{
	struct vrex_resv_unit *u = &m->resv;
	struct vrex_resv_head *hd = resv_head(m, head);
	struct vrex_resv_select_result r;
	struct vrex_resv_range *out;
	const s16 *query;
	int ret;

	if (!hd || (flags & ~VREX_ARGF_RESV_BLOCKS))
		return VREX_EINVAL;
	query = (const s16 *)dev_mem(m, src, (u64)u->dim * sizeof(s16), sizeof(s16));
	out = (struct vrex_resv_range *)dev_mem(m, dst, (u64)max * sizeof(*out), sizeof(u32));
	if (!query || (max && !out))
		return VREX_ERANGE;
	resv_program(u);
	r.qhash = vrex_resv_hash(&u->hcu, query);
	ret = vrex_resv_select(hd, r.qhash, &u->params, &r.sel);
	if (ret)
		return ret;
	if (flags & VREX_ARGF_RESV_BLOCKS)
		r.ranges = vrex_resv_block_ranges(hd, u->tokens_per_block, out, max);
	else
		r.ranges = vrex_resv_token_ranges(hd, out, max);
	u->cnt[VREX_RESV_CNT_SELECTS]++;
	u->cnt[VREX_RESV_CNT_TOKENS_SCANNED] += hd->ntokens;
	u->cnt[VREX_RESV_CNT_TOKENS_SELECTED] += r.sel.tokens;
	u->cnt[VREX_RESV_CNT_BYTES_SELECTED] += (u64)r.sel.tokens * u->bytes_per_token;
	u->cnt[VREX_RESV_CNT_RANGES] += r.ranges;
	if (res)
		*res = r;
	return 0;
}

int vrex_model_resv_truncate(struct vrex_model *m, u32 head, u32 keep)
{
	struct vrex_resv_head *hd = resv_head(m, head);

	if (!hd)
		return VREX_EINVAL;
	return vrex_resv_truncate(hd, keep);
}
