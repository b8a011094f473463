/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * Internal to lib/: what the files of the device model share (vrex_model.c
 * setup, vrex_model_stream.c, vrex_model_lookup.c, vrex_model_resv.c,
 * vrex_model_cmd.c, vrex_model_regs.c). Not installed; the public contract is
 * vrex_model.h.
 */
#ifndef VREX_MODEL_INTERNAL_H
#define VREX_MODEL_INTERNAL_H

#include "vrex_model.h"

#define ARG_FIRST VREX_REG_ARG_STREAM
#define ARG_LAST VREX_REG_ARG_LAST
#define RES_FIRST VREX_REG_RES_FLAGS
#define RES_LAST VREX_REG_RES_LAST
#define REG(off) regs[(off) / 4]

/* What 1.1 added (vrex_regs.h): ARG_NEAREST, tier flags, RESF_HOST_TIER, region motion. */
static inline int model_is_1_1(const struct vrex_model *m)
{
	return m->cfg.hw_version >= VREX_VERSION_NEAREST;
}

static inline struct vrex_stream *open_stream(struct vrex_model *m, u32 stream)
{
	if (stream >= m->cfg.max_streams || !m->streams[stream].open)
		return NULL;
	return &m->streams[stream];
}

/* An open stream that has a current frame. */
static inline struct vrex_stream *framed_stream(struct vrex_model *m, u32 stream)
{
	struct vrex_stream *s = open_stream(m, stream);

	return s && s->nframes ? s : NULL;
}

static inline int frame_at(const struct vrex_stream *s, s32 offset, u32 *frame)
{
	s64 f = (s64)s->frame + offset;

	if (offset < VREX_SHIE_OFF_MIN || offset > VREX_SHIE_OFF_MAX || f < 0)
		return VREX_ERANGE;
	*frame = (u32)f;
	return 0;
}

/* A host-tier entry's frame: any frame of the stream up to the current one. */
static inline int host_frame_at(const struct vrex_stream *s, s32 offset, u32 *frame)
{
	s64 f = (s64)s->frame + offset;

	if (offset > 0 || f < 0)
		return VREX_ERANGE;
	*frame = (u32)f;
	return 0;
}

/* A device range of @len bytes at @addr, aligned to @align, or NULL. */
static inline u8 *dev_mem(struct vrex_model *m, u64 addr, u64 len, u32 align)
{
	if (!m->mem || addr % align || addr > m->mem_size || len > m->mem_size - addr)
		return NULL;
	return m->mem + addr;
}

static inline void sync_live(struct vrex_model *m)
{
	m->cnt[VREX_CNT_LIVE_ENTRIES] = m->shie.live;
	m->cnt[VREX_CNT_LIVE_BLOCKS] = m->blocks.live;
}

/* The ReSV unit's state after reset (vrex_model_resv.c). */
void vrex_model_resv_reset(struct vrex_model *m);
/* Runs command @op from the argument latches (vrex_model_cmd.c). */
void vrex_model_run_command(struct vrex_model *m, u32 op);

#endif /* VREX_MODEL_INTERNAL_H */
