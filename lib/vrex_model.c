// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The device's setup: configuration, arena layout, init and reset. The
 * operations are in vrex_model_stream.c, vrex_model_lookup.c and
 * vrex_model_resv.c, the register file in vrex_model_cmd.c and
 * vrex_model_regs.c. Semantics: docs/hardware.md.
 */
#include "vrex_model_internal.h"
#include "lifecycle_ops.h"

#define ARENA_ALIGN 64u

struct model_layout {
	u64 streams;
	u64 cur;
	u64 mv;
	u64 shie;
	u64 blocks;
	u64 heads;		/* struct vrex_resv_head[resv_heads] */
	u64 head_arena;		/* then one arena of head_size per head */
	u64 head_size;
	u64 total;
};

static u64 align_up(u64 v)
{
	return (v + ARENA_ALIGN - 1) & ~(u64)(ARENA_ALIGN - 1);
}

void vrex_model_default_config(struct vrex_model_config *cfg)
{
	cfg->nbanks = VREX_DEFAULT_BANKS;
	cfg->group_banks = VREX_DEFAULT_GROUP_BANKS;
	cfg->bank_size = 4ull << 20;
	cfg->max_streams = 16;
	cfg->shie_capacity = 16384;
	cfg->block_capacity = 16384;
	cfg->zombie_frames = VREX_DEFAULT_ZOMBIE_FRAMES;
	cfg->resv_heads = VREX_DEFAULT_RESV_HEADS;
	cfg->resv_tokens = VREX_DEFAULT_RESV_TOKENS;
	cfg->resv_clusters = VREX_DEFAULT_RESV_TOKENS;
	cfg->hw_version = VREX_VERSION_VALUE;
}

static int config_valid(const struct vrex_model_config *cfg)
{
	if (!cfg->nbanks || cfg->nbanks > VREX_MAX_BANKS)
		return 0;
	if (!cfg->group_banks || cfg->nbanks % cfg->group_banks)
		return 0;
	/* BANK_SIZE_KB is a 32-bit register. */
	if (!cfg->bank_size || cfg->bank_size % 4096 || cfg->bank_size / 1024 > 0xffffffffull)
		return 0;
	if (!cfg->max_streams || cfg->max_streams > VREX_MAX_STREAMS)
		return 0;
	if (!cfg->shie_capacity || cfg->shie_capacity > VREX_SHIE_MAX_CAPACITY)
		return 0;
	if (!cfg->block_capacity || cfg->block_capacity > VREX_SHIE_MAX_CAPACITY)
		return 0;
	if (!cfg->zombie_frames || cfg->zombie_frames > VREX_MAX_ZOMBIE_FRAMES)
		return 0;
	if (cfg->resv_heads > VREX_MAX_RESV_HEADS)
		return 0;
	if (cfg->hw_version && cfg->hw_version != VREX_VERSION_VALUE &&
	    cfg->hw_version != VREX_VERSION_1_0)
		return 0;
	if (cfg->resv_heads && !vrex_resv_head_arena_size(cfg->resv_tokens, cfg->resv_clusters))
		return 0;
	return 1;
}

static int layout(const struct vrex_model_config *cfg, struct model_layout *l)
{
	u64 shie, blocks;

	if (!config_valid(cfg))
		return 0;
	shie = vrex_shie_arena_size(cfg->shie_capacity);
	blocks = vrex_blocks_arena_size(cfg->block_capacity, cfg->shie_capacity,
					cfg->max_streams);
	if (!shie || !blocks)
		return 0;
	l->streams = 0;
	l->cur = l->streams + align_up((u64)cfg->max_streams * sizeof(struct vrex_stream));
	l->mv = l->cur + align_up(sizeof(struct vrex_fcc_image));
	l->shie = l->mv + align_up(sizeof(struct vrex_fcc_motion));
	l->blocks = l->shie + align_up(shie);
	l->heads = l->blocks + align_up(blocks);
	l->head_arena = l->heads + align_up((u64)cfg->resv_heads * sizeof(struct vrex_resv_head));
	l->head_size = cfg->resv_heads ?
		align_up(vrex_resv_head_arena_size(cfg->resv_tokens, cfg->resv_clusters)) : 0;
	/* Slack so that any arena pointer can be aligned up. */
	l->total = l->head_arena + cfg->resv_heads * l->head_size + ARENA_ALIGN - 1;
	return l->total <= (u64)(size_t)-1;
}

