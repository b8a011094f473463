// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The device's lookups: temporal, similar, and the similarity batch that
 * reads descriptors from and writes records to device memory. Semantics:
 * docs/hardware.md.
 */
#include "vrex_model_internal.h"
#include "lifecycle_ops.h"

#define SIMILAR_FLAGS                                                                        \
	(VREX_ARGF_SCOPE_POOL | VREX_ARGF_PAST_ONLY | VREX_ARGF_TIER_DEVICE | VREX_ARGF_TIER_HOST)

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
	/* 1.0 found host-tier entries like any other and never said so. */
	res->host = e->valid == VREX_SHIE_TIER_HOST && model_is_1_1(m);
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

/* The flags a similarity lookup acts on: 1.0 ignores the tier bits (every tier). */
static u32 similar_flags(const struct vrex_model *m, u32 flags)
{
	return model_is_1_1(m) ? flags : flags & ~(VREX_ARGF_TIER_DEVICE | VREX_ARGF_TIER_HOST);
}

/* LOOKUP_SIMILAR_BATCH: the descriptor checks that fail the whole command. */
static int similar_args(struct vrex_model *m, u32 stream, u32 region, u32 radius, u32 flags)
{
	flags = similar_flags(m, flags);
	if (!open_stream(m, stream) || radius > VREX_SHIE_MAX_RADIUS || (flags & ~SIMILAR_FLAGS))
		return VREX_EINVAL;
	return region >= VREX_SHIE_REGIONS ? VREX_ERANGE : 0;
}

/* The query LOOKUP_SIMILAR runs, or the code it refuses it with. */
static int similar_query(struct vrex_model *m, u32 stream, u32 region, const struct vrex_fp *fp,
			 u32 radius, u32 flags, struct vrex_shie_query *q)
{
	struct vrex_stream *s = open_stream(m, stream);

	flags = similar_flags(m, flags);
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
	q->tiers = ((flags & VREX_ARGF_TIER_DEVICE) ? VREX_SHIE_TIER_DEVICE : 0) |
		   ((flags & VREX_ARGF_TIER_HOST) ? VREX_SHIE_TIER_HOST : 0);
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
	if (!status && r->host)
		rec.flags |= vrex_cpu_to_le32(VREX_RESF_HOST_TIER);
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

/*
 * Descriptor @i's records of a batch with @k > 1 records each: its nearest
 * answers (counted as one lookup by the first, every block touched), then
 * misses.
 */
static u32 batch_nearest(struct vrex_model *m, const struct vrex_shie_query *q, u32 k, u8 *out)
{
	struct vrex_lookup_result r;
	u32 entry[VREX_LOOKUP_NEAREST_MAX], distance[VREX_LOOKUP_NEAREST_MAX];
	u32 j, n;

	n = vrex_shie_find_nearest(&m->shie, q, k, entry, distance);
	similar_result(m, n ? entry[0] : VREX_NIL, n ? distance[0] : 0, &r);
	for (j = 0; j < k; j++, out += sizeof(struct vrex_lookup_rec)) {
		if (j >= n)
			lookup_miss(&r);
		else if (j)
			lookup_hit(m, entry[j], distance[j], &r);
		batch_record(m, 0, &r, out);
	}
	return n != 0;
}

int vrex_model_lookup_similar_batch(struct vrex_model *m, u64 src, u64 dst, u32 count,
				    u32 nearest, u32 *hits)
{
	struct vrex_lookup_batch *b = &m->batch;
	/* 1.0 has no ARG_NEAREST: one record per descriptor. */
	const u32 k = model_is_1_1(m) ? vrex_lookup_nearest(nearest) : 1;
	const u32 rec_size = k * sizeof(struct vrex_lookup_rec);
	struct vrex_lookup_desc d;
	struct vrex_lookup_result r;
	struct vrex_fp fp;
	const u8 *in;
	u32 i, j, n = 0, nhits = 0, stream, region, radius, flags;
	u8 *out;
	int ret;

	if (!count || count > VREX_LOOKUP_BATCH_MAX || k > VREX_LOOKUP_NEAREST_MAX ||
	    count * k > VREX_LOOKUP_BATCH_MAX)
		return VREX_EINVAL;
	in = dev_mem(m, src, (u64)count * sizeof(d), 8);
	out = dev_mem(m, dst, (u64)count * rec_size, 8);
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

	if (k == 1)
		vrex_shie_find_similar_batch(&m->shie, b->q, n, b->entry, b->distance);
	for (i = 0; i < count; i++, out += rec_size) {
		if (b->status[i]) {
			m->cnt[VREX_CNT_CMD_ERRORS]++;
			for (j = 0; j < k; j++)
				batch_record(m, b->status[i], NULL,
					     out + (size_t)j * sizeof(struct vrex_lookup_rec));
			continue;
		}
		if (k > 1) {
			nhits += batch_nearest(m, &b->q[b->slot[i]], k, out);
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
