// SPDX-License-Identifier: MIT
/*
 * vrex uAPI test, run as root inside a QEMU guest against vrex.ko with a
 * simulated device. Every ioctl gets positive cases and one negative case per
 * validation rule of uapi/drm/vrex_accel.h; isolation between two files,
 * mmap and dma-buf access, frame events, zombie release and leak checks
 * (debugfs counts) are exercised for real. One line per case, then
 * "uapi: N passed, M failed". Build: gcc -static -I/usr/include/libdrm -Iuapi.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vrex_test_util.h"

#define W VT_FRAME_W
#define H VT_FRAME_H
#define KV_LEN VT_KV_LEN

/* Passed negative cases; the positive ones are the rest of vt_passed. */
static int n_neg;

static void report(int ok, int negative, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vt_vreport(ok, negative ? "[neg]" : "[pos]", fmt, ap);
	va_end(ap);
	if (ok && negative)
		n_neg++;
}


/* Positive: the call must succeed. */
#define POS(name, call)                                                                   \
	({                                                                                \
		int r_ = (call);                                                          \
		report(r_ == 0, 0, "%s (ret %d %s)", name, r_, r_ ? strerror(-r_) : "");  \
		r_ == 0;                                                                  \
	})
/* Negative: the call must fail with exactly -err. */
#define NEG(name, call, err)                                                              \
	do {                                                                              \
		int r_ = (call);                                                          \
		report(r_ == -(err), 1, "%s: want %s got %d", name, strerror(err), r_);   \
	} while (0)
#define CHECK(name, cond) report(!!(cond), 0, "%s", name)
/* CHECK that also yields the condition. */
#define CHECKV(name, cond)                              \
	({                                              \
		int c_ = !!(cond);                      \
		report(c_, 0, "%s", name);              \
		c_;                                     \
	})

static int open_node(void)
{
	char path[300];
	int fd = vt_open_node(path, sizeof(path));

	if (fd >= 0)
		printf("node: %s\n", path);
	return fd;
}

/* ---- thin wrappers ------------------------------------------------------- */

/* A recognisable user_data per stream: the frame event must echo it. */
static int frame(int fd, uint32_t stream, uint32_t handle, uint32_t flags,
		 struct drm_vrex_frame_submit *out)
{
	return vt_frame_submit(fd, stream, handle, flags, 0xfeedull << 16 | stream, out);
}

static int frame_args(int fd, struct drm_vrex_frame_submit f)
{
	return vt_ioctl(fd, DRM_IOCTL_VREX_FRAME_SUBMIT, &f);
}

static int insert(int fd, uint32_t stream, struct drm_vrex_shie_insert_item *items, uint32_t n)
{
	return vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_INSERT, stream, items, n, sizeof(*items));
}

static int lookup(int fd, uint32_t stream, struct drm_vrex_shie_lookup_item *items, uint32_t n)
{
	return vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_LOOKUP, stream, items, n, sizeof(*items));
}

static struct drm_vrex_shie_lookup_item similar(const __u64 fp[2], uint32_t region,
						uint32_t radius, uint32_t flags)
{
	struct drm_vrex_shie_lookup_item it = {
		.fp = { fp[0], fp[1] }, .kind = DRM_VREX_LOOKUP_SIMILAR, .region = region,
		.radius = radius, .flags = flags,
	};

	return it;
}

static void paint(uint8_t *p, int seed, int shift)
{
	int x, y;

	for (y = 0; y < H; y++)
		for (x = 0; x < W; x++)
			p[y * W + x] = (uint8_t)(((x + shift) / 8 * 37 + y / 8 * 91 + seed * 53) ^
						 ((x + shift) * y * seed));
}

/* ---- the cases ------------------------------------------------------------- */

static struct drm_vrex_device_info info;

/* What the device under test reports as DRM_VREX_QUERY simulated (1 unless told otherwise). */
static unsigned int expect_simulated(void)
{
	const char *e = getenv("VREX_EXPECT_SIMULATED");

	return e && !strcmp(e, "0") ? 0 : 1;
}

static void test_query(int fd)
{
	struct drm_vrex_query q = { .param = DRM_VREX_QUERY_DEVICE_INFO };
	struct drm_vrex_bank_info *bi;
	unsigned char buf[sizeof(info) + 16];
	char name[32] = { 0 };
	struct drm_version v = { .name = name, .name_len = sizeof(name) - 1 };
	uint32_t i;

	if (POS("version: DRM_IOCTL_VERSION", vt_ioctl(fd, DRM_IOCTL_VERSION, &v)))
		CHECK("version: the driver reports the uAPI header's version",
		      v.version_major == DRM_VREX_VERSION_MAJOR &&
		      v.version_minor == DRM_VREX_VERSION_MINOR);

	if (POS("query: size only (ptr 0)", vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q)))
		CHECK("query: reported size is sizeof(device_info)", q.size == sizeof(info));
	q.size = sizeof(info);
	q.ptr = (uintptr_t)&info;
	POS("query: device info", vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q));
	/* VREX_EXPECT_SIMULATED=0: scripts/qemu-test.sh's lines on the QEMU device model. */
	CHECK("query: id VREX, simulated as expected, FCC+SHIE caps",
	      info.hw_id == 0x56524558 && info.simulated == expect_simulated() &&
	      (info.caps & (DRM_VREX_CAP_FCC | DRM_VREX_CAP_SHIE)) ==
		      (DRM_VREX_CAP_FCC | DRM_VREX_CAP_SHIE));
	CHECK("query: bank layout sane", info.bank_count >= 4 && info.bank_count <= 64 &&
	      info.bank_size >= 65536 && info.max_batch == 4096 &&
					 info.max_streams >= 4 && info.zombie_frames >= 1);
	printf("info: %u banks x %llu, group %u, streams %u, shie %u, blocks %u, zombie %u\n",
	       info.bank_count, (unsigned long long)info.bank_size, info.group_banks,
	       info.max_streams, info.shie_capacity, info.block_capacity, info.zombie_frames);

	memset(buf, 0xa5, sizeof(buf));
	q.size = 8;
	q.ptr = (uintptr_t)buf;
	POS("query: short buffer (8 bytes)", vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q));
	CHECK("query: short copy writes 8 bytes only, size says kernel's",
	      !memcmp(buf, &info, 8) && buf[8] == 0xa5 && q.size == sizeof(info));
	memset(buf, 0xa5, sizeof(buf));
	q.size = sizeof(buf);
	POS("query: larger buffer", vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q));
	CHECK("query: larger buffer keeps the tail", !memcmp(buf, &info, sizeof(info)) &&
	      buf[sizeof(info)] == 0xa5 &&
						     q.size == sizeof(info));
	q.param = 99;
	NEG("query: unknown param", vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q), EINVAL);
	q.param = DRM_VREX_QUERY_DEVICE_INFO;
	q.size = sizeof(info);
	q.ptr = 16;
	NEG("query: bad user pointer", vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q), EFAULT);

	bi = calloc(1, sizeof(*bi));
	q.param = DRM_VREX_QUERY_BANKS;
	q.size = sizeof(*bi);
	q.ptr = (uintptr_t)bi;
	POS("query: banks", vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q));
	for (i = 0; i < info.bank_count && !bi->kv_blocks[i]; i++)
		;
	CHECK("query: banks count matches, no KV blocks yet",
	      bi->bank_count == info.bank_count && i == info.bank_count);
	free(bi);
}

