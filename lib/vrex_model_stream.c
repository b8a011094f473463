// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The device's stream and block operations: open and close a stream, run the
 * FCC on a frame, insert an entry (with its block), remove, retire, pop a
 * release record, read a block. Each validates everything, then mutates.
 * Semantics: docs/hardware.md.
 */
#include "vrex_model_internal.h"
#include "lifecycle_ops.h"

int vrex_model_stream_open(struct vrex_model *m, u32 stream, u32 pool)
{
	struct vrex_stream *s;

	if (stream >= m->cfg.max_streams)
		return VREX_EINVAL;
	s = &m->streams[stream];
	if (s->open)
		return VREX_EBUSY;
	if (pool >= VREX_POOL_PRIVATE && pool != VREX_POOL_PRIVATE + stream)
		return VREX_EINVAL;
	vrex_memset(s, 0, sizeof(*s));
	s->open = 1;
	s->pool = pool;
	return 0;
}

int vrex_model_stream_close(struct vrex_model *m, u32 stream, u32 *released)
{
	struct vrex_stream *s = open_stream(m, stream);
	u32 n, pool, t;

	if (!s)
		return VREX_EINVAL;
	n = vrex_lifecycle_release_stream(m, stream);
	pool = s->pool;
	vrex_memset(s, 0, sizeof(*s));
	for (t = 0; t < m->cfg.max_streams; t++)
		if (m->streams[t].open && m->streams[t].pool == pool)
			break;
	if (t == m->cfg.max_streams)
		vrex_bankmap_release_pool(&m->bankmap, pool);
	sync_live(m);
	if (released)
		*released = n;
	return 0;
}

int vrex_model_frame(struct vrex_model *m, u32 stream, u64 src, u32 width, u32 height,
		     u32 stride, struct vrex_frame_result *res)
{
	struct vrex_stream *s = open_stream(m, stream);
	struct vrex_fcc_features feat;
	struct vrex_bank_assign bank;
	struct vrex_fp fp;
	u64 extent;
	int ret;

	if (!s || !m->mem)
		return VREX_EINVAL;
	if (!width || !height || stride < width)
		return VREX_EINVAL;
	extent = (u64)(height - 1) * stride + width;
	if (src > m->mem_size || extent > m->mem_size - src)
		return VREX_ERANGE;
	/* Only the scratch images change before this succeeds. */
	ret = vrex_fcc_fingerprint(m->mem + src, width, height, stride,
				   s->has_prev ? &s->prev : NULL, m->cur, m->mv, &fp, &feat);
	if (ret)
		return ret;

	vrex_bankmap_assign(&m->bankmap, &fp, s->pool, &bank);
	s->frame = s->nframes;
	s->nframes++;
	s->group = bank.group;
	s->fp = fp;
	s->prev = *m->cur;
	s->has_prev = 1;
	m->last_feat = feat;
	/* From the vectors the search just wrote: a first frame's are zero (no motion). */
	vrex_fcc_region_motion(m->mv, m->last_region_motion);
	m->cnt[VREX_CNT_FRAMES]++;
	if (bank.conflict)
		m->cnt[VREX_CNT_BANK_CONFLICTS]++;
	if (res) {
		res->fp = fp;
		res->feat = feat;
		res->bank = bank;
		res->frame = s->frame;
		vrex_memcpy(res->region_motion, m->last_region_motion, sizeof(res->region_motion));
	}
	return 0;
}

/* The bank holding the whole KV range (VREX_BANK_NONE: external memory), or VREX_ERANGE. */
static int kv_bank(const struct vrex_model *m, const struct vrex_kv_ref *kv, u8 *bank)
{
	u64 b;

	if (!kv->length)
		return VREX_ERANGE;
	if (kv->addr & VREX_KV_ADDR_EXTERNAL) {
		/* The range must not wrap past the top of the external address space. */
		if ((kv->addr & ~VREX_KV_ADDR_EXTERNAL) + kv->length > VREX_KV_ADDR_EXTERNAL)
			return VREX_ERANGE;
		*bank = VREX_BANK_NONE;
		return 0;
	}
	b = kv->addr / m->cfg.bank_size;
	if (b >= m->cfg.nbanks || kv->addr % m->cfg.bank_size + kv->length > m->cfg.bank_size)
		return VREX_ERANGE;
	*bank = (u8)b;
	return 0;
}

