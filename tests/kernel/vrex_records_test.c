// SPDX-License-Identifier: MIT
/*
 * vrex release records, run in the QEMU guests: every record reaches user
 * space exactly once and names its BO unambiguously.
 * - A RETIRE whose record array is not writable (EFAULT) loses nothing: the
 *   records come with the next RETIRE.
 * - A record of a block whose BO handle was closed and then reused for
 *   another BO must not name that other BO: handle 0, and the BO generation
 *   of the BO the block pointed into (as BO_CREATE and the insert returned).
 * - An older caller's 32-byte records (elem_size 32) still work.
 * - Block generations (1.3): inserts, hits and records name the block's
 *   generation; an ALIAS insert naming a generation is refused (ENOENT) once
 *   the id names a later block, and generation 0 or a 1.2 caller's 64-byte
 *   item (no generation) aliases by id as before.
 * Ends with "records: N passed, M failed".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vrex_test_util.h"

#define BO_SIZE 65536u

struct ctx {
	int fd;
	uint32_t stream, luma;
	struct drm_vrex_frame_submit f;
};

static int bo_create_gen(int fd, uint32_t *handle, uint64_t *gen)
{
	struct drm_vrex_bo_create c = { .size = BO_SIZE, .bank_mask = 2 };
	int r = vt_ioctl(fd, DRM_IOCTL_VREX_BO_CREATE, &c);

	*handle = r ? 0 : c.handle;
	*gen = r ? 0 : c.bo_gen;
	return r;
}

static int insert(struct ctx *c, uint32_t handle, uint32_t region,
		  struct drm_vrex_shie_insert_item *it)
{
	int r;

	*it = vt_kv_item(c->f.fp, handle, 0, region, 0);
	r = vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, c->stream, it, 1, sizeof(*it));
	return r ? r : it->result;
}

static int retire_into(struct ctx *c, uint32_t *ids, uint32_t n, void *recs, uint32_t elem_size,
		       uint32_t *cap)
{
	struct drm_vrex_shie_retire r = {
		.stream = c->stream, .remove_count = n, .released_cap = *cap,
		.elem_size = elem_size, .remove = (uintptr_t)ids, .released = (uintptr_t)recs,
	};
	int ret = vt_ioctl(c->fd, DRM_IOCTL_VREX_SHIE_RETIRE, &r);

	*cap = r.released_cap;
	return ret;
}

static void test_efault(struct ctx *c)
{
	struct drm_vrex_released_block rel[8];
	struct drm_vrex_shie_insert_item it;
	uint32_t kv, cap;
	uint64_t gen;
	void *ro;
	int r;

	if (bo_create_gen(c->fd, &kv, &gen) || insert(c, kv, 1, &it)) {
		vt_report(0, "efault: setup");
		return;
	}
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cap = 8;
	r = retire_into(c, &it.block, 1, ro, sizeof(rel[0]), &cap);
	vt_report(r == -EFAULT, "efault: RETIRE into a read-only array: EFAULT (got %d, cap %u)", r,
		  cap);
	cap = 8;
	r = retire_into(c, NULL, 0, rel, sizeof(rel[0]), &cap);
	vt_report(!r && cap == 1 && rel[0].block == it.block && rel[0].handle == kv &&
		  rel[0].reason == DRM_VREX_RELEASE_REMOVED && rel[0].bo_gen == gen,
		  "efault: the undelivered record comes with the next RETIRE (got %d, %u records, "
		  "block %u/%u, gen %llu/%llu)", r, cap, cap ? rel[0].block : 0, it.block,
		  cap ? (unsigned long long)rel[0].bo_gen : 0ull, (unsigned long long)gen);
	cap = 8;
	r = retire_into(c, NULL, 0, rel, sizeof(rel[0]), &cap);
	vt_report(!r && cap == 0, "efault: and only once (got %d, %u records)", r, cap);
	munmap(ro, 4096);
	vt_gem_close(c->fd, kv);
}

static void test_reused_handle(struct ctx *c)
{
	struct drm_vrex_released_block rel[8];
	struct drm_vrex_shie_insert_item it;
	uint32_t kv, kv2, cap;
	uint64_t gen, gen2;
	int r;

	if (bo_create_gen(c->fd, &kv, &gen) || insert(c, kv, 2, &it)) {
		vt_report(0, "reuse: setup");
		return;
	}
	vt_report(gen != 0 && it.bo_gen == gen, "reuse: the insert reports the BO's generation "
		  "(%llu, BO_CREATE said %llu)", (unsigned long long)it.bo_gen,
		  (unsigned long long)gen);
	/* The block keeps the BO; its handle goes, and the next BO gets the same number. */
	vt_gem_close(c->fd, kv);
	if (bo_create_gen(c->fd, &kv2, &gen2)) {
		vt_report(0, "reuse: second BO");
		return;
	}
	vt_report(kv2 == kv && gen2 != gen, "reuse: control: the handle number is reused for "
		  "another BO (%u -> %u, gen %llu -> %llu)", kv, kv2, (unsigned long long)gen,
		  (unsigned long long)gen2);
	cap = 8;
	r = vt_shie_retire(c->fd, c->stream, &it.block, 1, rel, &cap);
	vt_report(!r && cap == 1 && rel[0].block == it.block && rel[0].handle == 0 &&
		  rel[0].bo_gen == gen,
		  "reuse: the record names no handle (not the other BO's) and the old generation "
		  "(got %d, %u records, handle %u, gen %llu)", r, cap, cap ? rel[0].handle : 0,
		  cap ? (unsigned long long)rel[0].bo_gen : 0ull);
	vt_gem_close(c->fd, kv2);
}

