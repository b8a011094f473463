// SPDX-License-Identifier: MIT
/*
 * vrex negative uAPI suite, run as root in the QEMU guests next to
 * vrex_uapi_test (which holds the positive cases and the first negative ones).
 * This one covers, per ioctl, the rules that suite leaves out: truncated,
 * zero-length and oversized structs (the DRM core zero-extends a short struct
 * and echoes an oversized one's tail), ids past the ioctl table, a missing
 * direction, every batch-header rule on SHIE_LOOKUP too, integer overflow of
 * count x elem_size, arrays running into an unmapped page, the exact batch
 * limit, ALIAS field rules, closed / destroyed / foreign-stream ids, double
 * GEM close and bad result pointers. Every negative case checks the documented
 * errno, then that the device still works (query, stream, BO and a lookup on a
 * live stream). One line per case, then "negative: N passed, M failed".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vrex_test_util.h"

#define W VT_FRAME_W
#define H VT_FRAME_H
#define KV_LEN VT_KV_LEN
#define BO_SIZE 65536u

static struct drm_vrex_device_info info;

struct ctx {
	int fd;
	uint32_t stream, stream2, luma, kv;
	uint32_t block;		/* a live block of @stream */
	uint32_t block2;	/* a live block of @stream2 */
	__u64 fp[2];
	void *guard;		/* a PROT_NONE page */
};

/* A plain frame on @stream; its fingerprint goes to @fp (if not NULL) when it succeeds. */
static int frame(int fd, uint32_t stream, uint32_t handle, __u64 fp[2])
{
	struct drm_vrex_frame_submit f;
	int r = vt_frame_submit(fd, stream, handle, 0, 0, &f);

	if (!r && fp) {
		fp[0] = f.fp[0];
		fp[1] = f.fp[1];
	}
	return r;
}

/* SHIE_RETIRE with @cap records of room at @rel (which may be a bad pointer). */
static int retire(int fd, uint32_t stream, uint32_t *ids, uint32_t n, void *rel, uint32_t cap)
{
	return vt_shie_retire(fd, stream, ids, n, rel, &cap);
}

#define STAT_INSERTS 6
#define STAT_LIVE_ENTRIES 9

/* ---- the device is still usable --------------------------------------------------- */

static int usable(struct ctx *c)
{
	struct drm_vrex_query q = { .param = DRM_VREX_QUERY_DEVICE_INFO };
	struct drm_vrex_shie_lookup_item lk = vt_temporal(0, 0);
	uint32_t s, h;

	if (vt_ioctl(c->fd, DRM_IOCTL_VREX_QUERY, &q) || q.size != sizeof(info))
		return 0;
	if (vt_stream_create(c->fd, 0, 0, &s) || vt_stream_destroy(c->fd, s))
		return 0;
	if (vt_bo_create(c->fd, 4096, 1, 0, &h, NULL) || vt_gem_close(c->fd, h))
		return 0;
	/* the block inserted at setup is still found */
	return !vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_LOOKUP, c->stream, &lk, 1, sizeof(lk)) &&
	       lk.hit_flags == DRM_VREX_HIT && lk.block == c->block;
}

#define NEG(c, name, call, err)                                                              \
	do {                                                                                 \
		int r_ = (call);                                                             \
		int u_ = usable(c);                                                          \
		vt_report(r_ == -(err) && u_, "%s: want %s got %d (%s)%s", name, strerror(err), \
		       r_, strerror(-r_), u_ ? "" : ", device NOT usable afterwards");       \
	} while (0)
#define POS(c, name, call)                                                                   \
	({                                                                                   \
		int r_ = (call);                                                             \
		vt_report(r_ == 0, "%s (ret %d %s)", name, r_, r_ ? strerror(-r_) : "");        \
		r_ == 0;                                                                     \
	})

/* ---- struct sizes, ids and directions ----------------------------------------------- */

static const unsigned long cmds[] = {
	DRM_IOCTL_VREX_QUERY, DRM_IOCTL_VREX_BO_CREATE, DRM_IOCTL_VREX_BO_MMAP_OFFSET,
	DRM_IOCTL_VREX_STREAM_CREATE, DRM_IOCTL_VREX_STREAM_DESTROY, DRM_IOCTL_VREX_FRAME_SUBMIT,
	DRM_IOCTL_VREX_SHIE_INSERT, DRM_IOCTL_VREX_SHIE_LOOKUP, DRM_IOCTL_VREX_SHIE_RETIRE,
	DRM_IOCTL_VREX_STATS, VT_IOCTL_RESERVED_10, DRM_IOCTL_VREX_RESV_HEAD_CREATE,
	DRM_IOCTL_VREX_RESV_HEAD_DESTROY, DRM_IOCTL_VREX_RESV_HASH, DRM_IOCTL_VREX_RESV_SELECT,
	DRM_IOCTL_VREX_RESV_TRUNCATE,
};

static const char *const names[] = {
	"QUERY", "BO_CREATE", "BO_MMAP_OFFSET", "STREAM_CREATE", "STREAM_DESTROY", "FRAME_SUBMIT",
	"SHIE_INSERT", "SHIE_LOOKUP", "SHIE_RETIRE", "STATS", "RESERVED_10 (was REG_READ)",
	"RESV_HEAD_CREATE", "RESV_HEAD_DESTROY", "RESV_HASH", "RESV_SELECT", "RESV_TRUNCATE",
};

/*
 * What an all-zero struct gets: a zero-length or truncated struct is
 * zero-extended by the DRM core, so this is also the answer to "size 0".
 */
static const int zero_errno[] = {
	0,		/* QUERY: DEVICE_INFO, ptr 0: size only */
	EINVAL,		/* BO_CREATE: size 0 */
	ENOENT,		/* BO_MMAP_OFFSET: handle 0 */
	0,		/* STREAM_CREATE: a plain stream */
	ENOENT,		/* STREAM_DESTROY: stream ids start at 1 */
	EINVAL,		/* FRAME_SUBMIT: width 0 */
	EINVAL,		/* SHIE_INSERT: count 0 */
	EINVAL,		/* SHIE_LOOKUP: count 0 */
	EINVAL,		/* SHIE_RETIRE: elem_size 0 */
	0,		/* STATS: ptr 0: size only */
	EINVAL,		/* RESERVED_10: retired REG_READ, never answered */
	EINVAL,		/* RESV_HEAD_CREATE: dim 0 */
	ENOENT,		/* RESV_HEAD_DESTROY: head ids start at 1 */
	EINVAL,		/* RESV_HASH: count 0 */
	EINVAL,		/* RESV_SELECT: count 0 */
	ENOENT,		/* RESV_TRUNCATE: head 0 */
};

