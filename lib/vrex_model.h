/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * The V-Rex device reference model: one instance is one device. The kernel's
 * simulated device and the HAL's emulation both drive it through
 * vrex_model_read()/vrex_model_write() (the register file, see vrex_regs.h);
 * the vrex_model_* operations below are what those commands execute and are
 * exposed for unit tests and benchmarks.
 *
 * Concurrency: none inside. The owner serialises all calls on one instance
 * (the kernel under its device lock, the HAL under its backend mutex).
 * Memory: vrex_model_arena_size() bytes provided once at init; nothing
 * allocates afterwards. Device memory (the banks) is @mem, nbanks * bank_size
 * bytes, addressed by offset ("device address").
 */
#ifndef VREX_MODEL_H
#define VREX_MODEL_H

#include "vrex_compat.h"
#include "vrex_fp.h"
#include "vrex_regs.h"
#include "fcc_fingerprint.h"
#include "fcc_bankmap.h"
#include "shie_table.h"
#include "lifecycle.h"
#include "resv.h"

#define VREX_MAX_STREAMS 64
#define VREX_DEFAULT_BANKS 16
#define VREX_DEFAULT_GROUP_BANKS 2
#define VREX_DEFAULT_ZOMBIE_FRAMES 5
#define VREX_MAX_ZOMBIE_FRAMES 255
#define VREX_DEFAULT_RESV_HEADS 16
#define VREX_DEFAULT_RESV_TOKENS 4096
#define VREX_MAX_RESV_HEADS 4096
#define VREX_RESV_DEFAULT_DIM 128
#define VREX_RESV_DEFAULT_TPB 16
/* Private pools: stream s alone is in pool VREX_POOL_PRIVATE + s. */
#define VREX_POOL_PRIVATE 0x10000u

struct vrex_model_config {
	u32 nbanks;		/* 1..VREX_MAX_BANKS */
	u32 group_banks;	/* divides nbanks */
	u64 bank_size;		/* bytes, multiple of 4096 */
	u32 max_streams;	/* 1..VREX_MAX_STREAMS */
	u32 shie_capacity;	/* entries */
	u32 block_capacity;	/* blocks */
	u32 zombie_frames;	/* 1..VREX_MAX_ZOMBIE_FRAMES */
	u32 resv_heads;		/* 0 (no ReSV unit)..VREX_MAX_RESV_HEADS */
	u32 resv_tokens;	/* per head */
	u32 resv_clusters;	/* per head, <= resv_tokens */
	/*
	 * The hardware revision the model is: VREX_VERSION_VALUE (1.1, also
	 * for 0) or VREX_VERSION_1_0, which lacks what vrex_regs.h lists for
	 * 1.1 (no ARG_NEAREST register, tier flags ignored, no RESF_HOST_TIER,
	 * FCC_REGION_MOTION reads 0): what a driver meets on a 1.0 board.
	 */
	u32 hw_version;
};

struct vrex_stream {
	u32 open;
	u32 pool;
	u32 frame;		/* current frame number (valid once nframes > 0) */
	u32 nframes;		/* frames submitted */
	u32 group;		/* bank group of the current frame */
	struct vrex_fp fp;	/* fingerprint of the current frame */
	u32 has_prev;
	struct vrex_fcc_image prev;
};

struct vrex_frame_result {
	struct vrex_fp fp;
	struct vrex_fcc_features feat;
	struct vrex_bank_assign bank;
	u32 frame;
	u8 region_motion[VREX_FCC_REGIONS];	/* vrex_fcc_region_motion() of the frame */
};

struct vrex_lookup_result {
	u32 hit;
	u32 approx;
	u32 distance;
	u32 block;
	u32 frame;
	u32 stream;
	u32 region;
	u32 host;		/* a host-tier entry (VREX_RESF_HOST_TIER) */
	struct vrex_fp fp;
	struct vrex_kv_ref kv;
};

/* The ReSV unit: HCU, parameter registers, heads, counters. */
struct vrex_resv_unit {
	struct vrex_resv_hcu hcu;
	u32 hcu_stale;		/* SEED or DIM written since the HCU was programmed */
	u64 seed;
	u32 dim;
	u32 tokens_per_block;
	u32 bytes_per_token;
	struct vrex_resv_params params;
	struct vrex_resv_head *heads;	/* [cfg.resv_heads] */
	u64 cnt[VREX_RESV_CNT_NUM];
};

struct vrex_resv_hash_result {
	u32 tokens;		/* the head's tokens and clusters afterwards */
	u32 clusters;
	u32 opened;		/* clusters this batch opened */
};

struct vrex_resv_select_result {
	u32 qhash;
	u32 ranges;		/* ranges in total (at most @max were written) */
	struct vrex_resv_selection sel;
};

/* LOOKUP_SIMILAR_BATCH working set: in the model, not on a (kernel) stack. */
struct vrex_lookup_batch {
	struct vrex_shie_query q[VREX_LOOKUP_BATCH_MAX];
	u32 entry[VREX_LOOKUP_BATCH_MAX];
	u32 distance[VREX_LOOKUP_BATCH_MAX];
	u32 status[VREX_LOOKUP_BATCH_MAX];	/* per descriptor: 0 or VREX_E* */
	u32 slot[VREX_LOOKUP_BATCH_MAX];	/* descriptor -> query index */
};

