// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The device's command decoder: reads a command's arguments from the
 * argument latches, runs the operation and writes its results to the result
 * latches, STATUS and IRQ_STATUS. Semantics: docs/hardware.md.
 */
#include "vrex_model_internal.h"
#include "lifecycle_ops.h"

static u64 arg64(const struct vrex_model *m, u32 lo, u32 hi)
{
	return (u64)m->REG(hi) << 32 | m->REG(lo);
}

static void arg_fp(const struct vrex_model *m, struct vrex_fp *fp)
{
	fp->w[0] = arg64(m, VREX_REG_ARG_FP(0), VREX_REG_ARG_FP(1));
	fp->w[1] = arg64(m, VREX_REG_ARG_FP(2), VREX_REG_ARG_FP(3));
}

static void res_fp(struct vrex_model *m, const struct vrex_fp *fp)
{
	m->REG(VREX_REG_RES_FP(0)) = (u32)fp->w[0];
	m->REG(VREX_REG_RES_FP(1)) = (u32)(fp->w[0] >> 32);
	m->REG(VREX_REG_RES_FP(2)) = (u32)fp->w[1];
	m->REG(VREX_REG_RES_FP(3)) = (u32)(fp->w[1] >> 32);
}

static void res_kv(struct vrex_model *m, const struct vrex_kv_ref *kv)
{
	m->REG(VREX_REG_RES_KV_TAG) = kv->tag;
	m->REG(VREX_REG_RES_KV_ADDR_LO) = (u32)kv->addr;
	m->REG(VREX_REG_RES_KV_ADDR_HI) = (u32)(kv->addr >> 32);
	m->REG(VREX_REG_RES_KV_LEN) = kv->length;
}

static void res_block_gen(struct vrex_model *m, u64 gen)
{
	m->REG(VREX_REG_RES_BLOCK_GEN_LO) = (u32)gen;
	m->REG(VREX_REG_RES_BLOCK_GEN_HI) = (u32)(gen >> 32);
}

static void res_released(struct vrex_model *m, const struct vrex_released *rec)
{
	m->REG(VREX_REG_RES_BLOCK) = rec->block;
	res_block_gen(m, rec->gen);
	m->REG(VREX_REG_RES_STREAM) = rec->stream;
	m->REG(VREX_REG_RES_BANK_FIRST) = rec->bank;
	m->REG(VREX_REG_RES_REASON) = rec->reason;
	res_kv(m, &rec->kv);
}

static int cmd_frame(struct vrex_model *m)
{
	struct vrex_frame_result r;
	u32 stream = m->REG(VREX_REG_ARG_STREAM);
	int ret;

	ret = vrex_model_frame(m, stream, arg64(m, VREX_REG_ARG_SRC_LO, VREX_REG_ARG_SRC_HI),
			       m->REG(VREX_REG_ARG_WIDTH), m->REG(VREX_REG_ARG_HEIGHT),
			       m->REG(VREX_REG_ARG_STRIDE), &r);
	if (ret)
		return ret;
	m->REG(VREX_REG_RES_FLAGS) = (r.bank.opened ? VREX_RESF_OPENED : 0) |
				     (r.bank.conflict ? VREX_RESF_CONFLICT : 0);
	m->REG(VREX_REG_RES_STREAM) = stream;
	m->REG(VREX_REG_RES_FRAME) = r.frame;
	m->REG(VREX_REG_RES_DISTANCE) = r.bank.distance;
	m->REG(VREX_REG_RES_GROUP) = r.bank.group;
	m->REG(VREX_REG_RES_BANK_FIRST) = r.bank.bank_first;
	m->REG(VREX_REG_RES_BANK_COUNT) = r.bank.bank_count;
	res_fp(m, &r.fp);
	return 0;
}

static int cmd_insert(struct vrex_model *m)
{
	u32 flags = m->REG(VREX_REG_ARG_FLAGS);
	u32 stream = m->REG(VREX_REG_ARG_STREAM);
	u32 region = m->REG(VREX_REG_ARG_REGION);
	s32 offset = (s32)m->REG(VREX_REG_ARG_OFFSET);
	u32 alias = VREX_NIL, block;
	struct vrex_kv_ref kv;
	struct vrex_fp fp;
	u64 gen;
	int ret;

	if (flags & ~(VREX_ARGF_ALIAS | VREX_ARGF_HOST_TIER))
		return VREX_EINVAL;
	if ((flags & VREX_ARGF_ALIAS) && (flags & VREX_ARGF_HOST_TIER))
		return VREX_EINVAL;
	if (flags & VREX_ARGF_ALIAS) {
		alias = m->REG(VREX_REG_ARG_BLOCK);
		/* VREX_NIL means "no alias" to the direct call, never a block. */
		if (alias == VREX_NIL)
			return VREX_ENOENT;
		/* A generation names one incarnation of the slot: a successor is no such block. */
		gen = arg64(m, VREX_REG_ARG_BLOCK_GEN_LO, VREX_REG_ARG_BLOCK_GEN_HI);
		if (gen && (!vrex_blocks_is_live(&m->blocks, alias) ||
			    m->blocks.b[alias].gen != gen))
			return VREX_ENOENT;
	}
	arg_fp(m, &fp);
	kv.addr = arg64(m, VREX_REG_ARG_KV_ADDR_LO, VREX_REG_ARG_KV_ADDR_HI);
	kv.length = m->REG(VREX_REG_ARG_KV_LEN);
	kv.tag = m->REG(VREX_REG_ARG_KV_TAG);
	if (flags & VREX_ARGF_HOST_TIER)
		ret = vrex_model_insert_host(m, stream, region, offset, &fp, &kv, &block);
	else
		ret = vrex_model_insert(m, stream, region, offset, &fp, &kv, alias, &block);
	if (ret)
		return ret;
	m->REG(VREX_REG_RES_BLOCK) = block;
	m->REG(VREX_REG_RES_STREAM) = stream;
	m->REG(VREX_REG_RES_REGION) = region;
	m->REG(VREX_REG_RES_FRAME) = (u32)((s64)m->streams[stream].frame + offset);
	m->REG(VREX_REG_RES_BANK_FIRST) = m->blocks.b[block].bank;
	res_block_gen(m, m->blocks.b[block].gen);
	res_kv(m, &m->blocks.b[block].kv);
	return 0;
}