/* An older binary's 32-byte records: the fields it knows, nothing past them written. */
static void test_old_records(struct ctx *c)
{
	struct drm_vrex_shie_insert_item it;
	unsigned char buf[2 * 32 + 8];
	uint32_t kv, cap = 2;
	uint64_t gen;
	uint32_t block, handle;
	int r;

	if (bo_create_gen(c->fd, &kv, &gen) || insert(c, kv, 3, &it)) {
		vt_report(0, "old records: setup");
		return;
	}
	memset(buf, 0xa5, sizeof(buf));
	r = retire_into(c, &it.block, 1, buf, 32, &cap);
	memcpy(&block, buf, 4);
	memcpy(&handle, buf + 4, 4);
	vt_report(!r && cap == 1 && block == it.block && handle == kv && buf[32] == 0xa5,
		  "old records: elem_size 32 gets block and handle, nothing past 32 bytes "
		  "(got %d, %u records)", r, cap);
	vt_gem_close(c->fd, kv);
}

static int alias(struct ctx *c, uint32_t block, uint64_t gen, uint32_t region, uint32_t elem_size,
		 struct drm_vrex_shie_insert_item *it)
{
	int r;

	memset(it, 0, sizeof(*it));
	it->fp[0] = c->f.fp[0];
	it->fp[1] = c->f.fp[1];
	it->flags = DRM_VREX_INSERT_ALIAS;
	it->region = region;
	it->block = block;
	it->block_gen = gen;
	r = vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, c->stream, it, 1, elem_size);
	return r ? r : it->result;
}