static unsigned long resize(unsigned long cmd, unsigned int size)
{
	return _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), size);
}

static void test_sizes(struct ctx *c)
{
	unsigned char buf[512];
	char name[128];
	unsigned int i;
	int fd;

	/* Zero-length struct on a scratch file (STREAM_CREATE would leave a stream). */
	fd = vt_open_node(NULL, 0);
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		memset(buf, 0, sizeof(buf));
		snprintf(name, sizeof(name), "%s: zero-length struct acts as all-zero", names[i]);
		if (zero_errno[i])
			NEG(c, name, vt_ioctl(fd, resize(cmds[i], 0), buf), zero_errno[i]);
		else
			POS(c, name, vt_ioctl(fd, resize(cmds[i], 0), buf));
	}
	close(fd);

	/* Truncated: the fields past the given size read as zero. */
	{
		struct drm_vrex_bo_create bo = { .size = 4096, .bank_mask = 1 };

		NEG(c, "BO_CREATE: 8-byte struct (bank_mask cut off -> 0)",
		    vt_ioctl(c->fd, resize(DRM_IOCTL_VREX_BO_CREATE, 8), &bo), EINVAL);
	}
	{
		struct drm_vrex_frame_submit f = { .stream = c->stream, .handle = c->luma,
						   .width = W, .height = H, .stride = W };

		NEG(c, "FRAME_SUBMIT: 16-byte struct (width cut off -> 0)",
		    vt_ioctl(c->fd, resize(DRM_IOCTL_VREX_FRAME_SUBMIT, 16), &f), EINVAL);
	}
	{
		struct drm_vrex_shie_lookup_item lk = vt_temporal(0, 0);
		struct drm_vrex_shie_batch b = { .stream = c->stream, .count = 1,
						 .elem_size = sizeof(lk), .items = (uintptr_t)&lk };

		NEG(c, "SHIE_LOOKUP: 8-byte batch header (elem_size cut off -> 0)",
		    vt_ioctl(c->fd, resize(DRM_IOCTL_VREX_SHIE_LOOKUP, 8), &b), EINVAL);
	}
	{
		struct drm_vrex_shie_retire r = { .stream = c->stream, .released_cap = 16,
						  .elem_size = sizeof(struct drm_vrex_released_block) };

		NEG(c, "SHIE_RETIRE: 16-byte struct (elem_size cut off -> 0)",
		    vt_ioctl(c->fd, resize(DRM_IOCTL_VREX_SHIE_RETIRE, 16), &r), EINVAL);
	}

	/* Oversized: the driver sees its own struct; the caller's tail comes back unchanged. */
	{
		struct {
			struct drm_vrex_query q;
			unsigned char tail[64];
		} big;
		struct drm_vrex_device_info got;

		memset(&big, 0xa5, sizeof(big));
		big.q = (struct drm_vrex_query){ .param = DRM_VREX_QUERY_DEVICE_INFO,
						 .size = sizeof(got), .ptr = (uintptr_t)&got };
		if (POS(c, "QUERY: oversized struct accepted",
			vt_ioctl(c->fd, resize(DRM_IOCTL_VREX_QUERY, sizeof(big)), &big)))
			vt_report(big.tail[0] == 0xa5 && big.tail[63] == 0xa5 &&
				  big.q.size == sizeof(got) && got.bank_count == info.bank_count,
			       "QUERY: oversized struct's tail echoed unchanged, result right");
	}
	{
		struct {
			struct drm_vrex_bo_create bo;
			uint64_t tail[4];
		} big;

		memset(&big, 0, sizeof(big));
		big.bo = (struct drm_vrex_bo_create){ .size = 4096, .bank_mask = 1 };
		big.tail[3] = 0x1234;
		if (POS(c, "BO_CREATE: oversized struct accepted",
			vt_ioctl(c->fd, resize(DRM_IOCTL_VREX_BO_CREATE, sizeof(big)), &big))) {
			vt_report(big.tail[3] == 0x1234 && big.bo.handle, "BO_CREATE: handle back, tail kept");
			vt_gem_close(c->fd, big.bo.handle);
		}
	}

	/* No direction bits: nothing is copied in, so the driver sees zeros. */
	{
		struct drm_vrex_bo_create bo = { .size = 4096, .bank_mask = 1 };

		NEG(c, "BO_CREATE: ioctl number without direction (args not copied in)",
		    vt_ioctl(c->fd, _IOC(_IOC_NONE, DRM_IOCTL_BASE, DRM_COMMAND_BASE +
				       DRM_VREX_BO_CREATE, sizeof(bo)), &bo), EINVAL);
	}

	/* Ids past the table, and the table's last slot of the driver range. */
	memset(buf, 0, sizeof(buf));
	NEG(c, "ioctl id right past the table", vt_ioctl(c->fd, DRM_IOWR(DRM_COMMAND_BASE +
		DRM_VREX_RESV_TRUNCATE + 1, struct drm_vrex_query), buf), EINVAL);
	NEG(c, "ioctl id at the end of the driver range",
	    vt_ioctl(c->fd, DRM_IOWR(DRM_COMMAND_END - 1, struct drm_vrex_query), buf), EINVAL);
	NEG(c, "argument pointer unmapped", vt_ioctl(c->fd, DRM_IOCTL_VREX_STATS, c->guard), EFAULT);
}

/* ---- per ioctl ------------------------------------------------------------------------- */