static void res_lookup(struct vrex_model *m, const struct vrex_lookup_result *r)
{
	m->REG(VREX_REG_RES_FLAGS) = (r->hit ? VREX_RESF_HIT : 0) |
				     (r->approx ? VREX_RESF_APPROX : 0) |
				     (r->host ? VREX_RESF_HOST_TIER : 0);
	m->REG(VREX_REG_RES_BLOCK) = r->block;
	if (!r->hit)
		return;
	m->REG(VREX_REG_RES_DISTANCE) = r->distance;
	m->REG(VREX_REG_RES_FRAME) = r->frame;
	m->REG(VREX_REG_RES_STREAM) = r->stream;
	m->REG(VREX_REG_RES_REGION) = r->region;
	m->REG(VREX_REG_RES_BANK_FIRST) = m->blocks.b[r->block].bank;
	m->REG(VREX_REG_RES_LAST_ACCESS) = m->blocks.b[r->block].last_access;
	res_block_gen(m, m->blocks.b[r->block].gen);
	res_fp(m, &r->fp);
	res_kv(m, &r->kv);
}

static int cmd_lookup(struct vrex_model *m, u32 op)
{
	u32 stream = m->REG(VREX_REG_ARG_STREAM);
	u32 region = m->REG(VREX_REG_ARG_REGION);
	struct vrex_lookup_result r;
	struct vrex_fp fp;
	int ret;

	if (op == VREX_CMD_LOOKUP_TEMPORAL) {
		ret = vrex_model_lookup_temporal(m, stream, region,
						 (s32)m->REG(VREX_REG_ARG_OFFSET), &r);
	} else {
		arg_fp(m, &fp);
		ret = vrex_model_lookup_similar(m, stream, region, &fp,
						m->REG(VREX_REG_ARG_RADIUS),
						m->REG(VREX_REG_ARG_FLAGS), &r);
	}
	if (!ret)
		res_lookup(m, &r);
	return ret;
}

static int cmd_lookup_batch(struct vrex_model *m)
{
	u32 count = m->REG(VREX_REG_ARG_COUNT), hits;
	int ret;

	ret = vrex_model_lookup_similar_batch(m, arg64(m, VREX_REG_ARG_SRC_LO, VREX_REG_ARG_SRC_HI),
					      arg64(m, VREX_REG_ARG_DST_LO, VREX_REG_ARG_DST_HI),
					      count, m->REG(VREX_REG_ARG_NEAREST), &hits);
	if (ret)
		return ret;
	m->REG(VREX_REG_RES_COUNT) = count;
	m->REG(VREX_REG_RES_TOKENS) = hits;
	return 0;
}

static int cmd_block_info(struct vrex_model *m)
{
	u32 block = m->REG(VREX_REG_ARG_BLOCK);
	struct vrex_block b;
	int ret;

	ret = vrex_model_block_info(m, block, &b);
	if (ret)
		return ret;
	m->REG(VREX_REG_RES_BLOCK) = block;
	m->REG(VREX_REG_RES_STREAM) = b.stream;
	m->REG(VREX_REG_RES_BANK_FIRST) = b.bank;
	m->REG(VREX_REG_RES_GROUP) = b.bank / m->cfg.group_banks;
	m->REG(VREX_REG_RES_COUNT) = b.nentries;
	m->REG(VREX_REG_RES_LAST_ACCESS) = b.last_access;
	res_block_gen(m, b.gen);
	res_kv(m, &b.kv);
	return 0;
}

static int cmd_pop(struct vrex_model *m)
{
	struct vrex_released rec;

	if (vrex_model_pop_released(m, &rec)) {
		m->REG(VREX_REG_RES_FLAGS) = VREX_RESF_HIT;
		res_released(m, &rec);
	} else {
		m->REG(VREX_REG_RES_BLOCK) = VREX_NIL;
	}
	m->REG(VREX_REG_RES_COUNT) = vrex_blocks_queued(&m->blocks);
	return 0;
}