int vrex_model_insert(struct vrex_model *m, u32 stream, u32 region, s32 offset,
		      const struct vrex_fp *fp, const struct vrex_kv_ref *kv, u32 alias_block,
		      u32 *block_out)
{
	struct vrex_stream *s = framed_stream(m, stream);
	u32 frame, block, entry;
	u8 bank;
	int ret;

	if (!s || !fp)
		return VREX_EINVAL;
	if (region >= VREX_SHIE_REGIONS)
		return VREX_ERANGE;
	ret = frame_at(s, offset, &frame);
	if (ret)
		return ret;

	if (alias_block != VREX_NIL) {
		if (!vrex_blocks_is_live(&m->blocks, alias_block))
			return VREX_ENOENT;
		ret = vrex_shie_insert(&m->shie, fp, s->pool, (u16)stream, (u8)region, frame,
				       alias_block, &entry);
		if (ret)
			return ret;
		block = alias_block;
		vrex_lifecycle_touch(m, block);
	} else {
		if (!kv)
			return VREX_EINVAL;
		ret = kv_bank(m, kv, &bank);
		if (ret)
			return ret;
		block = vrex_blocks_alloc(&m->blocks, (u16)stream, bank, kv, s->frame);
		if (block == VREX_NIL)
			return VREX_ENOSPC;
		ret = vrex_shie_insert(&m->shie, fp, s->pool, (u16)stream, (u8)region, frame,
				       block, &entry);
		if (ret) {
			vrex_blocks_undo_alloc(&m->blocks, block);
			return ret;
		}
		vrex_lifecycle_account(m, &m->blocks.b[block], 1);
	}
	vrex_blocks_link_entry(&m->blocks, block, entry);
	m->cnt[VREX_CNT_INSERTS]++;
	sync_live(m);
	if (block_out)
		*block_out = block;
	return 0;
}

int vrex_model_insert_host(struct vrex_model *m, u32 stream, u32 region, s32 offset,
			   const struct vrex_fp *fp, const struct vrex_kv_ref *kv, u32 *block_out)
{
	struct vrex_stream *s = framed_stream(m, stream);
	u32 frame, block, entry;
	u8 bank;
	int ret;

	if (!s || !fp || !kv)
		return VREX_EINVAL;
	if (region >= VREX_SHIE_REGIONS)
		return VREX_ERANGE;
	ret = host_frame_at(s, offset, &frame);
	if (ret)
		return ret;
	ret = kv_bank(m, kv, &bank);
	if (ret)
		return ret;
	/* Device memory is aged by zombie release: only the host's own memory is a host tier. */
	if (bank != VREX_BANK_NONE)
		return VREX_EINVAL;
	block = vrex_blocks_alloc(&m->blocks, (u16)stream, bank, kv, s->frame);
	if (block == VREX_NIL)
		return VREX_ENOSPC;
	ret = vrex_shie_insert_host(&m->shie, fp, s->pool, (u16)stream, (u8)region, frame, block,
				    &entry);
	if (ret) {
		vrex_blocks_undo_alloc(&m->blocks, block);
		return ret;
	}
	m->blocks.b[block].host = 1;
	vrex_lifecycle_account(m, &m->blocks.b[block], 1);
	vrex_blocks_link_entry(&m->blocks, block, entry);
	m->cnt[VREX_CNT_INSERTS]++;
	sync_live(m);
	if (block_out)
		*block_out = block;
	return 0;
}

int vrex_model_remove(struct vrex_model *m, u32 block, struct vrex_released *rec)
{
	if (!vrex_blocks_is_live(&m->blocks, block))
		return VREX_ENOENT;
	vrex_lifecycle_release(m, block, VREX_RELEASE_REMOVED, rec);
	m->cnt[VREX_CNT_REMOVES]++;
	sync_live(m);
	return 0;
}

int vrex_model_retire(struct vrex_model *m, u32 stream, u32 *released)
{
	u32 n;

	if (!open_stream(m, stream))
		return VREX_EINVAL;
	n = vrex_lifecycle_retire(m, stream, m->REG(VREX_REG_ZOMBIE_FRAMES));
	m->cnt[VREX_CNT_EVICTIONS] += n;
	sync_live(m);
	if (released)
		*released = n;
	return 0;
}

int vrex_model_pop_released(struct vrex_model *m, struct vrex_released *rec)
{
	return vrex_blocks_pop_released(&m->blocks, rec);
}

int vrex_model_block_info(const struct vrex_model *m, u32 block, struct vrex_block *out)
{
	if (!vrex_blocks_is_live(&m->blocks, block))
		return VREX_ENOENT;
	if (out)
		*out = m->blocks.b[block];
	return 0;
}