static void test_stats(int fd)
{
	struct drm_vrex_stats st;
	struct drm_vrex_stats_query q = { 0 };

	if (POS("stats: size only", vt_ioctl(fd, DRM_IOCTL_VREX_STATS, &q)))
		CHECK("stats: size is sizeof(stats)", q.size == sizeof(st));
	q.ptr = (uintptr_t)&st;
	POS("stats: read", vt_ioctl(fd, DRM_IOCTL_VREX_STATS, &q));
	q.pad = 1;
	NEG("stats: non-zero pad", vt_ioctl(fd, DRM_IOCTL_VREX_STATS, &q), EINVAL);
}

static void test_bo(int fd)
{
	uint64_t all = info.bank_count == 64 ? ~0ull : (1ull << info.bank_count) - 1;
	uint32_t h, h2, bank, last = info.bank_count - 1;
	struct drm_vrex_bo_create c;
	struct drm_vrex_bo_mmap_offset mo;
	struct drm_prime_handle ph;
	uint8_t *p, *p2, *dp;
	size_t i;
	int ok;

	if (POS("bo: create 64 KiB in bank 0", vt_bo_create(fd, 65536, 1, DRM_VREX_BO_KV, &h, &bank)))
		CHECK("bo: placed in bank 0", bank == 0);
	vt_gem_close(fd, h);
	if (POS("bo: create with mask {1,2}", vt_bo_create(fd, 4096, 6, 0, &h, &bank)))
		CHECK("bo: lowest bank of the mask", bank == 1);
	vt_gem_close(fd, h);
	NEG("bo: size 0", vt_bo_create(fd, 0, 1, 0, &h, NULL), EINVAL);
	NEG("bo: size above a bank", vt_bo_create(fd, info.bank_size + 1, 1, 0, &h, NULL), EINVAL);
	NEG("bo: size overflow", vt_bo_create(fd, ~0ull, 1, 0, &h, NULL), EINVAL);
	NEG("bo: empty bank mask", vt_bo_create(fd, 4096, 0, 0, &h, NULL), EINVAL);
	if (info.bank_count < 64)
		NEG("bo: mask past the bank count",
		    vt_bo_create(fd, 4096, 1ull << info.bank_count, 0, &h, NULL), EINVAL);
	NEG("bo: unknown flag", vt_bo_create(fd, 4096, 1, 1u << 7, &h, NULL), EINVAL);
	memset(&c, 0, sizeof(c));
	c.size = 4096;
	c.bank_mask = 1;
	c.pad = 1;
	NEG("bo: non-zero pad", vt_ioctl(fd, DRM_IOCTL_VREX_BO_CREATE, &c), EINVAL);

	/* Fill the last bank, then: full mask bit -> ENOSPC, a second bank -> placed there. */
	if (POS("bo: a whole bank", vt_bo_create(fd, info.bank_size, 1ull << last, 0, &h, &bank))) {
		NEG("bo: full bank", vt_bo_create(fd, 4096, 1ull << last, 0, &h2, NULL), ENOSPC);
		if (POS("bo: full bank skipped", vt_bo_create(fd, 4096, (1ull << last) | (1ull << (last - 1)),
							      0, &h2, &bank)))
			CHECK("bo: next bank with room used", bank == last - 1);
		vt_gem_close(fd, h2);
		vt_gem_close(fd, h);
		if (POS("bo: bank reusable after close", vt_bo_create(fd, info.bank_size, 1ull << last,
								      0, &h, NULL)))
			vt_gem_close(fd, h);
	}
	(void)all;

	/* mmap: fresh memory is zero, writes are visible through a second mapping. */
	if (!POS("bo: create 3 pages for mmap", vt_bo_create(fd, 3 * 4096 - 100, 1 << 3, 0, &h, NULL)))
		return;
	mo = (struct drm_vrex_bo_mmap_offset){ .handle = h };
	POS("bo: mmap offset", vt_ioctl(fd, DRM_IOCTL_VREX_BO_MMAP_OFFSET, &mo));
	p = vt_bo_map(fd, h, 3 * 4096);
	CHECK("bo: mmap the rounded size", p != NULL);
	if (p) {
		for (ok = 1, i = 0; i < 3 * 4096; i++)
			ok &= p[i] == 0;
		CHECK("bo: new BO reads zero", ok);
		for (i = 0; i < 3 * 4096; i++)
			p[i] = (uint8_t)(i * 7 + 3);
		p2 = vt_bo_map(fd, h, 3 * 4096);
		for (ok = p2 != NULL, i = 0; p2 && i < 3 * 4096; i++)
			ok &= p2[i] == (uint8_t)(i * 7 + 3);
		CHECK("bo: second mapping sees the writes", ok);
		if (p2)
			munmap(p2, 3 * 4096);
	}
	CHECK("bo: MAP_PRIVATE refused",
	      mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, (off_t)mo.offset) == MAP_FAILED);
	CHECK("bo: mapping past the BO refused",
	      mmap(NULL, 4 * 4096, PROT_READ, MAP_SHARED, fd, (off_t)mo.offset) == MAP_FAILED);
	mo.pad = 1;
	NEG("bo: mmap offset non-zero pad", vt_ioctl(fd, DRM_IOCTL_VREX_BO_MMAP_OFFSET, &mo), EINVAL);
	mo = (struct drm_vrex_bo_mmap_offset){ .handle = 0xdead };
	NEG("bo: mmap offset bad handle", vt_ioctl(fd, DRM_IOCTL_VREX_BO_MMAP_OFFSET, &mo), ENOENT);

	/* dma-buf export: the fd has the BO's size and maps the same memory. */
	ph = (struct drm_prime_handle){ .handle = h, .flags = DRM_CLOEXEC | DRM_RDWR };
	if (POS("prime: export dma-buf", vt_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph))) {
		CHECK("prime: dma-buf size is the rounded BO size",
		      lseek(ph.fd, 0, SEEK_END) == 3 * 4096);
		dp = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ph.fd, 0);
		CHECK("prime: mmap the dma-buf", dp != MAP_FAILED);
		if (dp != MAP_FAILED && p) {
			for (ok = 1, i = 0; i < 3 * 4096; i++)
				ok &= dp[i] == (uint8_t)(i * 7 + 3);
			dp[5] = 0x42;
			CHECK("prime: dma-buf mapping shows the BO, and writes back",
			      ok && p[5] == 0x42);
			munmap(dp, 3 * 4096);
		}
		h2 = 0;
		ph.handle = 0;
		if (POS("prime: import own dma-buf", vt_ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &ph)))
			CHECK("prime: import returns the same handle", ph.handle == h);
		close(ph.fd);
	}
	ph = (struct drm_prime_handle){ .handle = 0xdead, .flags = DRM_CLOEXEC };
	NEG("prime: export bad handle", vt_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph), ENOENT);
	if (p)
		munmap(p, 3 * 4096);
	vt_gem_close(fd, h);
	NEG("bo: closed handle", vt_ioctl(fd, DRM_IOCTL_VREX_BO_MMAP_OFFSET,
					  &(struct drm_vrex_bo_mmap_offset){ .handle = h }), ENOENT);
}

