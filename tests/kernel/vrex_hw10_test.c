// SPDX-License-Identifier: MIT
/*
 * vrex.ko on a hardware 1.0 device and on a 1.1 one, run in the QEMU guests:
 *
 *   vrex_hw10_test [1.1|1.0]      (default 1.1: what every guest's device is)
 *
 * scripts/qemu/init.sh runs it twice on the vrex_sim lines: with the other
 * tests/kernel programs (1.1), then after reloading vrex_sim.ko with
 * hw_version=1.0 (1.0). Both modes do the same calls and expect:
 * - DEVICE_INFO's hw_version: 0x00010001 / 0x00010000;
 * - FRAME_SUBMIT's region_motion: measured (each <= 90) / 255 ("unknown") x 16;
 * - a lookup with a tier flag, or max_candidates > 1 (also inside a batch
 *   with plain items): served / EOPNOTSUPP with nothing written back and
 *   nothing run (the device's lookup and error counters unchanged);
 * - lookups of before 1.6 (nearest only, temporal, max_candidates 1): the
 *   same answers on both.
 * Ends with "hw10: N passed, M failed".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vrex_test_util.h"

#define BO_SIZE 65536u
#define REGION 6
#define HW_1_0 0x00010000u
#define HW_1_1 0x00010001u
#define MOTION_MAX 90		/* lib's vrex_fcc_region_motion() bound */
#define STAT_LOOKUPS (offsetof(struct drm_vrex_stats, lookups) / sizeof(__u64))
#define STAT_ERRORS (offsetof(struct drm_vrex_stats, cmd_errors) / sizeof(__u64))

#define CHECK(name, cond) vt_report(!!(cond), "%s", name)

struct ctx {
	int fd;
	int v10;		/* the device is expected to be 1.0 */
	uint32_t stream, luma, kv;
	__u64 fp[2];
	uint32_t blocks[2];	/* distance 0 (frame -1), distance 3 (frame 0) */
};

static int lookup(struct ctx *c, struct drm_vrex_shie_lookup_item *it, uint32_t n)
{
	return vt_lookup(c->fd, c->stream, it, n);
}

static struct drm_vrex_shie_lookup_item query(struct ctx *c, uint32_t flags, uint32_t max)
{
	return vt_similar(c->fp, REGION, 10, flags, max);
}

static void test_info(struct ctx *c)
{
	struct drm_vrex_device_info info;
	struct drm_vrex_query q = { .param = DRM_VREX_QUERY_DEVICE_INFO, .size = sizeof(info),
				    .ptr = (uintptr_t)&info };
	const uint32_t want = c->v10 ? HW_1_0 : HW_1_1;
	int ret;

	memset(&info, 0, sizeof(info));
	ret = vt_ioctl(c->fd, DRM_IOCTL_VREX_QUERY, &q);
	vt_report(ret == 0 && info.hw_version == want, "device info: hw_version %#x (want %#x, ret %d)",
		  info.hw_version, want, ret);
}

/* Frames 1 and 2 (the setup submitted frame 0): region motion as the device reports it. */
static void test_region_motion(struct ctx *c)
{
	struct drm_vrex_frame_submit f;
	unsigned int i, unknown = 0, measured = 0;
	int ret;

	ret = vt_frame_submit(c->fd, c->stream, c->luma, 0, 0, &f);
	if (!ret) {
		for (i = 0; i < sizeof(f.region_motion); i++) {
			unknown += f.region_motion[i] == 255;
			measured += f.region_motion[i] <= MOTION_MAX;
		}
	}
	if (c->v10)
		vt_report(!ret && unknown == 16, "frame submit: region motion 255 (unknown) in %u of 16 regions (ret %d)",
			  unknown, ret);
	else
		vt_report(!ret && measured == 16, "frame submit: region motion measured in %u of 16 regions (ret %d)",
			  measured, ret);
}

/*
 * A lookup 1.0 cannot answer, alone or behind a plain item: EOPNOTSUPP on
 * 1.0 with the items as they went in and no command run; served on 1.1.
 */
static void refused_on_1_0(struct ctx *c, const char *name, struct drm_vrex_shie_lookup_item q,
			   uint32_t hits_on_1_1)
{
	struct drm_vrex_shie_lookup_item it[2] = { query(c, 0, 0), q }, before[2];
	uint64_t lookups = vt_stat(c->fd, STAT_LOOKUPS), errors = vt_stat(c->fd, STAT_ERRORS);
	int ret;

	memcpy(before, it, sizeof(it));
	ret = lookup(c, it, 2);
	if (!c->v10) {
		/* Nearest only: a hit or a miss; with candidates: how many. */
		vt_report(ret == 0 && it[0].block == c->blocks[0] &&
			  (q.max_candidates ? it[1].candidate_count : !!(it[1].hit_flags & DRM_VREX_HIT)) ==
			  hits_on_1_1,
			  "%s: served on 1.1 (ret %d, hit %#x, %u candidates; want %u)", name, ret,
			  it[1].hit_flags, it[1].candidate_count, hits_on_1_1);
		return;
	}
	vt_report(ret == -EOPNOTSUPP, "%s: EOPNOTSUPP on 1.0 (ret %d %s)", name, ret, strerror(-ret));
	vt_report(!memcmp(before, it, sizeof(it)), "%s: nothing written back", name);
	vt_report(vt_stat(c->fd, STAT_LOOKUPS) == lookups && vt_stat(c->fd, STAT_ERRORS) == errors,
		  "%s: no lookup ran (lookups %llu -> %llu, errors %llu -> %llu)", name,
		  (unsigned long long)lookups, (unsigned long long)vt_stat(c->fd, STAT_LOOKUPS),
		  (unsigned long long)errors, (unsigned long long)vt_stat(c->fd, STAT_ERRORS));
}