static void test_query_stats(struct ctx *c)
{
	struct drm_vrex_bank_info *bi = calloc(1, sizeof(*bi) + 64);
	struct drm_vrex_query q = { .param = DRM_VREX_QUERY_BANKS, .size = 8 };
	struct drm_vrex_stats_query sq = { .size = 8 };
	struct drm_vrex_stats st;

	if (!bi)
		return;
	memset(bi, 0xa5, sizeof(*bi));
	q.ptr = (uintptr_t)bi;
	if (POS(c, "QUERY BANKS: 8-byte buffer", vt_ioctl(c->fd, DRM_IOCTL_VREX_QUERY, &q)))
		vt_report(q.size == sizeof(*bi) && bi->bank_count == info.bank_count &&
			  ((unsigned char *)bi)[8] == 0xa5,
		       "QUERY BANKS: only 8 bytes written, size says the kernel's");
	q = (struct drm_vrex_query){ .param = DRM_VREX_QUERY_BANKS, .size = sizeof(*bi),
				     .ptr = (uintptr_t)c->guard };
	NEG(c, "QUERY BANKS: unmapped result pointer", vt_ioctl(c->fd, DRM_IOCTL_VREX_QUERY, &q),
	    EFAULT);
	q = (struct drm_vrex_query){ .param = 0xffffffff };
	NEG(c, "QUERY: param 0xffffffff", vt_ioctl(c->fd, DRM_IOCTL_VREX_QUERY, &q), EINVAL);
	memset(&st, 0xa5, sizeof(st));
	sq.ptr = (uintptr_t)&st;
	if (POS(c, "STATS: 8-byte buffer", vt_ioctl(c->fd, DRM_IOCTL_VREX_STATS, &sq)))
		vt_report(sq.size == sizeof(st) && st.exact_hits == 0xa5a5a5a5a5a5a5a5ull,
			  "STATS: only 8 bytes written, size says the kernel's");
	sq = (struct drm_vrex_stats_query){ .size = sizeof(st), .ptr = (uintptr_t)c->guard };
	NEG(c, "STATS: unmapped result pointer", vt_ioctl(c->fd, DRM_IOCTL_VREX_STATS, &sq), EFAULT);
	free(bi);
}

static void test_bo(struct ctx *c)
{
	struct drm_vrex_bo_create bo;
	struct drm_vrex_bo_mmap_offset mo;
	uint32_t h;

	NEG(c, "BO_CREATE: mask bit 63 only",
	    vt_bo_create(c->fd, 4096, 1ull << 63, 0, &h, NULL), info.bank_count == 64 ? 0 : EINVAL);
	bo = (struct drm_vrex_bo_create){ .size = 4096, .bank_mask = 1,
					  .flags = DRM_VREX_BO_VALID_FLAGS + 1 };
	NEG(c, "BO_CREATE: first flag past the valid mask",
	    vt_ioctl(c->fd, DRM_IOCTL_VREX_BO_CREATE, &bo), EINVAL);
	bo = (struct drm_vrex_bo_create){ .size = 4096, .bank_mask = 1, .flags = 1u << 31 };
	NEG(c, "BO_CREATE: flag bit 31", vt_ioctl(c->fd, DRM_IOCTL_VREX_BO_CREATE, &bo), EINVAL);
	bo = (struct drm_vrex_bo_create){ .size = info.bank_size,
					  .bank_mask = 1ull << (info.bank_count - 1),
					  .flags = DRM_VREX_BO_VALID_FLAGS };
	if (POS(c, "BO_CREATE: exactly one bank, every valid flag",
		vt_ioctl(c->fd, DRM_IOCTL_VREX_BO_CREATE, &bo)))
		vt_gem_close(c->fd, bo.handle);
	if (!vt_bo_create(c->fd, 4096, 1, 0, &h, NULL)) {
		POS(c, "GEM_CLOSE: close a BO", vt_gem_close(c->fd, h));
		NEG(c, "GEM_CLOSE: double close", vt_gem_close(c->fd, h), EINVAL);
		mo = (struct drm_vrex_bo_mmap_offset){ .handle = h };
		NEG(c, "BO_MMAP_OFFSET: closed handle",
		    vt_ioctl(c->fd, DRM_IOCTL_VREX_BO_MMAP_OFFSET, &mo), ENOENT);
		NEG(c, "FRAME_SUBMIT: closed handle", frame(c->fd, c->stream, h, NULL), ENOENT);
		{
			struct drm_vrex_shie_insert_item it = vt_kv_item(c->fp, h, 0, 9, 0);

			NEG(c, "SHIE_INSERT: closed handle",
			    vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, c->stream, &it, 1, sizeof(it)),
			    ENOENT);
		}
	}
	mo = (struct drm_vrex_bo_mmap_offset){ .handle = 0 };
	NEG(c, "BO_MMAP_OFFSET: handle 0", vt_ioctl(c->fd, DRM_IOCTL_VREX_BO_MMAP_OFFSET, &mo),
	    ENOENT);
}

static void test_streams(struct ctx *c)
{
	struct drm_vrex_stream_create sc;
	struct drm_vrex_stream_destroy sd;
	struct drm_vrex_shie_lookup_item lk = vt_temporal(0, 0);
	struct drm_vrex_released_block rel[4];
	uint32_t s;

	sc = (struct drm_vrex_stream_create){ .flags = 1u << 31 };
	NEG(c, "STREAM_CREATE: flag bit 31", vt_ioctl(c->fd, DRM_IOCTL_VREX_STREAM_CREATE, &sc),
	    EINVAL);
	sc = (struct drm_vrex_stream_create){ .flags = DRM_VREX_STREAM_POOLED, .pool = 3, .pad = 1 };
	NEG(c, "STREAM_CREATE: pooled with non-zero pad",
	    vt_ioctl(c->fd, DRM_IOCTL_VREX_STREAM_CREATE, &sc), EINVAL);
	sd = (struct drm_vrex_stream_destroy){ .stream = 0 };
	NEG(c, "STREAM_DESTROY: id 0", vt_ioctl(c->fd, DRM_IOCTL_VREX_STREAM_DESTROY, &sd), ENOENT);
	if (vt_stream_create(c->fd, 0, 0, &s))
		return;
	POS(c, "STREAM_DESTROY: destroy", vt_stream_destroy(c->fd, s));
	NEG(c, "STREAM_DESTROY: double destroy", vt_stream_destroy(c->fd, s), ENOENT);
	NEG(c, "FRAME_SUBMIT: destroyed stream", frame(c->fd, s, c->luma, NULL), ENOENT);
	NEG(c, "SHIE_LOOKUP: destroyed stream",
	    vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_LOOKUP, s, &lk, 1, sizeof(lk)), ENOENT);
	{
		struct drm_vrex_shie_insert_item it = vt_kv_item(c->fp, c->kv, 0, 9, 0);

		NEG(c, "SHIE_INSERT: destroyed stream",
		    vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, s, &it, 1, sizeof(it)), ENOENT);
	}
	NEG(c, "SHIE_RETIRE: destroyed stream", retire(c->fd, s, NULL, 0, rel, 4), ENOENT);
}