static void test_streams(int fd)
{
	struct drm_vrex_stream_create c;
	uint32_t s, ids[64], i, n;

	if (POS("stream: create", vt_stream_create(fd, 0, 0, &s))) {
		POS("stream: destroy", vt_stream_destroy(fd, s));
		NEG("stream: double destroy", vt_stream_destroy(fd, s), ENOENT);
	}
	if (POS("stream: create pooled", vt_stream_create(fd, DRM_VREX_STREAM_POOLED, 7, &s)))
		vt_stream_destroy(fd, s);
	NEG("stream: pool without POOLED", vt_stream_create(fd, 0, 7, &s), EINVAL);
	NEG("stream: unknown flag", vt_stream_create(fd, 1u << 5, 0, &s), EINVAL);
	c = (struct drm_vrex_stream_create){ .pad = 1 };
	NEG("stream: non-zero pad", vt_ioctl(fd, DRM_IOCTL_VREX_STREAM_CREATE, &c), EINVAL);
	NEG("stream: destroy unknown id", vt_stream_destroy(fd, 12345), ENOENT);
	NEG("stream: destroy non-zero pad",
	    vt_ioctl(fd, DRM_IOCTL_VREX_STREAM_DESTROY, &(struct drm_vrex_stream_destroy){ .pad = 1 }),
	    EINVAL);

	for (n = 0; n < info.max_streams && n < 64; n++)
		if (vt_stream_create(fd, 0, 0, &ids[n]))
			break;
	CHECK("stream: all hardware slots can be opened", n == info.max_streams);
	NEG("stream: no slot left", vt_stream_create(fd, 0, 0, &s), EBUSY);
	for (i = 0; i < n; i++)
		vt_stream_destroy(fd, ids[i]);
	if (POS("stream: slot free again after destroy", vt_stream_create(fd, 0, 0, &s)))
		vt_stream_destroy(fd, s);
}

struct ctx {
	int fd;
	uint32_t stream, luma, kv;
	uint8_t *lp;
};

static void test_frames(struct ctx *c)
{
	struct drm_vrex_frame_submit f1, f2, bad;
	struct drm_vrex_event_frame ev;
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	ssize_t n;

	paint(c->lp, 1, 0);
	if (POS("frame: submit", frame(c->fd, c->stream, c->luma, 0, &f1)))
		CHECK("frame: group inside the banks, fingerprint set",
		      f1.bank_count == info.group_banks &&
		      f1.bank_first + f1.bank_count <= info.bank_count && (f1.fp[0] | f1.fp[1]));
	paint(c->lp, 1, 2);
	if (POS("frame: submit with event", frame(c->fd, c->stream, c->luma, DRM_VREX_FRAME_EVENT,
						  &f2))) {
		CHECK("frame: frame number advances", f2.frame == f1.frame + 1);
		CHECK("frame: event pending (poll)", poll(&pfd, 1, 1000) == 1 &&
		      (pfd.revents & POLLIN));
		n = read(c->fd, &ev, sizeof(ev));
		CHECK("frame: event read back with its payload",
		      n == sizeof(ev) && ev.base.type == DRM_VREX_EVENT_FRAME_DONE &&
		      ev.base.length == sizeof(ev) && ev.user_data == f2.user_data &&
		      ev.stream == c->stream && ev.frame == f2.frame && ev.fp[0] == f2.fp[0] &&
		      ev.fp[1] == f2.fp[1] && ev.group == f2.group);
		CHECK("frame: no event without the flag", poll(&pfd, 1, 0) == 0);
	}

	bad = (struct drm_vrex_frame_submit){ .stream = c->stream, .handle = c->luma, .width = W,
					      .height = H, .stride = W };
#define BADF(name, field, val, err)                                  \
	do {                                                         \
		struct drm_vrex_frame_submit b_ = bad;               \
		b_.field = val;                                      \
		NEG("frame: " name, frame_args(c->fd, b_), err);     \
	} while (0)
	BADF("width below min", width, info.fcc_min_dim - 1, EINVAL);
	BADF("height above max", height, info.fcc_max_dim + 1, EINVAL);
	BADF("stride below width", stride, W - 1, EINVAL);
	BADF("plane past the BO", offset, 65536 - W * H + 1, EINVAL);
	BADF("offset overflow", offset, ~0ull - 10, EINVAL);
	BADF("unknown flag", flags, 1u << 4, EINVAL);
	BADF("non-zero pad", pad, 1, EINVAL);
	BADF("bad handle", handle, 0xdead, ENOENT);
	BADF("bad stream", stream, 0xdead, ENOENT);
	POS("frame: plane ending exactly at the BO end",
	    frame_args(c->fd, (struct drm_vrex_frame_submit){ .stream = c->stream, .handle = c->luma,
		       .offset = 65536 - W * H, .width = W,
							       .height = H, .stride = W }));
	/* Device failure (fault injection): EIO, then the device works again. */
	if (vt_debugfs_dir()[0] && !vt_debugfs_write("fail_cmds", "1")) {
		NEG("frame: injected command failure", frame(c->fd, c->stream, c->luma, 0, NULL), EIO);
		POS("frame: usable after the injected failure", frame(c->fd, c->stream, c->luma, 0,
								      NULL));
	}
}

/* The FCC's region motion (uAPI 1.5), and a pre-1.5 binary's 96-byte FRAME_SUBMIT. */
#define OLD_FRAME_SUBMIT 96u
static uint32_t regions_moving(const struct drm_vrex_frame_submit *f)
{
	uint32_t r, n = 0;

	for (r = 0; r < sizeof(f->region_motion); r++)
		n += f->region_motion[r] > 0;
	return n;
}

static void test_region_motion(struct ctx *c)
{
	struct drm_vrex_frame_submit f;
	unsigned char old[sizeof(f)];
	unsigned long old_req = _IOC(_IOC_READ | _IOC_WRITE, DRM_IOCTL_BASE,
				     DRM_COMMAND_BASE + DRM_VREX_FRAME_SUBMIT, OLD_FRAME_SUBMIT);

	paint(c->lp, 3, 0);
	POS("region motion: first picture", frame(c->fd, c->stream, c->luma, 0, NULL));
	f = (struct drm_vrex_frame_submit){ .stream = c->stream, .handle = c->luma, .width = W,
					    .height = H, .stride = W };
	/* Output only: what the caller passes in is overwritten, never refused. */
	memset(f.region_motion, 0xff, sizeof(f.region_motion));
	if (POS("region motion: the same picture again", vt_ioctl(c->fd,
								  DRM_IOCTL_VREX_FRAME_SUBMIT, &f)))
		CHECK("region motion: a still frame marks no region", regions_moving(&f) == 0);
	paint(c->lp, 3, 2);
	if (POS("region motion: the picture panned 2 px", frame(c->fd, c->stream, c->luma, 0, &f)))
		CHECK("region motion: a panned frame marks every region", regions_moving(&f) == 16);

	/* A 96-byte caller: accepted, and nothing past its 96 bytes is written. */
	paint(c->lp, 3, 4);
	f = (struct drm_vrex_frame_submit){ .stream = c->stream, .handle = c->luma, .width = W,
					    .height = H, .stride = W };
	memset(old, 0xa5, sizeof(old));
	memcpy(old, &f, OLD_FRAME_SUBMIT);
	if (POS("region motion: a pre-1.5 (96-byte) FRAME_SUBMIT", vt_ioctl(c->fd, old_req, old))) {
		memcpy(&f, old, OLD_FRAME_SUBMIT);
		CHECK("region motion: the old struct gets its results", f.frame > 0 && (f.fp[0] | f.fp[1]));
		CHECK("region motion: nothing written past the old struct's 96 bytes",
		      old[OLD_FRAME_SUBMIT] == 0xa5 && old[sizeof(old) - 1] == 0xa5 &&
		      !memcmp(old + OLD_FRAME_SUBMIT, old + OLD_FRAME_SUBMIT + 1,
			      sizeof(old) - OLD_FRAME_SUBMIT - 1));
	}
}