static void test_block_gen(struct ctx *c)
{
	struct drm_vrex_shie_lookup_item lk = vt_temporal(6, 0);
	struct drm_vrex_released_block rel[8];
	struct drm_vrex_shie_insert_item it, a;
	uint32_t kv, cap = 8, block;
	uint64_t gen, g1, g2;
	int r;

	if (bo_create_gen(c->fd, &kv, &gen) || insert(c, kv, 6, &it)) {
		vt_report(0, "block_gen: setup");
		return;
	}
	block = it.block;
	g1 = it.block_gen;
	vt_report(g1 != 0, "block_gen: the insert reports a generation (%llu)", (unsigned long long)g1);
	r = vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_LOOKUP, c->stream, &lk, 1, sizeof(lk));
	vt_report(!r && lk.hit_flags && lk.block == block && lk.block_gen == g1,
		  "block_gen: a hit names it (got %d, block %u, gen %llu)", r, lk.block,
		  (unsigned long long)lk.block_gen);
	r = alias(c, block, g1, 7, sizeof(a), &a);
	vt_report(!r && a.block == block && a.block_gen == g1,
		  "block_gen: ALIAS naming the generation works (got %d, gen %llu)", r,
		  (unsigned long long)a.block_gen);
	r = alias(c, block, g1 + 1000, 8, sizeof(a), &a);
	vt_report(r == -ENOENT, "block_gen: ALIAS naming another generation: ENOENT (got %d)", r);
	it = vt_kv_item(c->f.fp, kv, 4096, 9, 0);
	it.block_gen = g1;
	r = vt_shie_batch(c->fd, DRM_IOCTL_VREX_SHIE_INSERT, c->stream, &it, 1, sizeof(it));
	vt_report(r == -EINVAL, "block_gen: a new block with a generation: EINVAL (got %d)", r);

	r = vt_shie_retire(c->fd, c->stream, &block, 1, rel, &cap);
	vt_report(!r && cap == 1 && rel[0].block == block && rel[0].block_gen == g1,
		  "block_gen: the record names the released generation (got %d, %u records, "
		  "gen %llu)", r, cap, cap ? (unsigned long long)rel[0].block_gen : 0ull);
	/* The id goes to the next block (lowest free first); the old generation never reaches it. */
	if (insert(c, kv, 10, &it)) {
		vt_report(0, "block_gen: second block");
		goto out;
	}
	g2 = it.block_gen;
	vt_report(it.block == block && g2 > g1,
		  "block_gen: control: the id is given to a new block, generation %llu -> %llu "
		  "(id %u -> %u)", (unsigned long long)g1, (unsigned long long)g2, block, it.block);
	r = alias(c, it.block, g1, 11, sizeof(a), &a);
	vt_report(r == -ENOENT, "block_gen: ALIAS of the released generation never reaches its "
		  "successor: ENOENT (got %d)", r);
	r = alias(c, it.block, 0, 12, sizeof(a), &a);
	vt_report(!r && a.block_gen == g2, "block_gen: generation 0 aliases by id, as before 1.3 "
		  "(got %d, gen %llu)", r, (unsigned long long)a.block_gen);
	r = alias(c, it.block, g1, 13, 64, &a);
	vt_report(!r, "block_gen: a 1.2 caller's 64-byte item carries no generation: aliases by id "
		  "(got %d)", r);
	cap = 8;
	block = it.block;
	r = vt_shie_retire(c->fd, c->stream, &block, 1, rel, &cap);
	vt_report(!r && cap == 1 && rel[0].block_gen == g2, "block_gen: cleanup (got %d, %u)", r, cap);
out:
	vt_gem_close(c->fd, kv);
}

int main(void)
{
	struct ctx c = { 0 };
	uint8_t *p;

	c.fd = vt_open_node(NULL, 0);
	if (c.fd < 0 || vt_stream_create(c.fd, 0, 0, &c.stream) ||
	    vt_bo_create(c.fd, BO_SIZE, 1, DRM_VREX_BO_STAGING, &c.luma, NULL) ||
	    !(p = vt_bo_map(c.fd, c.luma, BO_SIZE))) {
		printf("no vrex device or setup failed\nrecords: 0 passed, 1 failed\n");
		return 1;
	}
	memset(p, 0x40, BO_SIZE);
	munmap(p, BO_SIZE);
	if (vt_frame_submit(c.fd, c.stream, c.luma, 0, 0, &c.f)) {
		printf("frame submit failed\nrecords: 0 passed, 1 failed\n");
		return 1;
	}
	test_efault(&c);
	test_reused_handle(&c);
	test_old_records(&c);
	test_block_gen(&c);
	close(c.fd);
	return vt_finish("records");
}