static void test_frame(struct ctx *c)
{
	struct drm_vrex_frame_submit f;

#define BADF(name, stmt, err)                                                                \
	do {                                                                                 \
		f = (struct drm_vrex_frame_submit){ .stream = c->stream, .handle = c->luma,  \
						    .width = W, .height = H, .stride = W };  \
		stmt;                                                                        \
		NEG(c, "FRAME_SUBMIT: " name, vt_ioctl(c->fd, DRM_IOCTL_VREX_FRAME_SUBMIT, &f), \
		    err);                                                                    \
	} while (0)
	BADF("width above max", f.width = info.fcc_max_dim + 1, EINVAL);
	BADF("height below min", f.height = info.fcc_min_dim - 1, EINVAL);
	BADF("width 0xffffffff", (f.width = 0xffffffff, f.stride = 0xffffffff), EINVAL);
	BADF("stride x height far past the BO", (f.height = info.fcc_max_dim, f.stride = 0xffffffff),
	     EINVAL);
	BADF("offset + plane wraps 64 bits", f.offset = ~0ull - W * H + 2, EINVAL);
	BADF("offset one past the last fitting byte", f.offset = BO_SIZE - W * H + 1, EINVAL);
	BADF("flag bit 31", f.flags = 1u << 31, EINVAL);
	BADF("handle 0", f.handle = 0, ENOENT);
	BADF("stream 0", f.stream = 0, ENOENT);
}

static void test_insert(struct ctx *c)
{
	struct drm_vrex_shie_insert_item it[2], *tail;
	uint64_t ins0 = vt_stat(c->fd, STAT_INSERTS);

#define BADI(name, stmt, err)                                                                \
	do {                                                                                 \
		it[0] = vt_kv_item(c->fp, c->kv, 0, 10, 0);                                        \
		it[1] = vt_kv_item(c->fp, c->kv, KV_LEN, 11, 0);                                   \
		stmt;                                                                        \
		NEG(c, "SHIE_INSERT: " name,                                                 \
		    vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, c->stream, it, 2, sizeof(it[0])), \
		    err);                                                                    \
	} while (0)
	BADI("alias with an offset", (it[1].flags = DRM_VREX_INSERT_ALIAS, it[1].handle = 0,
				      it[1].length = 0, it[1].offset = 4096, it[1].block = c->block),
	     EINVAL);
	BADI("alias with a length", (it[1].flags = DRM_VREX_INSERT_ALIAS, it[1].handle = 0,
				     it[1].block = c->block), EINVAL);
	BADI("flag bit 31", it[1].flags = 1u << 31, EINVAL);
	BADI("region 0xffffffff", it[1].region = 0xffffffff, EINVAL);
	BADI("frame offset INT32_MIN", it[1].frame_offset = INT32_MIN, EINVAL);
	BADI("length past the BO by one", it[1].offset = BO_SIZE - KV_LEN + 1, EINVAL);
	BADI("length = BO + 1", (it[1].offset = 0, it[1].length = BO_SIZE + 1), EINVAL);
	BADI("handle 0", it[1].handle = 0, ENOENT);
	BADI("alias to an unknown block id",
	     (it[1].flags = DRM_VREX_INSERT_ALIAS, it[1].handle = 0, it[1].length = 0,
	      it[1].offset = 0, it[1].block = 0xfffffff0), ENOENT);
	vt_report(vt_stat(c->fd, STAT_INSERTS) == ins0, "SHIE_INSERT: failed batches inserted nothing");

	/* The items array runs into an unmapped page: EFAULT, nothing applied. */
	tail = (struct drm_vrex_shie_insert_item *)((char *)c->guard - sizeof(it[0]));
	*tail = vt_kv_item(c->fp, c->kv, 0, 12, 0);
	NEG(c, "SHIE_INSERT: second item on an unmapped page",
	    vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, c->stream, tail, 2, sizeof(it[0])), EFAULT);
	NEG(c, "SHIE_INSERT: items pointer NULL",
	    vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, c->stream, NULL, 1, sizeof(it[0])), EFAULT);
	/* count x elem_size beyond 32 bits: refused by size before any element is read. */
	it[0] = vt_kv_item(c->fp, c->kv, 0, 12, 0);
	NEG(c, "SHIE_INSERT: count 4096 x elem_size 0xffffffff",
	    vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, c->stream, it, DRM_VREX_MAX_BATCH, 0xffffffff),
	    E2BIG);
	NEG(c, "SHIE_INSERT: elem_size a page larger, tail unmapped",
	    vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, c->stream,
			  (char *)c->guard - sizeof(it[0]), 1, DRM_VREX_MAX_ELEM_SIZE), EFAULT);
	vt_report(vt_stat(c->fd, STAT_INSERTS) == ins0, "SHIE_INSERT: faulting batches inserted nothing");

	it[0] = vt_kv_item(c->fp, c->kv, BO_SIZE - KV_LEN, 13, 0);
	if (POS(c, "SHIE_INSERT: range ending exactly at the BO end",
		vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, c->stream, it, 1, sizeof(it[0]))))
		vt_report(it[0].result == 0, "SHIE_INSERT: boundary item applied");
}