/*
 * An older binary whose insert item ends before @block and @result (48 of 56
 * bytes): the missing fields are zero-extended going in, and only its 48
 * bytes per element are written back, so the bytes between elements it
 * packs are never touched. The blocks are found by lookup and removed again.
 */
#define OLD_ITEM 48u
static void test_small_elements(struct ctx *c, const __u64 fp[2])
{
	unsigned char buf[2 * OLD_ITEM + 8];
	struct drm_vrex_shie_insert_item it;
	struct drm_vrex_shie_lookup_item lk[2] = { vt_temporal(10, 0), vt_temporal(11, 0) };
	struct drm_vrex_released_block rel[64];
	struct drm_vrex_shie_batch b = { .stream = c->stream, .count = 2, .elem_size = OLD_ITEM,
					 .items = (uintptr_t)buf };
	uint32_t ids[2], cap = 0, i;

	memset(buf, 0xa5, sizeof(buf));
	for (i = 0; i < 2; i++) {
		it = vt_kv_item(fp, c->kv, i * (uint64_t)KV_LEN, 10 + i, 0);
		memcpy(buf + i * OLD_ITEM, &it, OLD_ITEM);
	}
	if (!POS("insert: elem_size smaller than the struct (zero-extended)",
		 vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, &b)))
		return;
	CHECK("insert: nothing written past each smaller element",
	      buf[2 * OLD_ITEM] == 0xa5 && buf[sizeof(buf) - 1] == 0xa5);
	if (!POS("insert: smaller elements found", lookup(c->fd, c->stream, lk, 2)))
		return;
	CHECK("insert: both smaller elements applied", lk[0].hit_flags && lk[1].hit_flags);
	ids[0] = lk[0].block;
	ids[1] = lk[1].block;
	b.count = 1;
	b.elem_size = 8;	/* only fp[0]: a zero-extended TEMPORAL lookup must have fp 0 */
	NEG("lookup: 8-byte element with fp set is zero-extended and validated",
	    vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_LOOKUP, &b), EINVAL);
	if (POS("retire: smaller records (elem_size 16)",
		({ struct drm_vrex_shie_retire r = { .stream = c->stream, .remove_count = 2,
			.released_cap = 64, .elem_size = 16, .remove = (uintptr_t)ids,
			.released = (uintptr_t)rel };
		   int r_;
		   memset(rel, 0xa5, sizeof(rel));
		   r_ = vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_RETIRE, &r);
		   cap = r.released_cap;
		   r_; })))
		CHECK("retire: two 16-byte records written, the rest untouched",
		      cap == 2 && ((uint32_t *)rel)[0] == ids[0] &&
		      ((unsigned char *)rel)[32] == 0xa5);
}

static void test_shie(struct ctx *c)
{
	struct drm_vrex_shie_insert_item it[3], big[2][2];
	struct drm_vrex_shie_lookup_item lk[4];
	struct drm_vrex_shie_batch b;
	struct drm_vrex_frame_submit f;
	__u64 fp[2], near[2], far[2];
	uint64_t ins0, lk0;
	uint32_t blk, blk2;

	paint(c->lp, 7, 0);
	frame(c->fd, c->stream, c->luma, 0, &f);
	fp[0] = f.fp[0];
	fp[1] = f.fp[1];
	near[0] = fp[0] ^ 0x7;
	near[1] = fp[1];
	far[0] = ~fp[0];
	far[1] = ~fp[1];

	it[0] = vt_kv_item(fp, c->kv, 0, 0, 0);
	ins0 = vt_stat(c->fd, 6);
	if (POS("insert: one KV block", insert(c->fd, c->stream, it, 1)))
		CHECK("insert: item result 0", it[0].result == 0);
	blk = it[0].block;
	CHECK("stats: inserts counted", vt_stat(c->fd, 6) == ins0 + 1);
	it[0] = vt_kv_item(fp, c->kv, KV_LEN, 0, 0);
	if (POS("insert: same (region, frame) again", insert(c->fd, c->stream, it, 1)))
		CHECK("insert: per-item -EEXIST", it[0].result == -EEXIST);
	it[0] = (struct drm_vrex_shie_insert_item){ .fp = { fp[0], fp[1] }, .flags =
				DRM_VREX_INSERT_ALIAS, .region = 1, .block = blk };
	if (POS("insert: alias entry to the block", insert(c->fd, c->stream, it, 1)))
		CHECK("insert: alias keeps the block id", it[0].result == 0 && it[0].block == blk);

	lk[0] = vt_temporal(0, 0);
	lk[1] = similar(near, 0, 20, 0);
	lk[2] = similar(far, 0, 5, 0);
	lk[3] = vt_temporal(1, 0);
	lk0 = vt_stat(c->fd, 0);
	if (POS("lookup: temporal + similar batch", lookup(c->fd, c->stream, lk, 4))) {
		CHECK("lookup: temporal hit with the caller's handle/offset/length",
		      lk[0].hit_flags == DRM_VREX_HIT && lk[0].block == blk &&
		      lk[0].handle == c->kv && lk[0].offset == 0 && lk[0].length == KV_LEN &&
		      lk[0].stream == c->stream && lk[0].frame == f.frame);
		CHECK("lookup: similar hit is approximate at distance 3",
		      lk[1].hit_flags == (DRM_VREX_HIT | DRM_VREX_HIT_APPROX) &&
		      lk[1].distance == 3 && lk[1].block == blk && lk[1].found_fp[0] == fp[0]);
		CHECK("lookup: far fingerprint misses", lk[2].hit_flags == 0 && lk[2].handle == 0);
		CHECK("lookup: alias entry resolves to the block", lk[3].hit_flags && lk[3].block == blk);
	}
	CHECK("stats: lookups counted", vt_stat(c->fd, 0) == lk0 + 4);

	/*
	 * Element size larger than today's struct (a newer binary): a non-zero tail is a field this
	 * kernel does not know, so the batch is refused (E2BIG) with nothing applied; a zero tail
	 * works.
	 */
	memset(big, 0, sizeof(big));
	big[0][0] = vt_kv_item(fp, c->kv, 2 * KV_LEN, 2, 0);
	big[1][0] = vt_kv_item(fp, c->kv, 3 * KV_LEN, 3, 0);
	((unsigned char *)&big[1][1])[5] = 1;
	b = (struct drm_vrex_shie_batch){ .stream = c->stream, .count = 2,
					  .elem_size = sizeof(big[0]), .items = (uintptr_t)big };
	NEG("insert: larger element with a non-zero tail", vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_INSERT,
								    &b), E2BIG);
	CHECK("insert: refused larger batch applied nothing", big[0][0].result == 0 &&
	      big[0][0].block == 0);
	((unsigned char *)&big[1][1])[5] = 0;
	if (POS("insert: elem_size larger than the struct, zero tail",
		vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, &b))) {
		unsigned char *tail = (unsigned char *)&big[0][1];

		CHECK("insert: larger elements applied, tail untouched",
		      big[0][0].result == 0 && big[1][0].result == 0 && tail[0] == 0 &&
		      tail[sizeof(big[0][1]) - 1] == 0);
	}
	blk2 = big[0][0].block;
	test_small_elements(c, fp);

	/* Whole-batch validation: a bad item fails everything, nothing is applied. */
	ins0 = vt_stat(c->fd, 6);
