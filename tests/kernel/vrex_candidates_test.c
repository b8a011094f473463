// SPDX-License-Identifier: MIT
/*
 * vrex 1.6 similarity lookups by tier and with candidates, run in the QEMU
 * guests (the simulated device and the MMIO/PCI device model alike):
 * - max_candidates N returns the entries within the radius nearest first
 *   (the nearest also in the fields every caller knows), at most N, in
 *   batches larger than one device command (the driver splits them by
 *   records per query) and mixed with nearest-only and temporal items;
 * - the tier flags: device-only finds the device blocks, host-only none
 *   (this file inserts no host-tier block; the HAL conformance suite's
 *   host-tier tests do, on this backend too);
 * - an older caller's 104-byte item (elem_size before 1.6) gets what it got
 *   before and nothing past its 104 bytes is written;
 * - max_candidates above DRM_VREX_LOOKUP_MAX_CANDIDATES, or on a temporal
 *   lookup, fails the batch with EINVAL and nothing written back.
 * Ends with "candidates: N passed, M failed".
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
#define REGION 9
#define OLD_LOOKUP_ITEM 104u	/* sizeof(struct drm_vrex_shie_lookup_item) before 1.6 */

#define CHECK(name, cond) vt_report(!!(cond), "%s", name)
/* The call must succeed; yields whether it did. */
#define POS(name, call)                                                                   \
	({                                                                                \
		int r_ = (call);                                                          \
		vt_report(r_ == 0, "%s (ret %d %s)", name, r_, r_ ? strerror(-r_) : "");  \
		r_ == 0;                                                                  \
	})
/* The call must fail with exactly -err. */
#define NEG(name, call, err)                                                              \
	do {                                                                              \
		int r_ = (call);                                                          \
		vt_report(r_ == -(err), "%s: want %s got %d", name, strerror(err), r_);   \
	} while (0)

struct ctx {
	int fd;
	uint32_t stream, luma, kv;
	__u64 fp[2];
	uint32_t blocks[3];	/* distances 0, 2 and 5 from fp, frames oldest first */
};

static int lookup(struct ctx *c, struct drm_vrex_shie_lookup_item *it, uint32_t n)
{
	return vt_lookup(c->fd, c->stream, it, n);
}

static struct drm_vrex_shie_lookup_item query(struct ctx *c, uint32_t flags, uint32_t max)
{
	return vt_similar(c->fp, REGION, 10, flags, max);
}

/* The candidates of @it are the three blocks (or the first @n), nearest first. */
static int nearest_first(const struct ctx *c, const struct drm_vrex_shie_lookup_item *it,
			 uint32_t n)
{
	static const uint32_t dist[3] = { 0, 2, 5 };
	uint32_t i;

	if (it->candidate_count != n || it->block != c->blocks[0] || it->distance != 0 ||
	    it->hit_flags != DRM_VREX_HIT)
		return 0;
	for (i = 0; i < n; i++) {
		const struct drm_vrex_shie_candidate *k = &it->candidates[i];

		if (k->block != c->blocks[i] || k->distance != dist[i] || k->handle != c->kv ||
		    k->length != VT_KV_LEN || k->offset != i * (uint64_t)VT_KV_LEN || !k->block_gen ||
		    (k->hit_flags & DRM_VREX_HIT_HOST_TIER) ||
		    k->hit_flags != (DRM_VREX_HIT | (dist[i] ? DRM_VREX_HIT_APPROX : 0)))
			return 0;
	}
	for (; i < DRM_VREX_LOOKUP_MAX_CANDIDATES; i++)
		if (it->candidates[i].block || it->candidates[i].hit_flags)
			return 0;
	return 1;
}

static void test_candidates(struct ctx *c)
{
	struct drm_vrex_shie_lookup_item it[20];
	uint32_t i, ok;

	it[0] = query(c, 0, 8);
	if (POS("candidates: 8 asked", lookup(c, it, 1)))
		CHECK("candidates: all three within the radius, nearest first", nearest_first(c, &it[0], 3));
	it[0] = query(c, 0, 2);
	if (POS("candidates: 2 asked", lookup(c, it, 1)))
		CHECK("candidates: the two nearest", nearest_first(c, &it[0], 2));
	it[0] = query(c, 0, 1);
	if (POS("candidates: 1 asked", lookup(c, it, 1)))
		CHECK("candidates: the nearest, also in the item's fields", nearest_first(c, &it[0], 1));
	it[0] = query(c, DRM_VREX_LOOKUP_TIER_DEVICE, 8);
	if (POS("candidates: device tier", lookup(c, it, 1)))
		CHECK("candidates: the device tier holds the three", nearest_first(c, &it[0], 3));
	it[0] = query(c, DRM_VREX_LOOKUP_TIER_HOST, 8);
	if (POS("candidates: host tier", lookup(c, it, 1)))
		CHECK("candidates: no host-tier entry, a miss", it[0].candidate_count == 0 &&
		      it[0].hit_flags == 0 && it[0].block == 0);
	it[0] = query(c, DRM_VREX_LOOKUP_TIER_HOST, 0);
	if (POS("nearest: host tier", lookup(c, it, 1)))
		CHECK("nearest: the tier filters the single lookup too", it[0].hit_flags == 0);

	/* More records than one command holds (64): split by the driver; mixed with others. */
	for (i = 0; i < 20; i++)
		it[i] = query(c, 0, 8);
	it[5] = query(c, 0, 0);
	it[6] = vt_temporal(REGION, 0);
	it[11] = query(c, 0, 3);
	if (POS("candidates: batch of 20 mixed items", lookup(c, it, 20))) {
		for (ok = 1, i = 0; i < 20; i++)
			if (i != 5 && i != 6 && i != 11)
				ok &= nearest_first(c, &it[i], 3);
		CHECK("candidates: every 8-candidate item of the batch", ok);
		CHECK("candidates: the nearest-only item as before",
		      it[5].block == c->blocks[0] && it[5].candidate_count == 0 &&
		      it[5].hit_flags == DRM_VREX_HIT);
		CHECK("candidates: the temporal item", it[6].block == c->blocks[2] &&
		      it[6].candidate_count == 0);
		CHECK("candidates: the 3-candidate item", nearest_first(c, &it[11], 3));
	}

	it[0] = query(c, 0, 8);
	it[1] = query(c, 0, DRM_VREX_LOOKUP_MAX_CANDIDATES + 1);
	NEG("candidates: above the cap", lookup(c, it, 2), EINVAL);
	CHECK("candidates: a refused batch writes nothing back", it[0].candidate_count == 0 &&
	      it[0].hit_flags == 0);
	it[1] = vt_temporal(REGION, 0);
	it[1].max_candidates = 1;
	NEG("candidates: on a temporal lookup", lookup(c, it, 2), EINVAL);
	it[1] = query(c, 1u << 4, 0);
	NEG("lookup: flag past the tiers", lookup(c, it, 2), EINVAL);
}