static void test_lookup(struct ctx *c)
{
	struct drm_vrex_shie_lookup_item *lk, one = vt_temporal(0, 0);
	unsigned char wide[sizeof(one) + 8];
	struct drm_vrex_shie_batch b;
	uint32_t i;
	int ok;

#define BADB(name, stmt, err)                                                                \
	do {                                                                                 \
		one = vt_temporal(0, 0);                                                           \
		b = (struct drm_vrex_shie_batch){ .stream = c->stream, .count = 1,           \
						  .elem_size = sizeof(one),                  \
						  .items = (uintptr_t)&one };                \
		stmt;                                                                        \
		NEG(c, "SHIE_LOOKUP: " name, vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_LOOKUP, &b), err); \
	} while (0)
	BADB("count 0", b.count = 0, EINVAL);
	BADB("count above max", b.count = DRM_VREX_MAX_BATCH + 1, EINVAL);
	BADB("count 0xffffffff", b.count = 0xffffffff, EINVAL);
	BADB("elem_size above DRM_VREX_MAX_ELEM_SIZE", b.elem_size = DRM_VREX_MAX_ELEM_SIZE + 8, E2BIG);
	BADB("larger element with a non-zero tail",
	     (memcpy(wide, &one, sizeof(one)), memset(wide + sizeof(one), 0, 8), wide[sizeof(one) + 7] = 1,
	      b.elem_size = sizeof(wide), b.items = (uintptr_t)wide), E2BIG);
	BADB("elem_size 0", b.elem_size = 0, EINVAL);
	BADB("batch flags", b.flags = 1, EINVAL);
	BADB("items pointer NULL", b.items = 0, EFAULT);
	BADB("items on an unmapped page", b.items = (uintptr_t)c->guard, EFAULT);
	BADB("stream of the same file destroyed or never made", b.stream = 0x7fffffff, ENOENT);
	BADB("temporal offset -4", one.frame_offset = -4, EINVAL);
	BADB("similar with radius 0xffffffff",
	     (one.kind = DRM_VREX_LOOKUP_SIMILAR, one.radius = 0xffffffff), EINVAL);
	BADB("kind 0xffffffff", one.kind = 0xffffffff, EINVAL);

	/* Exactly the batch limit works. */
	lk = calloc(DRM_VREX_MAX_BATCH, sizeof(*lk));
	if (!lk)
		return;
	for (i = 0; i < DRM_VREX_MAX_BATCH; i++)
		lk[i] = vt_temporal(0, 0);
	if (POS(c, "SHIE_LOOKUP: exactly DRM_VREX_MAX_BATCH items",
		vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_LOOKUP, c->stream, lk, DRM_VREX_MAX_BATCH,
			      sizeof(*lk)))) {
		for (i = 0, ok = 1; i < DRM_VREX_MAX_BATCH; i++)
			ok &= lk[i].hit_flags == DRM_VREX_HIT && lk[i].block == c->block;
		vt_report(ok, "SHIE_LOOKUP: every item of the full batch answered");
	}
	free(lk);
}

static void test_retire(struct ctx *c)
{
	struct drm_vrex_released_block rel[64];
	struct drm_vrex_shie_retire r;
	uint32_t ids[2];

	/* @block2 belongs to @stream2 of the same file: the wrong stream for @stream. */
	ids[0] = c->block2;
	NEG(c, "SHIE_RETIRE: block of another stream of this file",
	    retire(c->fd, c->stream, ids, 1, rel, 64), ENOENT);
	NEG(c, "SHIE_RETIRE: remove pointer NULL", retire(c->fd, c->stream, NULL, 1, rel, 64),
	    EFAULT);
	NEG(c, "SHIE_RETIRE: remove ids on an unmapped page",
	    retire(c->fd, c->stream, c->guard, 1, rel, 64), EFAULT);
	NEG(c, "SHIE_RETIRE: no released array while blocks are live",
	    retire(c->fd, c->stream, NULL, 0, NULL, 64), EINVAL);
	r = (struct drm_vrex_shie_retire){ .stream = c->stream, .released_cap = 64,
					   .elem_size = 0, .released = (uintptr_t)rel };
	NEG(c, "SHIE_RETIRE: elem_size 0", vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_RETIRE, &r), EINVAL);
	r.elem_size = sizeof(rel[0]);
	r.remove_count = 0xffffffff;
	NEG(c, "SHIE_RETIRE: remove_count 0xffffffff", vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_RETIRE, &r),
	    EINVAL);
	r.remove_count = 0;
	r.flags = 1u << 31;
	NEG(c, "SHIE_RETIRE: flag bit 31", vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_RETIRE, &r), EINVAL);
}

/* ---- ReSV ---------------------------------------------------------------------------- */

#define RESV_DIM 8u
#define RESV_BO_SIZE (256u * 1024u)

static struct drm_vrex_resv_head_create resv_head_args(void)
{
	struct drm_vrex_resv_head_create a = { 0 };
	unsigned int d;

	a.params.seed = 42;
	a.params.dim = RESV_DIM;
	a.params.th = 7;
	a.params.ratio = DRM_VREX_RESV_RATIO_ONE / 2;
	a.params.mode = DRM_VREX_RESV_MODE_MASS;
	a.params.tokens_per_block = 4;
	a.params.bytes_per_token = 32;
	for (d = 0; d < DRM_VREX_RESV_LUT_SIZE; d++)
		a.params.lut[d] = (__u16)(65535u >> (d / 2));
	return a;
}

static int resv_stats(int fd, struct drm_vrex_resv_stats *st)
{
	struct drm_vrex_query q = { .param = DRM_VREX_QUERY_RESV_STATS, .size = sizeof(*st),
				    .ptr = (uintptr_t)st };

	return vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q);
}

static int resv_hash(int fd, uint32_t head, uint32_t count, uint32_t handle, uint64_t offset,
		     uint32_t flags, uint32_t *tokens)
{
	struct drm_vrex_resv_hash h = { .head = head, .count = count, .handle = handle,
					.flags = flags, .offset = offset };
	int r = vt_ioctl(fd, DRM_IOCTL_VREX_RESV_HASH, &h);

	if (!r && tokens)
		*tokens = h.tokens;
	return r;
}

static int resv_select(int fd, void *items, uint32_t count, uint32_t elem_size, uint32_t flags)
{
	struct drm_vrex_resv_batch b = { .count = count, .elem_size = elem_size, .flags = flags,
					 .items = (uintptr_t)items };

	return vt_ioctl(fd, DRM_IOCTL_VREX_RESV_SELECT, &b);
}

static int resv_truncate(int fd, uint32_t head, uint32_t keep)
{
	struct drm_vrex_resv_truncate t = { .head = head, .keep = keep };

	return vt_ioctl(fd, DRM_IOCTL_VREX_RESV_TRUNCATE, &t);
}