#define BADI(name, stmt, err)                                                            \
	do {                                                                             \
		it[0] = vt_kv_item(fp, c->kv, 0, 4, 0);                                     \
		it[1] = vt_kv_item(fp, c->kv, KV_LEN, 5, 0);                                \
		stmt;                                                                    \
		NEG("insert: " name, insert(c->fd, c->stream, it, 2), err);              \
	} while (0)
	BADI("unknown item flag", it[1].flags = 1u << 6, EINVAL);
	BADI("region 16", it[1].region = 16, EINVAL);
	BADI("frame offset +3", it[1].frame_offset = 3, EINVAL);
	BADI("frame offset -4", it[1].frame_offset = -4, EINVAL);
	BADI("length 0", it[1].length = 0, EINVAL);
	BADI("range past the BO", it[1].offset = 65536 - KV_LEN + 1, EINVAL);
	BADI("offset + length overflow", it[1].offset = ~0ull - 100, EINVAL);
	BADI("length above 32 bits", it[1].length = 1ull << 32, EINVAL);
	BADI("bad handle", it[1].handle = 0xdead, ENOENT);
	BADI("alias with a handle", (it[1].flags = DRM_VREX_INSERT_ALIAS, it[1].block = blk), EINVAL);
	BADI("alias to an unknown block", (it[1].flags = DRM_VREX_INSERT_ALIAS, it[1].handle = 0,
					   it[1].offset = 0, it[1].length = 0, it[1].block = 99999),
	     ENOENT);
	CHECK("insert: failed batches applied nothing", vt_stat(c->fd, 6) == ins0);
	lk[0] = vt_temporal(4, 0);
	lookup(c->fd, c->stream, lk, 1);
	CHECK("insert: first item of a failed batch is absent", lk[0].hit_flags == 0);

#define BADB(name, stmt, err)                                                            \
	do {                                                                             \
		b = (struct drm_vrex_shie_batch){ .stream = c->stream, .count = 1,       \
						  .elem_size = sizeof(it[0]),            \
						  .items = (uintptr_t)it };              \
		it[0] = vt_kv_item(fp, c->kv, 0, 4, 0);                                     \
		stmt;                                                                    \
		NEG(name, vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, &b), err);           \
	} while (0)
	BADB("batch: count 0", b.count = 0, EINVAL);
	BADB("batch: count above max", b.count = DRM_VREX_MAX_BATCH + 1, EINVAL);
	BADB("batch: elem_size 0", b.elem_size = 0, EINVAL);
	BADB("batch: non-zero flags", b.flags = 1, EINVAL);
	BADB("batch: bad stream", b.stream = 0xdead, ENOENT);
	BADB("batch: bad items pointer", b.items = 16, EFAULT);

#define BADL(name, stmt)                                                                 \
	do {                                                                             \
		lk[0] = vt_temporal(0, 0);                                                  \
		lk[1] = similar(fp, 0, 20, 0);                                           \
		stmt;                                                                    \
		NEG("lookup: " name, lookup(c->fd, c->stream, lk, 2), EINVAL);           \
	} while (0)
	BADL("temporal with a fingerprint", lk[0].fp[0] = 1);
	BADL("temporal with a radius", lk[0].radius = 1);
	BADL("temporal with flags", lk[0].flags = DRM_VREX_LOOKUP_PAST_ONLY);
	BADL("temporal offset +3", lk[0].frame_offset = 3);
	BADL("similar with a frame offset", lk[1].frame_offset = -1);
	BADL("similar radius 32", lk[1].radius = DRM_VREX_MAX_RADIUS + 1);
	BADL("similar unknown flag", lk[1].flags = 1u << 9);
	BADL("unknown kind", lk[1].kind = 2);
	BADL("region 16", lk[1].region = 16);
	BADL("non-zero pad", lk[1].pad = 1);
	lk[0] = vt_temporal(0, 0);
	NEG("lookup: bad stream", lookup(c->fd, 0xdead, lk, 1), ENOENT);
	lk[0] = similar(fp, 0, 20, DRM_VREX_LOOKUP_PAST_ONLY);
	if (POS("lookup: PAST_ONLY excludes the current frame", lookup(c->fd, c->stream, lk, 1)))
		CHECK("lookup: PAST_ONLY finds nothing of the current frame", lk[0].hit_flags == 0);
	(void)blk2;
}