size_t vrex_model_arena_size(const struct vrex_model_config *cfg)
{
	struct model_layout l;

	if (!layout(cfg, &l))
		return 0;
	return (size_t)l.total;
}

int vrex_model_init(struct vrex_model *m, const struct vrex_model_config *cfg, void *arena,
		    size_t arena_size, u8 *mem, u64 mem_size)
{
	struct vrex_shie_table shie;
	struct vrex_resv_head *heads;
	struct vrex_blocks blocks;
	struct model_layout l;
	u8 *base;
	u32 i;
	int ret;

	if (!m || !cfg || !layout(cfg, &l))
		return VREX_EINVAL;
	if (!arena || arena_size < l.total)
		return VREX_ENOMEM;
	if (!mem && mem_size)
		return VREX_EINVAL;
	if (mem_size && mem_size < cfg->nbanks * cfg->bank_size)
		return VREX_EINVAL;

	base = (u8 *)arena;
	base += (ARENA_ALIGN - ((uintptr_t)base & (ARENA_ALIGN - 1))) & (ARENA_ALIGN - 1);
	ret = vrex_shie_init(&shie, cfg->shie_capacity, base + l.shie, l.blocks - l.shie);
	if (ret)
		return ret;
	ret = vrex_blocks_init(&blocks, cfg->block_capacity, cfg->shie_capacity,
			       cfg->max_streams, base + l.blocks, l.heads - l.blocks);
	if (ret)
		return ret;
	heads = (struct vrex_resv_head *)(base + l.heads);
	for (i = 0; i < cfg->resv_heads; i++) {
		ret = vrex_resv_head_init(&heads[i], cfg->resv_tokens, cfg->resv_clusters,
					  base + l.head_arena + i * l.head_size, l.head_size);
		if (ret)
			return ret;
	}

	/* The model is large (register latches): fill it in place, never copy it. */
	vrex_memset(m, 0, sizeof(*m));
	m->cfg = *cfg;
	if (!m->cfg.hw_version)
		m->cfg.hw_version = VREX_VERSION_VALUE;
	m->mem = mem_size ? mem : NULL;
	m->mem_size = mem_size;
	m->streams = (struct vrex_stream *)(base + l.streams);
	m->cur = (struct vrex_fcc_image *)(base + l.cur);
	m->mv = (struct vrex_fcc_motion *)(base + l.mv);
	m->shie = shie;
	m->blocks = blocks;
	m->resv.heads = heads;
	vrex_model_reset(m);
	return 0;
}

void vrex_model_reset(struct vrex_model *m)
{
	vrex_memset(m->streams, 0, (size_t)m->cfg.max_streams * sizeof(struct vrex_stream));
	vrex_shie_clear(&m->shie);
	vrex_blocks_clear(&m->blocks, m->cfg.max_streams);
	vrex_memset(&m->bankmap, 0, sizeof(m->bankmap));
	vrex_bankmap_init(&m->bankmap, m->cfg.nbanks, m->cfg.group_banks);
	vrex_memset(&m->last_feat, 0, sizeof(m->last_feat));
	vrex_memset(m->last_region_motion, 0, sizeof(m->last_region_motion));
	vrex_memset(m->cnt, 0, sizeof(m->cnt));
	vrex_memset(m->regs, 0, sizeof(m->regs));
	m->REG(VREX_REG_ZOMBIE_FRAMES) = m->cfg.zombie_frames;
	vrex_model_resv_reset(m);
	m->status = 0;
	m->irq_status = 0;
	m->irq_mask = 0;
}