static void test_resv_create(struct ctx *c)
{
	struct drm_vrex_resv_head_create a;
	struct drm_vrex_resv_head_destroy d = { 0 };

	vt_report(!!(info.caps & DRM_VREX_CAP_RESV), "RESV: the device reports DRM_VREX_CAP_RESV");
	a = resv_head_args();
	a.flags = 1;
	NEG(c, "RESV_HEAD_CREATE: unknown flag", vt_ioctl(c->fd, DRM_IOCTL_VREX_RESV_HEAD_CREATE, &a),
	    EINVAL);
	a = resv_head_args();
	a.params.dim = DRM_VREX_RESV_MAX_DIM + 1;
	NEG(c, "RESV_HEAD_CREATE: dim 257", vt_ioctl(c->fd, DRM_IOCTL_VREX_RESV_HEAD_CREATE, &a),
	    EINVAL);
	a = resv_head_args();
	a.params.th = DRM_VREX_RESV_MAX_TH + 1;
	NEG(c, "RESV_HEAD_CREATE: th 33", vt_ioctl(c->fd, DRM_IOCTL_VREX_RESV_HEAD_CREATE, &a),
	    EINVAL);
	a = resv_head_args();
	a.params.ratio = DRM_VREX_RESV_RATIO_ONE + 1;
	NEG(c, "RESV_HEAD_CREATE: ratio above 1.0",
	    vt_ioctl(c->fd, DRM_IOCTL_VREX_RESV_HEAD_CREATE, &a), EINVAL);
	a = resv_head_args();
	a.params.mode = DRM_VREX_RESV_MODE_TOKENS + 1;
	NEG(c, "RESV_HEAD_CREATE: unknown mode", vt_ioctl(c->fd, DRM_IOCTL_VREX_RESV_HEAD_CREATE, &a),
	    EINVAL);
	a = resv_head_args();
	a.params.tokens_per_block = 0;
	NEG(c, "RESV_HEAD_CREATE: tokens_per_block 0",
	    vt_ioctl(c->fd, DRM_IOCTL_VREX_RESV_HEAD_CREATE, &a), EINVAL);
	a = resv_head_args();
	a.params.pad[2] = 1;
	NEG(c, "RESV_HEAD_CREATE: non-zero pad", vt_ioctl(c->fd, DRM_IOCTL_VREX_RESV_HEAD_CREATE, &a),
	    EINVAL);
	d.pad = 1;
	NEG(c, "RESV_HEAD_DESTROY: non-zero pad", vt_ioctl(c->fd, DRM_IOCTL_VREX_RESV_HEAD_DESTROY, &d),
	    EINVAL);
	d = (struct drm_vrex_resv_head_destroy){ .head = 0x7fffffff };
	NEG(c, "RESV_HEAD_DESTROY: unknown head", vt_ioctl(c->fd, DRM_IOCTL_VREX_RESV_HEAD_DESTROY, &d),
	    ENOENT);
}

/* Every hardware head taken: EBUSY for every file; a closed file's heads come back. */
static void test_resv_exhaust(struct ctx *c)
{
	struct drm_vrex_resv_head_create a = resv_head_args();
	struct drm_vrex_resv_stats st0, st;
	unsigned int n = 0, i;
	int fd2 = vt_open_node(NULL, 0);

	if (fd2 < 0 || resv_stats(c->fd, &st0)) {
		vt_report(0, "RESV: second file and stats");
		return;
	}
	for (i = 0; i < st0.heads + 1; i++)
		if (!vt_ioctl(fd2, DRM_IOCTL_VREX_RESV_HEAD_CREATE, &a))
			n++;
	vt_report(n == st0.heads - st0.heads_in_use, "RESV: a file takes the %u free heads (got %u)",
		  st0.heads - st0.heads_in_use, n);
	NEG(c, "RESV_HEAD_CREATE: every head in use", vt_ioctl(c->fd, DRM_IOCTL_VREX_RESV_HEAD_CREATE,
							      &a), EBUSY);
	close(fd2);
	memset(&st, 0, sizeof(st));
	n = !resv_stats(c->fd, &st) && st.heads_in_use == st0.heads_in_use;
	vt_report(n, "RESV: closing the file released its heads (%u in use, %u before)",
		  st.heads_in_use, st0.heads_in_use);
}

static void test_resv_hash(struct ctx *c, uint32_t head, uint32_t foreign, uint32_t bo)
{
	struct drm_vrex_resv_stats st;
	uint32_t tokens = 0, before = 0;
	int ok;

	NEG(c, "RESV_HASH: unknown flag", resv_hash(c->fd, head, 1, bo, 0, 1, NULL), EINVAL);
	NEG(c, "RESV_HASH: count 0", resv_hash(c->fd, head, 0, bo, 0, 0, NULL), EINVAL);
	NEG(c, "RESV_HASH: odd offset", resv_hash(c->fd, head, 1, bo, 1, 0, NULL), EINVAL);
	NEG(c, "RESV_HASH: unknown head", resv_hash(c->fd, 0x7fffffff, 1, bo, 0, 0, NULL), ENOENT);
	NEG(c, "RESV_HASH: another file's head", resv_hash(c->fd, foreign, 1, bo, 0, 0, NULL), ENOENT);
	NEG(c, "RESV_HASH: unknown BO", resv_hash(c->fd, head, 1, 0x7fffffff, 0, 0, NULL), ENOENT);
	NEG(c, "RESV_HASH: keys past the BO",
	    resv_hash(c->fd, head, RESV_BO_SIZE / (RESV_DIM * 2) + 1, bo, 0, 0, NULL), EINVAL);
	NEG(c, "RESV_HASH: count 2^32-1 (no overflow)",
	    resv_hash(c->fd, head, 0xffffffffu, bo, 0, 0, NULL), EINVAL);
	NEG(c, "RESV_HASH: offset near 2^64 (no overflow)",
	    resv_hash(c->fd, head, 1, bo, ~0ull - 1, 0, NULL), EINVAL);
	if (!POS(c, "RESV_HASH: 16 keys", resv_hash(c->fd, head, 16, bo, 0, 0, &before)))
		return;
	if (resv_stats(c->fd, &st) || st.max_tokens * RESV_DIM * 2 > RESV_BO_SIZE) {
		vt_report(0, "RESV: stats, or max_tokens %u beyond the test BO", st.max_tokens);
		return;
	}
	NEG(c, "RESV_HASH: more keys than the head holds",
	    resv_hash(c->fd, head, st.max_tokens - before + 1, bo, 0, 0, NULL), ENOSPC);
	ok = !resv_hash(c->fd, head, 1, bo, 0, 0, &tokens) && tokens == before + 1;
	vt_report(ok, "RESV_HASH: the refused batch added nothing (%u tokens, want %u)", tokens,
		  before + 1);
}