static void test_retire(struct ctx *c)
{
	struct drm_vrex_released_block rel[16];
	struct drm_vrex_shie_insert_item it[1];
	struct drm_vrex_shie_lookup_item lk[1];
	struct drm_vrex_shie_retire r;
	struct drm_vrex_frame_submit f;
	uint32_t cap, ids[2], blk, i, zombies, bos0, kv2;
	int found;

	/* Explicit removal first: three live blocks (offsets 0, 2, 3 x KV_LEN). */
	lk[0] = vt_temporal(2, 0);
	lookup(c->fd, c->stream, lk, 1);
	blk = lk[0].block;
	cap = 0;
	NEG("retire: no room for the live blocks", vt_shie_retire(c->fd, c->stream, NULL, 0, rel, &cap),
	    ENOSPC);
	CHECK("retire: ENOSPC reports the room needed", cap == 3);
	ids[0] = blk;
	ids[1] = blk;
	cap = 16;
	NEG("retire: duplicate ids", vt_shie_retire(c->fd, c->stream, ids, 2, rel, &cap), EINVAL);
	ids[0] = 99999;
	cap = 16;
	NEG("retire: unknown block", vt_shie_retire(c->fd, c->stream, ids, 1, rel, &cap), ENOENT);
	r = (struct drm_vrex_shie_retire){ .stream = c->stream, .flags = 1, .released_cap = 16,
					   .elem_size = sizeof(rel[0]), .released = (uintptr_t)rel };
	NEG("retire: non-zero flags", vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_RETIRE, &r), EINVAL);
	r.flags = 0;
	r.pad = 1;
	NEG("retire: non-zero pad", vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_RETIRE, &r), EINVAL);
	r.pad = 0;
	r.elem_size = 0;
	NEG("retire: elem_size 0", vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_RETIRE, &r), EINVAL);
	r.elem_size = sizeof(rel[0]);
	r.remove_count = DRM_VREX_MAX_BATCH + 1;
	NEG("retire: too many removals", vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_RETIRE, &r), EINVAL);
	r.remove_count = 0;
	r.stream = 0xdead;
	NEG("retire: bad stream", vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_RETIRE, &r), ENOENT);

	ids[0] = blk;
	cap = 16;
	if (POS("retire: explicit removal", vt_shie_retire(c->fd, c->stream, ids, 1, rel, &cap)))
		CHECK("retire: one REMOVED record with the caller's pointer",
		      cap == 1 && rel[0].block == blk && rel[0].reason == DRM_VREX_RELEASE_REMOVED &&
		      rel[0].handle == c->kv && rel[0].offset == 2 * KV_LEN &&
		      rel[0].length == KV_LEN);
	lookup(c->fd, c->stream, lk, 1);
	CHECK("retire: removed block is not found any more", lk[0].hit_flags == 0);

	/*
	 * Zombies: a block in a second BO whose handle is closed right away; the
	 * block keeps the BO alive until it goes cold and is released.
	 */
	if (!POS("retire: second KV BO", vt_bo_create(c->fd, 65536, 1 << 5, DRM_VREX_BO_KV, &kv2,
						      NULL)))
		return;
	paint(c->lp, 9, 0);
	frame(c->fd, c->stream, c->luma, 0, &f);
	it[0] = vt_kv_item(f.fp, kv2, 0, 6, 0);
	insert(c->fd, c->stream, it, 1);
	CHECK("retire: block in the second BO", it[0].result == 0);
	bos0 = vt_debugfs_count("bos");
	vt_gem_close(c->fd, kv2);
	if (vt_debugfs_dir()[0])
		CHECK("gem: closed BO stays alive while a block points into it",
		      vt_debugfs_count("bos") == (int)bos0);
	lk[0] = vt_temporal(6, 0);
	lookup(c->fd, c->stream, lk, 1);
	CHECK("lookup: hit on a closed BO reports handle 0",
	      lk[0].hit_flags && lk[0].handle == 0 && lk[0].block == it[0].block);
	for (i = 0; i < info.zombie_frames + 2; i++)
		frame(c->fd, c->stream, c->luma, 0, NULL);
	cap = 16;
	zombies = 0;
	found = 0;
	if (POS("retire: zombie release", vt_shie_retire(c->fd, c->stream, NULL, 0, rel, &cap))) {
		for (i = 0; i < cap; i++) {
			zombies += rel[i].reason == DRM_VREX_RELEASE_ZOMBIE;
			found |= rel[i].block == it[0].block && rel[i].offset == 0 &&
				 rel[i].reason == DRM_VREX_RELEASE_ZOMBIE;
		}
		CHECK("retire: every cold block released as a zombie", cap == 3 && zombies == 3 &&
		      found);
	}
	lk[0] = similar(f.fp, 6, 0, 0);
	lookup(c->fd, c->stream, lk, 1);
	CHECK("retire: released zombie is never returned", lk[0].hit_flags == 0);
	if (vt_debugfs_dir()[0]) {
		CHECK("gem: BO freed once its last block is released", vt_debugfs_count("bos") == (int)bos0 - 1);
		CHECK("debugfs: no blocks left", vt_debugfs_count("blocks") == 0);
	}
	cap = 0;
	POS("retire: nothing live, zero room is enough", vt_shie_retire(c->fd, c->stream, NULL, 0, NULL, &cap));
}

/* Hardware stream slot of @block from debugfs "shie" (kernel view); -1 if not listed. */
static int block_hw_stream(uint32_t block)
{
	char path[600], line[256];
	unsigned int b, hw;
	int found = -1;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/shie", vt_debugfs_dir());
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "%u %u", &b, &hw) == 2 && b == block) {
			found = (int)hw;
			break;
		}
	fclose(fp);
	return found;
}

/*
 * Similarity items of a batch reach the device as one LOOKUP_SIMILAR_BATCH
 * (one forged command forges every record): each record passes the same
 * ownership filter as a single lookup's registers.
 */
static void test_forged_batch(struct ctx *a, int fd_b, uint32_t s_b, uint32_t block)
{
	static const __u64 fp[2] = { 0x0123456789abcdefull, 0xfedcba9876543210ull };
	struct drm_vrex_shie_lookup_item lk[6];
	unsigned int i, ok;

	for (i = 0; i < 6; i++)
		lk[i] = similar(fp, 15 - i % 2, 0, i % 2 ? DRM_VREX_LOOKUP_SCOPE_POOL : 0);
	vt_debugfs_write_u32("forge_lookups", 1);
	if (POS("isolation: forged lookup batch in file A", lookup(a->fd, a->stream, lk, 6))) {
		for (i = 0, ok = 0; i < 6; i++)
			ok += lk[i].hit_flags == DRM_VREX_HIT && lk[i].block == block &&
			      lk[i].stream == a->stream && lk[i].length;
		CHECK("isolation: every forged record of A's own block reaches A", ok == 6);
	}
	for (i = 0; i < 6; i++)
		lk[i] = similar(fp, 15 - i % 2, 0, i % 2 ? DRM_VREX_LOOKUP_SCOPE_POOL : 0);
	vt_debugfs_write_u32("forge_lookups", 1);
	if (POS("isolation: forged lookup batch in file B", lookup(fd_b, s_b, lk, 6))) {
		for (i = 0, ok = 0; i < 6; i++)
			ok += lk[i].hit_flags == 0 && lk[i].block == 0 && lk[i].handle == 0;
		CHECK("isolation: forged records of A's block are misses in file B", ok == 6);
	}
	/* A block id the driver never handed out: a miss, not a crash or a stale handle. */
	vt_debugfs_write_u32("forge_block", 0x7ffffff0u);
	for (i = 0; i < 6; i++)
		lk[i] = similar(fp, 15 - i % 2, 0, 0);
	vt_debugfs_write_u32("forge_lookups", 1);
	if (POS("isolation: forged batch with an unknown block", lookup(a->fd, a->stream, lk, 6))) {
		for (i = 0, ok = 0; i < 6; i++)
			ok += lk[i].hit_flags == 0 && lk[i].block == 0;
		CHECK("isolation: forged records of an unknown block are misses", ok == 6);
	}
	vt_debugfs_write_u32("forge_block", block);
}

/*
 * The device's pools already keep one file's entries from another's lookups,
 * so the driver's own ownership filter is only reached when the device
 * reports a block it should not: the simulated device's forge knobs make the
 * next lookup report block @block of file A's stream slot. File A sees it
 * (the forged hit passes the filter when it is A's), file B gets a miss.
 */
static void test_forged_hit(struct ctx *a, int fd_b, uint32_t s_b, uint32_t block)
{
	struct drm_vrex_shie_lookup_item lk = vt_temporal(9, 0);
	int hw = block_hw_stream(block);

	if (!CHECKV("isolation: file A's block and stream slot in debugfs shie", hw >= 0) ||
	    !CHECKV("isolation: forge knobs present",
		    !vt_debugfs_write_u32("forge_block", block) &&
		    !vt_debugfs_write_u32("forge_stream", (unsigned int)hw)))
		return;
	lk.region = 15;	/* nothing there: only a forged report can hit */
	vt_debugfs_write_u32("forge_lookups", 1);
	if (POS("isolation: forged lookup in file A", lookup(a->fd, a->stream, &lk, 1)))
		CHECK("isolation: a forged report of A's own block reaches A",
		      lk.hit_flags & DRM_VREX_HIT && lk.block == block && lk.stream == a->stream);
	lk = vt_temporal(15, 0);
	vt_debugfs_write_u32("forge_lookups", 1);
	if (POS("isolation: forged lookup in file B", lookup(fd_b, s_b, &lk, 1)))
		CHECK("isolation: the device reporting A's block to file B is filtered (miss)",
		      lk.hit_flags == 0 && lk.block == 0 && lk.handle == 0);
	test_forged_batch(a, fd_b, s_b, block);
	vt_debugfs_write_u32("forge_lookups", 0);
}