struct vrex_model {
	struct vrex_model_config cfg;
	u8 *mem;
	u64 mem_size;
	struct vrex_stream *streams;	/* [max_streams] */
	struct vrex_fcc_image *cur;	/* FCC scratch */
	struct vrex_fcc_motion *mv;	/* FCC scratch */
	struct vrex_fcc_features last_feat;
	u8 last_region_motion[VREX_FCC_REGIONS];	/* of the last FRAME command */
	struct vrex_bankmap bankmap;
	struct vrex_shie_table shie;
	struct vrex_blocks blocks;
	u64 cnt[VREX_CNT_NUM];
	struct vrex_resv_unit resv;
	struct vrex_lookup_batch batch;
	u32 regs[VREX_REG_WINDOW / 4];	/* argument and result latches */
	u32 status;
	u32 irq_status;
	u32 irq_mask;
};

void vrex_model_default_config(struct vrex_model_config *cfg);
/* Returns 0 for a config init would reject. */
size_t vrex_model_arena_size(const struct vrex_model_config *cfg);
int vrex_model_init(struct vrex_model *m, const struct vrex_model_config *cfg, void *arena,
		    size_t arena_size, u8 *mem, u64 mem_size);
/* Back to the state right after init: no streams, entries, blocks, counters. */
void vrex_model_reset(struct vrex_model *m);

/* Register file. Unknown or unaligned offsets read 0 and ignore writes. */
u32 vrex_model_read(struct vrex_model *m, u32 off);
void vrex_model_write(struct vrex_model *m, u32 off, u32 val);

/* Operations (each returns 0 or a VREX_E* code and, on error, changes nothing). */
int vrex_model_stream_open(struct vrex_model *m, u32 stream, u32 pool);
int vrex_model_stream_close(struct vrex_model *m, u32 stream, u32 *released);
int vrex_model_frame(struct vrex_model *m, u32 stream, u64 src, u32 width, u32 height,
		     u32 stride, struct vrex_frame_result *res);
int vrex_model_insert(struct vrex_model *m, u32 stream, u32 region, s32 offset,
		      const struct vrex_fp *fp, const struct vrex_kv_ref *kv, u32 alias_block,
		      u32 *block_out);
/*
 * A host-tier block (lifecycle.h): @kv in external memory (VREX_EINVAL
 * otherwise), @offset any frame offset <= 0 down to the stream's first frame
 * (VREX_ERANGE otherwise); never aged by zombie release, and its entry is
 * for similarity lookups only (vrex_shie_insert_host: no temporal key).
 */
int vrex_model_insert_host(struct vrex_model *m, u32 stream, u32 region, s32 offset,
			   const struct vrex_fp *fp, const struct vrex_kv_ref *kv, u32 *block_out);
int vrex_model_lookup_temporal(struct vrex_model *m, u32 stream, u32 region, s32 offset,
			       struct vrex_lookup_result *res);
int vrex_model_lookup_similar(struct vrex_model *m, u32 stream, u32 region,
			      const struct vrex_fp *fp, u32 radius, u32 flags,
			      struct vrex_lookup_result *res);
/*
 * LOOKUP_SIMILAR_BATCH (vrex_regs.h): @count descriptors at device address
 * @src, @nearest (ARG_NEAREST: 0 or 1 for one) records per descriptor
 * written at @dst; *@hits (if not NULL) = queries that hit. On a command
 * error no record is written and nothing changes.
 */
int vrex_model_lookup_similar_batch(struct vrex_model *m, u64 src, u64 dst, u32 count,
				    u32 nearest, u32 *hits);
int vrex_model_remove(struct vrex_model *m, u32 block, struct vrex_released *rec);
int vrex_model_retire(struct vrex_model *m, u32 stream, u32 *released);
/* Returns 1 and fills @rec when a release record was queued, else 0. */
int vrex_model_pop_released(struct vrex_model *m, struct vrex_released *rec);
int vrex_model_block_info(const struct vrex_model *m, u32 block, struct vrex_block *out);

/*
 * ReSV (VREX_EINVAL without the unit). Keys are @count little-endian int16
 * vectors of RESV_DIM values at device address @src (2-aligned); a batch
 * that does not fit (VREX_ENOSPC) is undone. A selection hashes the query at
 * @src and writes up to @max ranges (u32 first, u32 count) to @dst
 * (4-aligned): token ranges, or block ranges with VREX_ARGF_RESV_BLOCKS.
 */
int vrex_model_resv_hash(struct vrex_model *m, u32 head, u64 src, u32 count,
			 struct vrex_resv_hash_result *res);
int vrex_model_resv_select(struct vrex_model *m, u32 head, u64 src, u32 flags, u64 dst, u32 max,
			   struct vrex_resv_select_result *res);
int vrex_model_resv_truncate(struct vrex_model *m, u32 head, u32 keep);

#endif /* VREX_MODEL_H */