static void test_resv_select(struct ctx *c, uint32_t head, uint32_t foreign, uint32_t bo)
{
	struct drm_vrex_resv_select_item it = { .head = head, .query_handle = bo, .out_handle = bo,
						.out_offset = 4096, .max_ranges = 16 };
	struct drm_vrex_resv_select_item two[2];
	struct drm_vrex_resv_stats st0, st;
	struct {
		struct drm_vrex_resv_select_item it;
		uint64_t tail;
	} big = { .it = it };
	struct drm_vrex_resv_select_item *many;
	int ok;

	NEG(c, "RESV_SELECT: count 0", resv_select(c->fd, &it, 0, sizeof(it), 0), EINVAL);
	NEG(c, "RESV_SELECT: batch flag", resv_select(c->fd, &it, 1, sizeof(it), 1), EINVAL);
	NEG(c, "RESV_SELECT: elem_size 0", resv_select(c->fd, &it, 1, 0, 0), EINVAL);
	NEG(c, "RESV_SELECT: elem_size above DRM_VREX_MAX_ELEM_SIZE",
	    resv_select(c->fd, &it, 1, DRM_VREX_MAX_ELEM_SIZE + 1, 0), E2BIG);
	many = calloc(DRM_VREX_MAX_BATCH + 1, sizeof(*many));
	if (many) {
		NEG(c, "RESV_SELECT: count DRM_VREX_MAX_BATCH + 1",
		    resv_select(c->fd, many, DRM_VREX_MAX_BATCH + 1, sizeof(*many), 0), EINVAL);
		free(many);
	}
	NEG(c, "RESV_SELECT: items pointer unmapped",
	    resv_select(c->fd, c->guard, 1, sizeof(it), 0), EFAULT);
	big.tail = 1;
	NEG(c, "RESV_SELECT: larger element with a non-zero tail",
	    resv_select(c->fd, &big, 1, sizeof(big), 0), E2BIG);
	big.tail = 0;
	if (POS(c, "RESV_SELECT: larger element with a zero tail",
		resv_select(c->fd, &big, 1, sizeof(big), 0)))
		vt_report(big.it.head_tokens > 0 && big.tail == 0,
			  "RESV_SELECT: results written back, tail untouched");
	{
		/* An old binary's 16-byte item: the rest reads as zero (no ranges). */
		struct drm_vrex_resv_select_item small = it;

		small.max_ranges = 77;
		if (POS(c, "RESV_SELECT: 16-byte element zero-extended",
			resv_select(c->fd, &small, 1, 16, 0)))
			vt_report(small.max_ranges == 77, "RESV_SELECT: bytes past 16 not written");
	}

	it.flags = 1u << 31;
	NEG(c, "RESV_SELECT: unknown item flag", resv_select(c->fd, &it, 1, sizeof(it), 0), EINVAL);
	it.flags = 0;
	it.pad = 1;
	NEG(c, "RESV_SELECT: non-zero item pad", resv_select(c->fd, &it, 1, sizeof(it), 0), EINVAL);
	it.pad = 0;
	it.query_offset = 3;
	NEG(c, "RESV_SELECT: odd query offset", resv_select(c->fd, &it, 1, sizeof(it), 0), EINVAL);
	it.query_offset = RESV_BO_SIZE - RESV_DIM;
	NEG(c, "RESV_SELECT: query past the BO", resv_select(c->fd, &it, 1, sizeof(it), 0), EINVAL);
	it.query_offset = 0;
	it.out_offset = 4098;
	NEG(c, "RESV_SELECT: ranges not 4-aligned", resv_select(c->fd, &it, 1, sizeof(it), 0),
	    EINVAL);
	it.out_offset = 4096;
	it.max_ranges = 0xffffffffu;
	NEG(c, "RESV_SELECT: room for 2^32-1 ranges (past the BO, no overflow)",
	    resv_select(c->fd, &it, 1, sizeof(it), 0), EINVAL);
	it.max_ranges = 16;
	it.out_handle = 0x7fffffff;
	NEG(c, "RESV_SELECT: unknown output BO", resv_select(c->fd, &it, 1, sizeof(it), 0), ENOENT);
	it.out_handle = bo;
	it.query_handle = 0x7fffffff;
	NEG(c, "RESV_SELECT: unknown query BO", resv_select(c->fd, &it, 1, sizeof(it), 0), ENOENT);
	it.query_handle = bo;
	it.head = foreign;
	NEG(c, "RESV_SELECT: another file's head", resv_select(c->fd, &it, 1, sizeof(it), 0), ENOENT);
	it.head = head;

	/* Validated as a whole: a bad second item, and the first did not run either. */
	two[0] = it;
	two[1] = it;
	two[1].head = foreign;
	if (resv_stats(c->fd, &st0)) {
		vt_report(0, "RESV: stats");
		return;
	}
	NEG(c, "RESV_SELECT: good item then another file's head",
	    resv_select(c->fd, two, 2, sizeof(two[0]), 0), ENOENT);
	memset(&st, 0, sizeof(st));
	ok = !resv_stats(c->fd, &st) && st.selects == st0.selects;
	vt_report(ok, "RESV_SELECT: a refused batch selected nothing (%llu -> %llu)",
		  (unsigned long long)st0.selects, (unsigned long long)st.selects);
	two[1].head = head;
	if (POS(c, "RESV_SELECT: two items", resv_select(c->fd, two, 2, sizeof(two[0]), 0)))
		vt_report(!resv_stats(c->fd, &st) && st.selects == st0.selects + 2 &&
			  two[0].ranges == two[1].ranges && two[0].qhash == two[1].qhash,
			  "RESV_SELECT: both ran, same query same answer");
}