/* A caller built before 1.6: 104-byte items, packed; its bytes past them are never touched. */
static void test_old_items(struct ctx *c)
{
	unsigned char buf[2 * OLD_LOOKUP_ITEM + 8];
	struct drm_vrex_shie_lookup_item it = query(c, 0, 0), out;
	struct drm_vrex_shie_batch b = { .stream = c->stream, .count = 2,
					 .elem_size = OLD_LOOKUP_ITEM, .items = (uintptr_t)buf };

	_Static_assert(offsetof(struct drm_vrex_shie_lookup_item, max_candidates) == OLD_LOOKUP_ITEM,
		       "1.6 appends to the 1.3 item");
	memset(buf, 0xa5, sizeof(buf));
	memcpy(buf, &it, OLD_LOOKUP_ITEM);
	memcpy(buf + OLD_LOOKUP_ITEM, &it, OLD_LOOKUP_ITEM);
	if (!POS("old item: elem_size 104", vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_LOOKUP, &b)))
		return;
	memset(&out, 0, sizeof(out));
	memcpy(&out, buf + OLD_LOOKUP_ITEM, OLD_LOOKUP_ITEM);
	CHECK("old item: the nearest, as before 1.6", out.hit_flags == DRM_VREX_HIT &&
	      out.block == c->blocks[0] && out.distance == 0 && out.handle == c->kv);
	CHECK("old item: nothing written past the 104-byte elements",
	      buf[2 * OLD_LOOKUP_ITEM] == 0xa5 && buf[sizeof(buf) - 1] == 0xa5);
}

int main(void)
{
	struct drm_vrex_shie_insert_item ins[3];
	struct drm_vrex_frame_submit f;
	struct ctx c = { 0 };
	uint8_t *p;
	int i;

	c.fd = vt_open_node(NULL, 0);
	if (c.fd < 0 || vt_stream_create(c.fd, 0, 0, &c.stream) ||
	    vt_bo_create(c.fd, BO_SIZE, 1, DRM_VREX_BO_STAGING, &c.luma, NULL) ||
	    vt_bo_create(c.fd, BO_SIZE, 2, DRM_VREX_BO_KV, &c.kv, NULL) ||
	    !(p = vt_bo_map(c.fd, c.luma, BO_SIZE))) {
		printf("no vrex device or setup failed\ncandidates: 0 passed, 1 failed\n");
		return 1;
	}
	memset(p, 0x40, BO_SIZE);
	munmap(p, BO_SIZE);
	/* Three frames; frame i keeps a block whose fingerprint is 0, 2 and 5 bits from fp. */
	for (i = 0; i < 3; i++) {
		if (vt_frame_submit(c.fd, c.stream, c.luma, 0, 0, &f)) {
			printf("frame submit failed\ncandidates: 0 passed, 1 failed\n");
			return 1;
		}
		if (!i) {
			c.fp[0] = f.fp[0];
			c.fp[1] = f.fp[1];
		}
	}
	for (i = 0; i < 3; i++) {
		__u64 k[2] = { c.fp[0], c.fp[1] ^ ((1ull << (i == 0 ? 0 : i == 1 ? 2 : 5)) - 1) };

		ins[i] = vt_kv_item(k, c.kv, (uint64_t)i * VT_KV_LEN, REGION, i - 2);
	}
	if (vt_shie_batch(c.fd, DRM_IOCTL_VREX_SHIE_INSERT, c.stream, ins, 3, sizeof(ins[0])) ||
	    ins[0].result || ins[1].result || ins[2].result) {
		printf("insert failed\ncandidates: 0 passed, 1 failed\n");
		return 1;
	}
	for (i = 0; i < 3; i++)
		c.blocks[i] = ins[i].block;
	test_candidates(&c);
	test_old_items(&c);
	vt_stream_destroy(c.fd, c.stream);
	close(c.fd);
	return vt_finish("candidates");
}