static void test_isolation(struct ctx *a)
{
	struct drm_vrex_shie_insert_item it[1];
	struct drm_vrex_shie_lookup_item lk[1];
	struct drm_vrex_frame_submit f;
	uint32_t cap = 16, ids[1], s_b, luma_b, h_a;
	struct drm_vrex_released_block rel[4];
	int fd_b = open_node();

	if (!POS("isolation: second file opens", fd_b >= 0 ? 0 : -ENODEV))
		return;
	paint(a->lp, 3, 0);
	frame(a->fd, a->stream, a->luma, 0, &f);
	it[0] = vt_kv_item(f.fp, a->kv, 0, 9, 0);
	insert(a->fd, a->stream, it, 1);
	ids[0] = it[0].block;

	NEG("isolation: foreign stream destroy", vt_stream_destroy(fd_b, a->stream), ENOENT);
	NEG("isolation: foreign BO handle", vt_ioctl(fd_b, DRM_IOCTL_VREX_BO_MMAP_OFFSET,
						     &(struct drm_vrex_bo_mmap_offset){ .handle = a->kv }),
	    ENOENT);
	NEG("isolation: foreign stream frame", frame(fd_b, a->stream, a->luma, 0, NULL), ENOENT);
	if (!POS("isolation: own stream in file B", vt_stream_create(fd_b, 0, 0, &s_b)))
		goto out;
	vt_bo_create(fd_b, 65536, 1 << 4, DRM_VREX_BO_STAGING, &luma_b, NULL);
	/* A handle that names a real BO in file A and nothing in file B. */
	h_a = a->luma > a->kv ? a->luma : a->kv;
	if (h_a == luma_b && vt_bo_create(a->fd, 65536, 1 << 4, 0, &h_a, NULL))
		h_a = 0;
	CHECK("isolation: the foreign handle is a live BO of file A and not one of file B",
	      h_a && h_a != luma_b && !vt_ioctl(a->fd, DRM_IOCTL_VREX_BO_MMAP_OFFSET,
						&(struct drm_vrex_bo_mmap_offset){ .handle = h_a }));
	NEG("isolation: foreign BO in a frame", frame(fd_b, s_b, h_a, 0, NULL), ENOENT);
	POS("isolation: file B frame", frame(fd_b, s_b, luma_b, 0, NULL));
	it[0] = vt_kv_item(f.fp, h_a, 0, 9, 0);
	NEG("isolation: foreign BO in an insert", insert(fd_b, s_b, it, 1), ENOENT);
	it[0] = (struct drm_vrex_shie_insert_item){ .flags = DRM_VREX_INSERT_ALIAS, .region = 9,
						    .block = ids[0] };
	NEG("isolation: alias to a foreign block", insert(fd_b, s_b, it, 1), ENOENT);
	NEG("isolation: remove a foreign block", vt_shie_retire(fd_b, s_b, ids, 1, rel, &cap), ENOENT);
	lk[0] = similar(f.fp, 9, 31, DRM_VREX_LOOKUP_SCOPE_POOL);
	if (POS("isolation: similar lookup in file B", lookup(fd_b, s_b, lk, 1)))
		CHECK("isolation: file A's entries invisible to file B", lk[0].hit_flags == 0);
	lk[0] = similar(f.fp, 9, 0, 0);
	lookup(a->fd, a->stream, lk, 1);
	CHECK("isolation: file A still finds its own entry", lk[0].hit_flags && lk[0].block == ids[0]);
	test_forged_hit(a, fd_b, s_b, ids[0]);
out:
	close(fd_b);
}

/* One register from debugfs "window"; -errno on failure. */
static int64_t window_read(const char *path, uint32_t off, size_t len)
{
	uint32_t v[2] = { 0, 0 };
	int wfd = open(path, O_RDONLY), e;
	ssize_t n;

	if (wfd < 0)
		return -errno;
	n = pread(wfd, v, len, off);
	e = errno;
	close(wfd);
	if (n < 0)
		return -e;
	return n == 4 ? (int64_t)v[0] : -ENODATA;
}

/* REG_READ is retired (the id stays reserved, -EINVAL); registers are read from debugfs. */
static void test_reg_read(int fd)
{
	__u64 rr = 0;
	char path[600];
	pid_t pid;
	int st;

	NEG("reg_read: retired ioctl id refused", vt_ioctl(fd, VT_IOCTL_RESERVED_10, &rr), EINVAL);
	snprintf(path, sizeof(path), "%s/window", vt_debugfs_dir());
	CHECK("reg_read: debugfs window: ID reads VREX", window_read(path, 0, 4) == 0x56524558);
	CHECK("reg_read: debugfs window: BANK_COUNT matches the query",
	      window_read(path, 0x00c, 4) == info.bank_count);
	NEG("reg_read: debugfs window: unaligned", (int)window_read(path, 2, 4), EINVAL);
	NEG("reg_read: debugfs window: odd length", (int)window_read(path, 0, 3), EINVAL);
	CHECK("reg_read: debugfs window: nothing past the 4 KiB window",
	      window_read(path, 0x1000, 4) == -ENODATA);
	pid = fork();
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(2);
		_exit(window_read(path, 0, 4) < 0 ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	report(WIFEXITED(st) && WEXITSTATUS(st) == 0, 1, "reg_read: debugfs window refused to nobody");
}

static void test_fault_alloc(int fd)
{
	uint32_t h;

	if (!vt_debugfs_dir()[0] || vt_debugfs_write("fail_alloc", "1")) {
		report(0, 0, "fault injection: debugfs knob fail_alloc present");
		return;
	}
	NEG("bo: injected allocation failure", vt_bo_create(fd, 4096, 1, 0, &h, NULL), ENOMEM);
	if (POS("bo: allocation works after the failure", vt_bo_create(fd, 4096, 1, 0, &h, NULL)))
		vt_gem_close(fd, h);
}

/* A fresh file: the whole path once more, then close it with everything still live. */
static void test_usable_and_teardown(void)
{
	struct drm_vrex_shie_insert_item it[1];
	struct drm_vrex_shie_lookup_item lk[1];
	struct drm_vrex_frame_submit f;
	struct ctx c = { .fd = open_node() };
	uint8_t *p;

	if (c.fd < 0 || vt_stream_create(c.fd, DRM_VREX_STREAM_POOLED, 1, &c.stream) ||
	    vt_bo_create(c.fd, 65536, 1, DRM_VREX_BO_STAGING, &c.luma, NULL) ||
	    vt_bo_create(c.fd, 65536, 2, DRM_VREX_BO_KV, &c.kv, NULL) ||
	    !(p = vt_bo_map(c.fd, c.luma, 65536))) {
		report(0, 0, "usable: setup after all error cases");
		return;
	}
	paint(p, 5, 0);
	POS("usable: frame after all error cases", frame(c.fd, c.stream, c.luma, 0, &f));
	it[0] = vt_kv_item(f.fp, c.kv, 0, 0, 0);
	POS("usable: insert after all error cases", insert(c.fd, c.stream, it, 1));
	lk[0] = similar(f.fp, 0, 0, DRM_VREX_LOOKUP_SCOPE_POOL);
	if (POS("usable: lookup after all error cases", lookup(c.fd, c.stream, lk, 1)))
		CHECK("usable: exact hit", lk[0].hit_flags == DRM_VREX_HIT && lk[0].distance == 0);
	munmap(p, 65536);
	close(c.fd);	/* live stream, block and BOs: the kernel tears them down */
}

/* SIGBUS (1) or not (0) when a child process reads @p[@off]. */
static int faults_on_read(const volatile uint8_t *p, size_t off)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(p[off] == 0x77 ? 0 : 1);
	waitpid(pid, &st, 0);
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS;
}