static void test_refused(struct ctx *c)
{
	/* No host-tier entry here: the host tier misses on 1.1. Both blocks are within the radius. */
	refused_on_1_0(c, "tier device", query(c, DRM_VREX_LOOKUP_TIER_DEVICE, 0), 1);
	refused_on_1_0(c, "tier host", query(c, DRM_VREX_LOOKUP_TIER_HOST, 0), 0);
	refused_on_1_0(c, "2 candidates", query(c, 0, 2), 2);
	refused_on_1_0(c, "8 candidates, device tier", query(c, DRM_VREX_LOOKUP_TIER_DEVICE, 8), 2);
}

/* What a caller of before uAPI 1.6 asks: the same answer on both revisions. */
static void test_plain(struct ctx *c)
{
	struct drm_vrex_shie_lookup_item it[4] = {
		query(c, 0, 0), vt_temporal(REGION, -1), query(c, 0, 1), query(c, DRM_VREX_LOOKUP_PAST_ONLY, 0),
	};
	uint64_t lookups = vt_stat(c->fd, STAT_LOOKUPS);
	int ret;

	/* Frame 2 is current: block 0 is at frame 0, block 1 at frame 1 (offset -1). */
	ret = lookup(c, it, 4);
	vt_report(ret == 0, "plain lookups: batch of 4 (ret %d)", ret);
	if (ret)
		return;
	CHECK("plain lookups: similar, the nearest (distance 0)",
	      it[0].hit_flags == DRM_VREX_HIT && it[0].block == c->blocks[0] && it[0].candidate_count == 0);
	CHECK("plain lookups: temporal at offset -1", it[1].hit_flags == DRM_VREX_HIT &&
	      it[1].block == c->blocks[1]);
	CHECK("plain lookups: max_candidates 1, the nearest as its one candidate",
	      it[2].block == c->blocks[0] && it[2].candidate_count == 1 &&
	      it[2].candidates[0].block == c->blocks[0] &&
	      !(it[2].candidates[0].hit_flags & DRM_VREX_HIT_HOST_TIER));
	CHECK("plain lookups: past only, the nearest of frames 0 and 1", it[3].block == c->blocks[0]);
	CHECK("plain lookups: counted by the device", vt_stat(c->fd, STAT_LOOKUPS) == lookups + 4);
}

static int setup(struct ctx *c)
{
	struct drm_vrex_shie_insert_item ins;
	struct drm_vrex_frame_submit f;
	uint8_t *p;
	int i;

	c->fd = vt_open_node(NULL, 0);
	if (c->fd < 0 || vt_stream_create(c->fd, 0, 0, &c->stream) ||
	    vt_bo_create(c->fd, BO_SIZE, 1, DRM_VREX_BO_STAGING, &c->luma, NULL) ||
	    vt_bo_create(c->fd, BO_SIZE, 2, DRM_VREX_BO_KV, &c->kv, NULL) ||
	    !(p = vt_bo_map(c->fd, c->luma, BO_SIZE)))
		return -1;
	memset(p, 0x50, BO_SIZE);
	munmap(p, BO_SIZE);
	/* Frame 0 keeps block 0 (distance 0), frame 1 block 1 (distance 3). */
	for (i = 0; i < 2; i++) {
		__u64 k[2];

		if (vt_frame_submit(c->fd, c->stream, c->luma, 0, 0, &f))
			return -1;
		if (!i) {
			c->fp[0] = f.fp[0];
			c->fp[1] = f.fp[1];
		}
		k[0] = c->fp[0];
		k[1] = c->fp[1] ^ (i ? 7u : 0u);
		ins = vt_kv_item(k, c->kv, (uint64_t)i * VT_KV_LEN, REGION, 0);
		if (vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, c->stream, &ins, 1, sizeof(ins)) ||
		    ins.result)
			return -1;
		c->blocks[i] = ins.block;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ctx c = { 0 };

	if (argc > 2 || (argc == 2 && strcmp(argv[1], "1.0") && strcmp(argv[1], "1.1"))) {
		fprintf(stderr, "usage: %s [1.1|1.0]  (the revision the device must be)\n", argv[0]);
		return 2;
	}
	c.v10 = argc == 2 && !strcmp(argv[1], "1.0");
	printf("expecting a hardware %s device\n", c.v10 ? "1.0" : "1.1");
	if (setup(&c)) {
		printf("no vrex device or setup failed\nhw10: 0 passed, 1 failed\n");
		return 1;
	}
	test_info(&c);
	test_refused(&c);
	test_region_motion(&c);
	test_plain(&c);
	vt_stream_destroy(c.fd, c.stream);
	close(c.fd);
	return vt_finish("hw10");
}