static int cmd_resv(struct vrex_model *m, u32 op)
{
	u32 head = m->REG(VREX_REG_ARG_HEAD), count = m->REG(VREX_REG_ARG_COUNT);
	u64 src = arg64(m, VREX_REG_ARG_SRC_LO, VREX_REG_ARG_SRC_HI);
	struct vrex_resv_select_result s;
	struct vrex_resv_hash_result h;
	int ret;

	switch (op) {
	case VREX_CMD_RESV_HASH:
		ret = vrex_model_resv_hash(m, head, src, count, &h);
		if (ret)
			return ret;
		m->REG(VREX_REG_RES_COUNT) = h.tokens;
		m->REG(VREX_REG_RES_TOKENS) = count;
		m->REG(VREX_REG_RES_CLUSTERS) = h.clusters;
		m->REG(VREX_REG_RES_HEAD_TOKENS) = h.tokens;
		return 0;
	case VREX_CMD_RESV_SELECT:
		ret = vrex_model_resv_select(m, head, src, m->REG(VREX_REG_ARG_FLAGS),
					     arg64(m, VREX_REG_ARG_DST_LO, VREX_REG_ARG_DST_HI),
					     count, &s);
		if (ret)
			return ret;
		m->REG(VREX_REG_RES_COUNT) = s.ranges;
		m->REG(VREX_REG_RES_TOKENS) = s.sel.tokens;
		m->REG(VREX_REG_RES_CLUSTERS) = s.sel.clusters;
		m->REG(VREX_REG_RES_DISTANCE) = s.sel.cutoff;
		m->REG(VREX_REG_RES_FP(0)) = s.qhash;
		m->REG(VREX_REG_RES_HEAD_TOKENS) = m->resv.heads[head].ntokens;
		return 0;
	default:
		ret = vrex_model_resv_truncate(m, head, count);
		if (ret)
			return ret;
		m->REG(VREX_REG_RES_COUNT) = count;
		m->REG(VREX_REG_RES_CLUSTERS) = m->resv.heads[head].nclusters;
		m->REG(VREX_REG_RES_HEAD_TOKENS) = count;
		return 0;
	}
}

static int cmd_dispatch(struct vrex_model *m, u32 op)
{
	u32 stream = m->REG(VREX_REG_ARG_STREAM);
	struct vrex_released rec;
	u32 n;
	int ret;

	switch (op) {
	case VREX_CMD_NOP:
		return 0;
	case VREX_CMD_STREAM_OPEN:
		ret = vrex_model_stream_open(m, stream, m->REG(VREX_REG_ARG_POOL));
		if (!ret)
			m->REG(VREX_REG_RES_STREAM) = stream;
		return ret;
	case VREX_CMD_STREAM_CLOSE:
	case VREX_CMD_RETIRE:
		if (op == VREX_CMD_RETIRE)
			ret = vrex_model_retire(m, stream, &n);
		else
			ret = vrex_model_stream_close(m, stream, &n);
		if (ret)
			return ret;
		m->REG(VREX_REG_RES_STREAM) = stream;
		m->REG(VREX_REG_RES_COUNT) = n;
		if (op == VREX_CMD_RETIRE && n)
			m->irq_status |= VREX_IRQ_ZOMBIES;
		return 0;
	case VREX_CMD_FRAME:
		return cmd_frame(m);
	case VREX_CMD_INSERT:
		return cmd_insert(m);
	case VREX_CMD_LOOKUP_TEMPORAL:
	case VREX_CMD_LOOKUP_SIMILAR:
		return cmd_lookup(m, op);
	case VREX_CMD_LOOKUP_SIMILAR_BATCH:
		return cmd_lookup_batch(m);
	case VREX_CMD_REMOVE:
		ret = vrex_model_remove(m, m->REG(VREX_REG_ARG_BLOCK), &rec);
		if (!ret)
			res_released(m, &rec);
		return ret;
	case VREX_CMD_POP_RELEASED:
		return cmd_pop(m);
	case VREX_CMD_BLOCK_INFO:
		return cmd_block_info(m);
	case VREX_CMD_RESV_HASH:
	case VREX_CMD_RESV_SELECT:
	case VREX_CMD_RESV_TRUNCATE:
		return cmd_resv(m, op);
	default:
		return VREX_EINVAL;
	}
}

void vrex_model_run_command(struct vrex_model *m, u32 op)
{
	u32 off;
	int ret;

	for (off = RES_FIRST; off <= RES_LAST; off += 4)
		m->REG(off) = 0;
	ret = cmd_dispatch(m, op);
	if (ret) {
		m->status = VREX_STATUS_ERROR |
			    (((u32)ret << VREX_STATUS_ERRNO_SHIFT) & VREX_STATUS_ERRNO_MASK);
		m->irq_status |= VREX_IRQ_CMD_ERROR;
		m->cnt[VREX_CNT_CMD_ERRORS]++;
	} else {
		m->status = VREX_STATUS_DONE;
		m->irq_status |= VREX_IRQ_CMD_DONE;
	}
}
