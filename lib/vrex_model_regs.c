// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The device's register file: identification, configuration, counters, FCC
 * features, bank and group tables, ReSV parameters, and the argument and
 * result latches; a write to CMD runs a command. Unknown or unaligned
 * offsets read 0 and ignore writes. Semantics: docs/hardware.md.
 */
#include "vrex_model_internal.h"

static u32 read_counter(const struct vrex_model *m, u32 off)
{
	u32 idx = (off - VREX_REG_CNT_BASE) / 8;
	u64 v = m->cnt[idx];

	return (off - VREX_REG_CNT_BASE) % 8 ? (u32)(v >> 32) : (u32)v;
}

static u32 read_resv(const struct vrex_model *m, u32 off)
{
	const struct vrex_resv_unit *u = &m->resv;
	u64 v;

	if (!m->cfg.resv_heads)
		return 0;
	if (off >= VREX_REG_RESV_LUT(0) && off <= VREX_REG_RESV_LUT(VREX_RESV_LUT_SIZE - 1))
		return u->params.lut[(off - VREX_REG_RESV_LUT(0)) / 4];
	if (off >= VREX_REG_RESV_CNT_LO(0) && off < VREX_REG_RESV_CNT_LO(VREX_RESV_CNT_NUM)) {
		v = u->cnt[(off - VREX_REG_RESV_CNT_BASE) / 8];
		return (off - VREX_REG_RESV_CNT_BASE) % 8 ? (u32)(v >> 32) : (u32)v;
	}
	switch (off) {
	case VREX_REG_RESV_SEED_LO:
		return (u32)u->seed;
	case VREX_REG_RESV_SEED_HI:
		return (u32)(u->seed >> 32);
	case VREX_REG_RESV_DIM:
		return u->dim;
	case VREX_REG_RESV_TH:
		return u->params.th;
	case VREX_REG_RESV_RATIO:
		return u->params.ratio;
	case VREX_REG_RESV_MODE:
		return u->params.mode;
	case VREX_REG_RESV_TOKENS_PER_BLOCK:
		return u->tokens_per_block;
	case VREX_REG_RESV_BYTES_PER_TOKEN:
		return u->bytes_per_token;
	case VREX_REG_RESV_HEADS:
		return m->cfg.resv_heads;
	case VREX_REG_RESV_MAX_TOKENS:
		return m->cfg.resv_tokens;
	case VREX_REG_RESV_MAX_CLUSTERS:
		return m->cfg.resv_clusters;
	default:
		return 0;
	}
}

/* Out-of-range values are ignored: the register keeps its value. */
static void write_resv(struct vrex_model *m, u32 off, u32 val)
{
	struct vrex_resv_unit *u = &m->resv;

	if (!m->cfg.resv_heads)
		return;
	if (off >= VREX_REG_RESV_LUT(0) && off <= VREX_REG_RESV_LUT(VREX_RESV_LUT_SIZE - 1)) {
		if (val <= 0xffff)
			u->params.lut[(off - VREX_REG_RESV_LUT(0)) / 4] = (u16)val;
		return;
	}
	switch (off) {
	case VREX_REG_RESV_SEED_LO:
		u->seed = (u->seed & ~0xffffffffull) | val;
		u->hcu_stale = 1;
		break;
	case VREX_REG_RESV_SEED_HI:
		u->seed = (u->seed & 0xffffffffull) | (u64)val << 32;
		u->hcu_stale = 1;
		break;
	case VREX_REG_RESV_DIM:
		if (val >= 1 && val <= VREX_RESV_MAX_DIM) {
			u->dim = val;
			u->hcu_stale = 1;
		}
		break;
	case VREX_REG_RESV_TH:
		if (val <= VREX_RESV_MAX_TH)
			u->params.th = val;
		break;
	case VREX_REG_RESV_RATIO:
		if (val <= VREX_RESV_RATIO_ONE)
			u->params.ratio = val;
		break;
	case VREX_REG_RESV_MODE:
		if (val <= VREX_RESV_MODE_MAX)
			u->params.mode = val;
		break;
	case VREX_REG_RESV_TOKENS_PER_BLOCK:
		if (val)
			u->tokens_per_block = val;
		break;
	case VREX_REG_RESV_BYTES_PER_TOKEN:
		u->bytes_per_token = val;
		break;
	default:
		break;
	}
}

static_assert(VREX_FCC_REGION_MOTION_REGS * 4 == VREX_FCC_REGIONS, "four regions a register");

static u32 region_motion_reg(const struct vrex_model *m, u32 i)
{
	const u8 *b = &m->last_region_motion[4 * i];

	return (u32)b[0] | (u32)b[1] << 8 | (u32)b[2] << 16 | (u32)b[3] << 24;
}