static void test_resv(struct ctx *c)
{
	struct drm_vrex_resv_head_create a = resv_head_args(), fa = resv_head_args();
	struct drm_vrex_resv_head_destroy d;
	int16_t *keys;
	uint32_t bo, i;
	int fd2;

	test_resv_create(c);
	test_resv_exhaust(c);
	fd2 = vt_open_node(NULL, 0);
	if (fd2 < 0 || vt_ioctl(c->fd, DRM_IOCTL_VREX_RESV_HEAD_CREATE, &a) ||
	    vt_ioctl(fd2, DRM_IOCTL_VREX_RESV_HEAD_CREATE, &fa) ||
	    vt_bo_create(c->fd, RESV_BO_SIZE, 1, 0, &bo, NULL)) {
		vt_report(0, "RESV: setup (heads, BO)");
		if (fd2 >= 0)
			close(fd2);
		return;
	}
	keys = vt_bo_map(c->fd, bo, RESV_BO_SIZE);
	if (!keys) {
		vt_report(0, "RESV: map the key BO");
		close(fd2);
		return;
	}
	for (i = 0; i < RESV_BO_SIZE / 2; i++)
		keys[i] = (int16_t)((i * 2654435761u) >> 16);
	munmap(keys, RESV_BO_SIZE);
	/* The other file's head id, if this file has no head of that id. */
	if (fa.head == a.head)
		fa.head = 0x7ffffffe;

	test_resv_hash(c, a.head, fa.head, bo);
	test_resv_select(c, a.head, fa.head, bo);
	NEG(c, "RESV_TRUNCATE: unknown head", resv_truncate(c->fd, 0x7fffffff, 0), ENOENT);
	NEG(c, "RESV_TRUNCATE: another file's head", resv_truncate(c->fd, fa.head, 0), ENOENT);
	NEG(c, "RESV_TRUNCATE: keep more tokens than the head holds",
	    resv_truncate(c->fd, a.head, 0x7fffffff), EINVAL);
	POS(c, "RESV_TRUNCATE: keep 3", resv_truncate(c->fd, a.head, 3));
	d = (struct drm_vrex_resv_head_destroy){ .head = fa.head };
	NEG(c, "RESV_HEAD_DESTROY: another file's head",
	    vt_ioctl(c->fd, DRM_IOCTL_VREX_RESV_HEAD_DESTROY, &d), ENOENT);
	d.head = a.head;
	POS(c, "RESV_HEAD_DESTROY: own head", vt_ioctl(c->fd, DRM_IOCTL_VREX_RESV_HEAD_DESTROY, &d));
	NEG(c, "RESV_HEAD_DESTROY: twice", vt_ioctl(c->fd, DRM_IOCTL_VREX_RESV_HEAD_DESTROY, &d),
	    ENOENT);
	NEG(c, "RESV_HASH: destroyed head", resv_hash(c->fd, a.head, 1, bo, 0, 0, NULL), ENOENT);
	vt_gem_close(c->fd, bo);
	close(fd2);
}

/* The retired REG_READ id stays reserved: refused whatever the argument (it read the ID before). */
static void test_reg_read(struct ctx *c)
{
	__u64 rr = 0;

	NEG(c, "RESERVED_10 (retired REG_READ): offset 0", vt_ioctl(c->fd, VT_IOCTL_RESERVED_10, &rr),
	    EINVAL);
	rr = 0x1000 - 4;
	NEG(c, "RESERVED_10 (retired REG_READ): last register",
	    vt_ioctl(c->fd, VT_IOCTL_RESERVED_10, &rr), EINVAL);
}

/* A file, two streams with one frame and one block each, and a guard page. */
static int setup(struct ctx *c)
{
	struct drm_vrex_query q = { .param = DRM_VREX_QUERY_DEVICE_INFO, .size = sizeof(info),
				    .ptr = (uintptr_t)&info };
	struct drm_vrex_shie_insert_item it;
	unsigned char *p, *g;
	unsigned int i;

	c->fd = vt_open_node(NULL, 0);
	if (c->fd < 0 || vt_ioctl(c->fd, DRM_IOCTL_VREX_QUERY, &q))
		return -1;
	if (vt_stream_create(c->fd, 0, 0, &c->stream) ||
	    vt_stream_create(c->fd, 0, 0, &c->stream2) ||
	    vt_bo_create(c->fd, BO_SIZE, 1, 0, &c->luma, NULL) ||
	    vt_bo_create(c->fd, BO_SIZE, 2, 0, &c->kv, NULL))
		return -1;
	p = vt_bo_map(c->fd, c->luma, BO_SIZE);
	if (!p)
		return -1;
	for (i = 0; i < BO_SIZE; i++)
		p[i] = (unsigned char)((i * 7) ^ (i >> 7) * 13);
	munmap(p, BO_SIZE);
	if (frame(c->fd, c->stream, c->luma, c->fp) || frame(c->fd, c->stream2, c->luma, NULL))
		return -1;
	it = vt_kv_item(c->fp, c->kv, 0, 0, 0);
	if (vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, c->stream, &it, 1, sizeof(it)) || it.result)
		return -1;
	c->block = it.block;
	it = vt_kv_item(c->fp, c->kv, KV_LEN, 0, 0);
	if (vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, c->stream2, &it, 1, sizeof(it)) || it.result)
		return -1;
	c->block2 = it.block;
	g = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g == MAP_FAILED || mprotect(g + 4096, 4096, PROT_NONE))
		return -1;
	c->guard = g + 4096;
	return 0;
}

int main(void)
{
	struct ctx c = { 0 };

	if (setup(&c)) {
		printf("setup failed: %s\nnegative: 0 passed, 1 failed\n", strerror(errno));
		return 1;
	}
	vt_report(usable(&c), "setup: device usable, block found");
	test_sizes(&c);
	test_query_stats(&c);
	test_bo(&c);
	test_streams(&c);
	test_frame(&c);
	test_insert(&c);
	test_lookup(&c);
	test_retire(&c);
	test_reg_read(&c);
	test_resv(&c);
	close(c.fd);
	return vt_finish("negative");
}
