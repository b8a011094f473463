// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The device: configuration and arena layout, the operations every command
 * executes (validate everything, then mutate) and the register file that
 * decodes commands. Semantics: docs/hardware.md.
 */
#include "vrex_model.h"
#include "lifecycle_ops.h"

#define ARENA_ALIGN 64u
#define ARG_FIRST VREX_REG_ARG_STREAM
#define ARG_LAST VREX_REG_ARG_LAST
#define RES_FIRST VREX_REG_RES_FLAGS
#define RES_LAST VREX_REG_RES_LAST
#define SIMILAR_FLAGS (VREX_ARGF_SCOPE_POOL | VREX_ARGF_PAST_ONLY)
#define REG(off) regs[(off) / 4]

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

static void sync_live(struct vrex_model *m)
{
	m->cnt[VREX_CNT_LIVE_ENTRIES] = m->shie.live;
	m->cnt[VREX_CNT_LIVE_BLOCKS] = m->blocks.live;
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

static void resv_reset(struct vrex_model *m)
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

void vrex_model_reset(struct vrex_model *m)
{
	vrex_memset(m->streams, 0, (size_t)m->cfg.max_streams * sizeof(struct vrex_stream));
	vrex_shie_clear(&m->shie);
	vrex_blocks_clear(&m->blocks, m->cfg.max_streams);
	vrex_memset(&m->bankmap, 0, sizeof(m->bankmap));
	vrex_bankmap_init(&m->bankmap, m->cfg.nbanks, m->cfg.group_banks);
	vrex_memset(&m->last_feat, 0, sizeof(m->last_feat));
	vrex_memset(m->cnt, 0, sizeof(m->cnt));
	vrex_memset(m->regs, 0, sizeof(m->regs));
	m->REG(VREX_REG_ZOMBIE_FRAMES) = m->cfg.zombie_frames;
	resv_reset(m);
	m->status = 0;
	m->irq_status = 0;
	m->irq_mask = 0;
}

/* ---- operations ---------------------------------------------------------- */

static struct vrex_stream *open_stream(struct vrex_model *m, u32 stream)
{
	if (stream >= m->cfg.max_streams || !m->streams[stream].open)
		return NULL;
	return &m->streams[stream];
}

/* An open stream that has a current frame. */
static struct vrex_stream *framed_stream(struct vrex_model *m, u32 stream)
{
	struct vrex_stream *s = open_stream(m, stream);

	return s && s->nframes ? s : NULL;
}

static int frame_at(const struct vrex_stream *s, s32 offset, u32 *frame)
{
	s64 f = (s64)s->frame + offset;

	if (offset < VREX_SHIE_OFF_MIN || offset > VREX_SHIE_OFF_MAX || f < 0)
		return VREX_ERANGE;
	*frame = (u32)f;
	return 0;
}

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
	m->cnt[VREX_CNT_FRAMES]++;
	if (bank.conflict)
		m->cnt[VREX_CNT_BANK_CONFLICTS]++;
	if (res) {
		res->fp = fp;
		res->feat = feat;
		res->bank = bank;
		res->frame = s->frame;
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

static void lookup_miss(struct vrex_lookup_result *res)
{
	vrex_memset(res, 0, sizeof(*res));
	res->block = VREX_NIL;
}

static void lookup_hit(struct vrex_model *m, u32 entry, u32 distance,
		       struct vrex_lookup_result *res)
{
	const struct vrex_shie_entry *e = &m->shie.e[entry];

	vrex_lifecycle_touch(m, e->block);
	res->hit = 1;
	res->approx = distance > 0;
	res->distance = distance;
	res->block = e->block;
	res->frame = e->frame;
	res->stream = e->stream;
	res->region = e->region;
	res->fp = e->fp;
	res->kv = m->blocks.b[e->block].kv;
}

int vrex_model_lookup_temporal(struct vrex_model *m, u32 stream, u32 region, s32 offset,
			       struct vrex_lookup_result *res)
{
	struct vrex_stream *s = framed_stream(m, stream);
	struct vrex_lookup_result r;
	u32 frame, entry;
	int ret;

	if (!s)
		return VREX_EINVAL;
	if (region >= VREX_SHIE_REGIONS)
		return VREX_ERANGE;
	ret = frame_at(s, offset, &frame);
	if (ret)
		return ret;

	m->cnt[VREX_CNT_LOOKUPS]++;
	entry = vrex_shie_find_temporal(&m->shie, (u16)stream, (u8)region, frame);
	lookup_miss(&r);
	if (entry == VREX_NIL) {
		m->cnt[VREX_CNT_MISSES]++;
	} else {
		lookup_hit(m, entry, 0, &r);
		m->cnt[VREX_CNT_EXACT_HITS]++;
	}
	if (res)
		*res = r;
	return 0;
}

/* LOOKUP_SIMILAR_BATCH: the descriptor checks that fail the whole command. */
static int similar_args(struct vrex_model *m, u32 stream, u32 region, u32 radius, u32 flags)
{
	if (!open_stream(m, stream) || radius > VREX_SHIE_MAX_RADIUS || (flags & ~SIMILAR_FLAGS))
		return VREX_EINVAL;
	return region >= VREX_SHIE_REGIONS ? VREX_ERANGE : 0;
}

/* The query LOOKUP_SIMILAR runs, or the code it refuses it with. */
static int similar_query(struct vrex_model *m, u32 stream, u32 region, const struct vrex_fp *fp,
			 u32 radius, u32 flags, struct vrex_shie_query *q)
{
	struct vrex_stream *s = open_stream(m, stream);

	if (!s || !fp || radius > VREX_SHIE_MAX_RADIUS || (flags & ~SIMILAR_FLAGS))
		return VREX_EINVAL;
	if ((flags & VREX_ARGF_PAST_ONLY) && !s->nframes)
		return VREX_EINVAL;
	if (region >= VREX_SHIE_REGIONS)
		return VREX_ERANGE;

	q->fp = *fp;
	q->pool = s->pool;
	q->stream = (u16)stream;
	q->region = (u8)region;
	q->scope = (flags & VREX_ARGF_SCOPE_POOL) ? VREX_SCOPE_POOL : VREX_SCOPE_STREAM;
	q->radius = radius;
	q->frame_limit = (flags & VREX_ARGF_PAST_ONLY) ? s->frame : VREX_NIL;
	return 0;
}

/* Counts a similarity lookup's outcome and touches the block it found. */
static void similar_result(struct vrex_model *m, u32 entry, u32 distance,
			   struct vrex_lookup_result *r)
{
	m->cnt[VREX_CNT_LOOKUPS]++;
	lookup_miss(r);
	if (entry == VREX_NIL) {
		m->cnt[VREX_CNT_MISSES]++;
	} else {
		lookup_hit(m, entry, distance, r);
		m->cnt[distance ? VREX_CNT_APPROX_HITS : VREX_CNT_EXACT_HITS]++;
	}
}

int vrex_model_lookup_similar(struct vrex_model *m, u32 stream, u32 region,
			      const struct vrex_fp *fp, u32 radius, u32 flags,
			      struct vrex_lookup_result *res)
{
	struct vrex_lookup_result r;
	struct vrex_shie_query q;
	u32 entry, distance = 0;
	int ret;

	ret = similar_query(m, stream, region, fp, radius, flags, &q);
	if (ret)
		return ret;
	entry = vrex_shie_find_similar(&m->shie, &q, &distance);
	similar_result(m, entry, distance, &r);
	if (res)
		*res = r;
	return 0;
}

/* What LOOKUP_SIMILAR leaves in RES_*, as one little-endian record. */
static void batch_record(const struct vrex_model *m, u32 status,
			 const struct vrex_lookup_result *r, u8 *out)
{
	struct vrex_lookup_rec rec;

	vrex_memset(&rec, 0, sizeof(rec));
	rec.status = vrex_cpu_to_le32(status);
	rec.block = vrex_cpu_to_le32(VREX_NIL);
	if (!status) {
		rec.flags = vrex_cpu_to_le32((r->hit ? VREX_RESF_HIT : 0) |
					     (r->approx ? VREX_RESF_APPROX : 0));
		rec.block = vrex_cpu_to_le32(r->block);
	}
	if (!status && r->hit) {
		rec.distance = vrex_cpu_to_le32(r->distance);
		rec.frame = vrex_cpu_to_le32(r->frame);
		rec.stream = vrex_cpu_to_le32(r->stream);
		rec.region = (u8)r->region;
		rec.bank = m->blocks.b[r->block].bank;
		rec.last_access = vrex_cpu_to_le32(m->blocks.b[r->block].last_access);
		rec.fp[0] = vrex_cpu_to_le64(r->fp.w[0]);
		rec.fp[1] = vrex_cpu_to_le64(r->fp.w[1]);
		rec.kv_addr = vrex_cpu_to_le64(r->kv.addr);
		rec.kv_tag = vrex_cpu_to_le32(r->kv.tag);
		rec.kv_len = vrex_cpu_to_le32(r->kv.length);
	}
	vrex_memcpy(out, &rec, sizeof(rec));
}

/* A device range of @len bytes at @addr, aligned to @align, or NULL. */
static u8 *dev_mem(struct vrex_model *m, u64 addr, u64 len, u32 align)
{
	if (!m->mem || addr % align || addr > m->mem_size || len > m->mem_size - addr)
		return NULL;
	return m->mem + addr;
}

int vrex_model_lookup_similar_batch(struct vrex_model *m, u64 src, u64 dst, u32 count, u32 *hits)
{
	struct vrex_lookup_batch *b = &m->batch;
	struct vrex_lookup_desc d;
	struct vrex_lookup_result r;
	struct vrex_fp fp;
	const u8 *in;
	u32 i, n = 0, nhits = 0, stream, region, radius, flags;
	u8 *out;
	int ret;

	if (!count || count > VREX_LOOKUP_BATCH_MAX)
		return VREX_EINVAL;
	in = dev_mem(m, src, (u64)count * sizeof(d), 8);
	out = dev_mem(m, dst, (u64)count * sizeof(struct vrex_lookup_rec), 8);
	if (!in || !out)
		return VREX_ERANGE;

	/* Every descriptor is read and checked before anything changes. */
	for (i = 0; i < count; i++) {
		vrex_memcpy(&d, in + (size_t)i * sizeof(d), sizeof(d));
		fp.w[0] = vrex_le64_to_cpu(d.fp[0]);
		fp.w[1] = vrex_le64_to_cpu(d.fp[1]);
		stream = vrex_le32_to_cpu(d.stream);
		region = vrex_le32_to_cpu(d.region);
		radius = vrex_le32_to_cpu(d.radius);
		flags = vrex_le32_to_cpu(d.flags);
		ret = similar_args(m, stream, region, radius, flags);
		if (ret)
			return ret;
		/* Only the stream's state (PAST_ONLY before its first frame) refuses one query. */
		b->status[i] = similar_query(m, stream, region, &fp, radius, flags, &b->q[n]);
		if (b->status[i])
			continue;
		b->slot[i] = n++;
	}

	vrex_shie_find_similar_batch(&m->shie, b->q, n, b->entry, b->distance);
	for (i = 0; i < count; i++, out += sizeof(struct vrex_lookup_rec)) {
		if (b->status[i]) {
			m->cnt[VREX_CNT_CMD_ERRORS]++;
			batch_record(m, b->status[i], NULL, out);
			continue;
		}
		similar_result(m, b->entry[b->slot[i]], b->distance[b->slot[i]], &r);
		nhits += r.hit;
		batch_record(m, 0, &r, out);
	}
	if (hits)
		*hits = nhits;
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

/* ---- ReSV -------------------------------------------------------------------- */

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

/* ---- register file --------------------------------------------------------- */

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

static void res_released(struct vrex_model *m, const struct vrex_released *rec)
{
	m->REG(VREX_REG_RES_BLOCK) = rec->block;
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
	int ret;

	if (flags & ~VREX_ARGF_ALIAS)
		return VREX_EINVAL;
	if (flags & VREX_ARGF_ALIAS) {
		alias = m->REG(VREX_REG_ARG_BLOCK);
		/* VREX_NIL means "no alias" to the direct call, never a block. */
		if (alias == VREX_NIL)
			return VREX_ENOENT;
	}
	arg_fp(m, &fp);
	kv.addr = arg64(m, VREX_REG_ARG_KV_ADDR_LO, VREX_REG_ARG_KV_ADDR_HI);
	kv.length = m->REG(VREX_REG_ARG_KV_LEN);
	kv.tag = m->REG(VREX_REG_ARG_KV_TAG);
	ret = vrex_model_insert(m, stream, region, offset, &fp, &kv, alias, &block);
	if (ret)
		return ret;
	m->REG(VREX_REG_RES_BLOCK) = block;
	m->REG(VREX_REG_RES_STREAM) = stream;
	m->REG(VREX_REG_RES_REGION) = region;
	m->REG(VREX_REG_RES_FRAME) = (u32)((s64)m->streams[stream].frame + offset);
	m->REG(VREX_REG_RES_BANK_FIRST) = m->blocks.b[block].bank;
	res_kv(m, &m->blocks.b[block].kv);
	return 0;
}

static void res_lookup(struct vrex_model *m, const struct vrex_lookup_result *r)
{
	m->REG(VREX_REG_RES_FLAGS) = (r->hit ? VREX_RESF_HIT : 0) |
				     (r->approx ? VREX_RESF_APPROX : 0);
	m->REG(VREX_REG_RES_BLOCK) = r->block;
	if (!r->hit)
		return;
	m->REG(VREX_REG_RES_DISTANCE) = r->distance;
	m->REG(VREX_REG_RES_FRAME) = r->frame;
	m->REG(VREX_REG_RES_STREAM) = r->stream;
	m->REG(VREX_REG_RES_REGION) = r->region;
	m->REG(VREX_REG_RES_BANK_FIRST) = m->blocks.b[r->block].bank;
	m->REG(VREX_REG_RES_LAST_ACCESS) = m->blocks.b[r->block].last_access;
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
					      count, &hits);
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

static void cmd_run(struct vrex_model *m, u32 op)
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
		return VREX_VERSION_VALUE;
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
	default:
		return read_tables(m, off);
	}
}

void vrex_model_write(struct vrex_model *m, u32 off, u32 val)
{
	if (off >= VREX_REG_WINDOW || (off & 3))
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
		cmd_run(m, val);
		break;
	default:
		if (off >= VREX_REG_RESV_SEED_LO)
			write_resv(m, off, val);
		break;
	}
}