static u32 read_tables(const struct vrex_model *m, u32 off)
{
	u32 i;

	if (off >= VREX_REG_RESV_SEED_LO)
		return read_resv(m, off);
	if (off >= VREX_REG_BANK_KB(0) && off < VREX_REG_BANK_KB(VREX_MAX_BANKS)) {
		i = (off - VREX_REG_BANK_KB(0)) / 4;
		return i < m->cfg.nbanks ? m->REG(off) : 0;
	}
	if (off >= VREX_REG_BANK_BLOCKS(0) && off < VREX_REG_BANK_BLOCKS(VREX_MAX_BANKS)) {
		i = (off - VREX_REG_BANK_BLOCKS(0)) / 4;
		return i < m->cfg.nbanks ? m->bankmap.bank_blocks[i] : 0;
	}
	if (off >= VREX_REG_GROUP_POOL(0) && off < VREX_REG_GROUP_POOL(VREX_MAX_GROUPS)) {
		i = (off - VREX_REG_GROUP_POOL(0)) / 4;
		if (i >= m->bankmap.ngroups)
			return 0;
		return m->bankmap.group[i].in_use ? m->bankmap.group[i].pool : VREX_NIL;
	}
	return 0;
}

u32 vrex_model_read(struct vrex_model *m, u32 off)
{
	if (off >= VREX_REG_WINDOW || (off & 3))
		return 0;
	/* 1.0 has no ARG_NEAREST: an unknown offset. */
	if (off == VREX_REG_ARG_NEAREST && !model_is_1_1(m))
		return 0;
	if (off >= ARG_FIRST && off <= ARG_LAST)
		return m->REG(off);
	if (off >= RES_FIRST && off <= RES_LAST)
		return m->REG(off);
	if (off >= VREX_REG_CNT_LO(0) && off < VREX_REG_CNT_LO(VREX_CNT_NUM))
		return read_counter(m, off);

	switch (off) {
	case VREX_REG_ID:
		return VREX_ID_VALUE;
	case VREX_REG_VERSION:
		return m->cfg.hw_version;
	case VREX_REG_CAPS:
		return VREX_CAP_FCC | VREX_CAP_SHIE | VREX_CAP_POOLED | VREX_CAP_PREDICT_SLOTS |
		       (m->cfg.resv_heads ? VREX_CAP_RESV : 0);
	case VREX_REG_BANK_COUNT:
		return m->cfg.nbanks;
	case VREX_REG_BANK_SIZE_KB:
		return (u32)(m->cfg.bank_size / 1024);
	case VREX_REG_IRQ_STATUS:
		return m->irq_status;
	case VREX_REG_IRQ_MASK:
		return m->irq_mask;
	case VREX_REG_SHIE_CAPACITY:
		return m->cfg.shie_capacity;
	case VREX_REG_MAX_STREAMS:
		return m->cfg.max_streams;
	case VREX_REG_BLOCK_CAPACITY:
		return m->cfg.block_capacity;
	case VREX_REG_ZOMBIE_FRAMES:
	case VREX_REG_SCRATCH:
		return m->REG(off);
	case VREX_REG_GROUP_BANKS:
		return m->cfg.group_banks;
	case VREX_REG_STATUS:
		return m->status;
	case VREX_REG_FCC_CENTRE_MOTION:
		return m->last_feat.centre_motion;
	case VREX_REG_FCC_STATIC_RATIO:
		return m->last_feat.static_ratio;
	case VREX_REG_FCC_ROI_DX:
		return (u32)m->last_feat.roi_dx;
	case VREX_REG_FCC_ROI_DY:
		return (u32)m->last_feat.roi_dy;
	case VREX_REG_FCC_MOVING_BLOCKS:
		return m->last_feat.moving_blocks;
	case VREX_REG_FCC_REGION_MOTION(0):
	case VREX_REG_FCC_REGION_MOTION(1):
	case VREX_REG_FCC_REGION_MOTION(2):
	case VREX_REG_FCC_REGION_MOTION(3):
		return model_is_1_1(m) ?
		       region_motion_reg(m, (off - VREX_REG_FCC_REGION_MOTION(0)) / 4) : 0;
	default:
		return read_tables(m, off);
	}
}

void vrex_model_write(struct vrex_model *m, u32 off, u32 val)
{
	if (off >= VREX_REG_WINDOW || (off & 3))
		return;
	if (off == VREX_REG_ARG_NEAREST && !model_is_1_1(m))
		return;
	if (off >= ARG_FIRST && off <= ARG_LAST) {
		m->REG(off) = val;
		return;
	}
	switch (off) {
	case VREX_REG_IRQ_STATUS:
		m->irq_status &= ~val;
		break;
	case VREX_REG_IRQ_MASK:
		m->irq_mask = val & VREX_IRQ_ALL;
		break;
	case VREX_REG_RESET:
		if (val == VREX_RESET_MAGIC)
			vrex_model_reset(m);
		break;
	case VREX_REG_ZOMBIE_FRAMES:
		if (val >= 1 && val <= VREX_MAX_ZOMBIE_FRAMES)
			m->REG(off) = val;
		break;
	case VREX_REG_SCRATCH:
		m->REG(off) = val;
		break;
	case VREX_REG_CMD:
		vrex_model_run_command(m, val);
		break;
	default:
		if (off >= VREX_REG_RESV_SEED_LO)
			write_resv(m, off, val);
		break;
	}
}