/*
 * Hot unplug: unbind the device from its driver (any bus: the node's sysfs
 * device and its driver link) while a file, a stream, a BO mapping and a
 * dma-buf mapping of another BO are live. Ioctls then fail with ENODEV, both
 * mappings are revoked (an access raises SIGBUS in the process, nothing in
 * the kernel), new dma-buf mmaps fail, close is clean; binding again gives a
 * working device. A device that cannot be unbound is a failure, not a skip.
 */
static void test_unplug(void)
{
	char sys[128], devpath[PATH_MAX], drvpath[PATH_MAX], path[PATH_MAX + 16];
	struct drm_vrex_query q = { .param = DRM_VREX_QUERY_BANKS };
	struct drm_prime_handle ph = { .flags = DRM_CLOEXEC | DRM_RDWR };
	struct drm_prime_handle ph3 = { .flags = DRM_CLOEXEC | DRM_RDWR };
	const char *dev;
	uint32_t s, h, h2, h3;
	uint8_t *p = NULL, *dp = NULL, *cp = NULL;
	struct stat st;
	int fd, dfd = -1, cfd = -1;

	fd = open_node();
	if (fd < 0 || fstat(fd, &st)) {
		report(0, 0, "unplug: node");
		return;
	}
	snprintf(sys, sizeof(sys), "/sys/dev/char/%u:%u/device", major(st.st_rdev), minor(st.st_rdev));
	snprintf(path, sizeof(path), "%s/driver", sys);
	if (!CHECKV("unplug: the node's device and driver in sysfs",
		    realpath(sys, devpath) && realpath(path, drvpath))) {
		close(fd);
		return;
	}
	dev = strrchr(devpath, '/') + 1;
	printf("unplug: %s bound to %s\n", devpath, drvpath);
	if (vt_stream_create(fd, 0, 0, &s) || vt_bo_create(fd, 8192, 1, 0, &h, NULL) ||
	    vt_bo_create(fd, 8192, 2, 0, &h2, NULL) || !(p = vt_bo_map(fd, h, 8192))) {
		report(0, 0, "unplug: setup");
		close(fd);
		return;
	}
	ph.handle = h2;
	if (POS("unplug: export a BO as dma-buf", vt_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph))) {
		dfd = ph.fd;
		dp = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0);
		if (!CHECKV("unplug: dma-buf mmap before unbind", dp != MAP_FAILED))
			dp = NULL;
	}
	/*
	 * A dma-buf whose BO's GEM handle is closed: the BO has no current
	 * export any more (obj->dma_buf is NULL), the dma-buf and its mapping
	 * live on. Its mapping must be revoked too (it is: the DRM core maps
	 * every dma-buf export through the device's anon inode).
	 */
	if (POS("unplug: a third BO", vt_bo_create(fd, 8192, 4, 0, &h3, NULL))) {
		ph3.handle = h3;
		if (POS("unplug: export it", vt_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph3))) {
			cfd = ph3.fd;
			cp = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
			if (!CHECKV("unplug: mmap its dma-buf", cp != MAP_FAILED))
				cp = NULL;
		}
		POS("unplug: close its GEM handle, keeping the dma-buf and its mapping",
		    vt_gem_close(fd, h3));
	}
	p[100] = 0x77;
	if (dp)
		dp[200] = 0x77;
	if (cp)
		cp[300] = 0x77;
	CHECK("unplug: control: mappings readable before unbind",
	      !faults_on_read(p, 100) && (!dp || !faults_on_read(dp, 200)) &&
	      (!cp || !faults_on_read(cp, 300)));
	snprintf(path, sizeof(path), "%s/unbind", drvpath);
	if (!POS("unplug: unbind with a file, stream and mappings open", vt_write_str(path, dev)))
		return;
	NEG("unplug: stream create after unbind", vt_stream_create(fd, 0, 0, &s), ENODEV);
	q.size = 8;
	q.ptr = (uintptr_t)&h;
	NEG("unplug: bank query after unbind", vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q), ENODEV);
	CHECK("unplug: BO mapping revoked (SIGBUS on access)", faults_on_read(p, 100));
	if (dp) {
		void *again;

		CHECK("unplug: dma-buf mapping revoked (SIGBUS on access)", faults_on_read(dp, 200));
		again = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0);
		CHECK("unplug: new dma-buf mmap after unbind refused", again == MAP_FAILED);
		if (again != MAP_FAILED)
			munmap(again, 8192);
		munmap(dp, 8192);
	}
	if (cp) {
		CHECK("unplug: mapping of a dma-buf whose handle was closed revoked (SIGBUS on access)",
		      faults_on_read(cp, 300));
		munmap(cp, 8192);
	}
	if (cfd >= 0)
		close(cfd);
	if (dfd >= 0)
		close(dfd);
	munmap(p, 8192);
	close(fd);
	snprintf(path, sizeof(path), "%s/bind", drvpath);
	POS("unplug: bind again", vt_write_str(path, dev));
	fd = open_node();
	CHECK("unplug: device node back after rebind", fd >= 0);
	if (fd >= 0) {
		if (POS("unplug: stream after rebind", vt_stream_create(fd, 0, 0, &s)))
			vt_stream_destroy(fd, s);
		close(fd);
	}
}

int main(void)
{
	struct ctx c = { 0 };

	c.fd = open_node();
	if (c.fd < 0) {
		printf("no vrex device node\nuapi: 0 passed, 1 failed\n");
		return 1;
	}
	vt_debugfs_find(c.fd);
	printf("debugfs: %s\n", vt_debugfs_dir()[0] ? vt_debugfs_dir() : "(none)");

	test_query(c.fd);
	test_stats(c.fd);
	test_bo(c.fd);
	test_streams(c.fd);
	if (vt_stream_create(c.fd, 0, 0, &c.stream) ||
	    vt_bo_create(c.fd, 65536, 1 << 2, DRM_VREX_BO_STAGING, &c.luma, NULL) ||
	    vt_bo_create(c.fd, 65536, 1 << 3, DRM_VREX_BO_KV, &c.kv, NULL) ||
	    !(c.lp = vt_bo_map(c.fd, c.luma, 65536))) {
		report(0, 0, "setup: stream and BOs");
	} else {
		test_frames(&c);
		test_region_motion(&c);
		test_shie(&c);
		test_retire(&c);
		test_isolation(&c);
	}
	test_reg_read(c.fd);
	test_fault_alloc(c.fd);
	if (c.lp)
		munmap(c.lp, 65536);
	close(c.fd);
	test_usable_and_teardown();
	test_unplug();
	if (vt_debugfs_dir()[0])
		CHECK("leak check: no BOs, streams or blocks after every file closed",
		      vt_debugfs_count("bos") == 0 && vt_debugfs_count("streams") == 0 &&
		      vt_debugfs_count("blocks") == 0);

	printf("uapi: positive %d, negative %d\n", vt_passed - n_neg, n_neg);
	return vt_finish("uapi");
}
