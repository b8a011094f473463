// SPDX-License-Identifier: MIT
/*
 * vrex fault injection, run as root in the QEMU guests. The driver's debugfs
 * knobs make the next N BO allocations fail (fail_alloc, -ENOMEM) or the next
 * N simulated device commands fail (fail_cmds, -EIO). For every ioctl path
 * that allocates or issues a command, this checks that the failure reaches
 * the caller as the documented errno (or per-item result), that nothing
 * changed that should not have (no BO, stream, block or SHIE entry leaked,
 * frame numbers not advanced, no event queued), and that the next call
 * works. Stream teardown with failing commands (destroy and file close) must
 * not strand the hardware slot or its entries. Ends with
 * "fault: N passed, M failed"; missing knobs are a failure, not a skip.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vrex_regs.h"
#include "vrex_test_util.h"

#define KV_LEN VT_KV_LEN
#define BO_SIZE 65536u

static struct drm_vrex_device_info info;

/* SHIE_RETIRE with room for 64 records; @cap (if not NULL) gets how many were written. */
static int retire(int fd, uint32_t stream, uint32_t *ids, uint32_t n, uint32_t *cap)
{
	static struct drm_vrex_released_block rel[64];
	uint32_t room = 64;
	int ret = vt_shie_retire(fd, stream, ids, n, rel, &room);

	if (cap)
		*cap = room;
	return ret;
}

static int found(int fd, uint32_t stream, uint32_t region, uint32_t block)
{
	struct drm_vrex_shie_lookup_item lk = vt_temporal(region, 0);

	return !vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_LOOKUP, stream, &lk, 1, sizeof(lk)) &&
	       lk.hit_flags == DRM_VREX_HIT && lk.block == block;
}

static void paint(int fd, uint32_t handle)
{
	unsigned char *p = vt_bo_map(fd, handle, BO_SIZE);
	unsigned int i;

	if (!p)
		return;
	for (i = 0; i < BO_SIZE; i++)
		p[i] = (unsigned char)((i * 7) ^ ((i >> 7) * 13));
	munmap(p, BO_SIZE);
}

/* ---- the cases --------------------------------------------------------------------- */

static void test_alloc(int fd)
{
	struct vt_live c0 = vt_live_now(), c1;
	uint32_t h;
	int r;

	vt_debugfs_write_u32("fail_alloc", 1);
	r = vt_bo_create(fd, 4096, 1, 0, &h, NULL);
	c1 = vt_live_now();
	vt_report(r == -ENOMEM && vt_live_eq(c0, c1), "BO_CREATE: injected allocation failure -> ENOMEM, "
	       "no BO counted (got %d)", r);
	r = vt_bo_create(fd, 4096, 1, 0, &h, NULL);
	vt_report(!r, "BO_CREATE: next allocation works (got %d)", r);
	if (!r) {
		struct drm_gem_close gc = { .handle = h };

		vt_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &gc);
	}
	vt_report(vt_live_eq(c0, vt_live_now()), "BO_CREATE: BO count back after close");
}

static void test_stream_open(int fd)
{
	struct vt_live c0 = vt_live_now();
	uint32_t ids[64], n = 0, s;
	int r;

	vt_debugfs_write_u32("fail_cmds", 1);
	r = vt_stream_create(fd, 0, 0, &s);
	vt_report(r == -EIO && vt_live_eq(c0, vt_live_now()),
		  "STREAM_CREATE: injected command failure -> EIO, no stream counted (got %d)", r);
	/* The failed open must not have used up a slot. */
	while (n < 64 && !vt_stream_create(fd, 0, 0, &ids[n]))
		n++;
	vt_report(n == info.max_streams, "STREAM_CREATE: all %u slots open after the failure (got %u)",
		  info.max_streams, n);
	while (n--)
		vt_stream_destroy(fd, ids[n]);
	vt_report(vt_live_eq(c0, vt_live_now()), "STREAM_CREATE: counts back after destroying them");
}

static void test_frame(int fd, uint32_t s, uint32_t luma)
{
	struct drm_vrex_frame_submit f0, f1, f2;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int r;

	if (vt_frame_submit(fd, s, luma, 0, 0, &f0)) {
		vt_report(0, "FRAME_SUBMIT: baseline frame");
		return;
	}
	vt_debugfs_write_u32("fail_cmds", 1);
	r = vt_frame_submit(fd, s, luma, DRM_VREX_FRAME_EVENT, 0, &f1);
	vt_report(r == -EIO, "FRAME_SUBMIT: injected command failure -> EIO (got %d)", r);
	vt_report(poll(&pfd, 1, 0) == 0, "FRAME_SUBMIT: no event queued for the failed frame");
	r = vt_frame_submit(fd, s, luma, 0, 0, &f2);
	vt_report(!r && f2.frame == f0.frame + 1,
		  "FRAME_SUBMIT: next frame works and the failed one did not count (%u -> %u)",
	       f0.frame, f2.frame);
}

static void test_insert(int fd, uint32_t s, uint32_t kv, const __u64 fp[2], uint32_t *block)
{
	struct drm_vrex_shie_insert_item it[2];
	struct vt_live c0 = vt_live_now(), c1;
	int r;

	it[0] = vt_kv_item(fp, kv, 0, 0, 0);
	it[1] = vt_kv_item(fp, kv, KV_LEN, 1, 0);
	vt_debugfs_write_u32("fail_cmds", 1);
	r = vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_INSERT, s, it, 2, sizeof(it[0]));
	c1 = vt_live_now();
	vt_report(r == -EIO && it[0].result == -EIO && it[1].result == -ECANCELED,
		  "SHIE_INSERT: a failed command stops the batch: EIO, items -EIO and -ECANCELED "
		  "(%d, %d, %d)", r, it[0].result, it[1].result);
	vt_report(vt_live_eq(c0, c1), "SHIE_INSERT: nothing applied after the failed command");
	r = vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_INSERT, s, it, 2, sizeof(it[0]));
	c1 = vt_live_now();
	vt_report(!r && !it[0].result && !it[1].result && c1.blocks == c0.blocks + 2 &&
		  c1.entries == c0.entries + 2, "SHIE_INSERT: the same batch again applies both "
		  "(%d, %d, %d)", r, it[0].result, it[1].result);
	vt_report(found(fd, s, 0, it[0].block) && found(fd, s, 1, it[1].block),
		  "SHIE_INSERT: both items are found");
	retire(fd, s, &it[0].block, 1, NULL);
	*block = it[1].block;
}

static void test_lookup(int fd, uint32_t s, uint32_t block)
{
	struct drm_vrex_shie_lookup_item lk = { .kind = DRM_VREX_LOOKUP_TEMPORAL, .region = 1 };
	int r;

	vt_debugfs_write_u32("fail_cmds", 1);
	r = vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_LOOKUP, s, &lk, 1, sizeof(lk));
	vt_report(r == -EIO, "SHIE_LOOKUP: injected command failure -> EIO (got %d)", r);
	vt_report(found(fd, s, 1, block), "SHIE_LOOKUP: the next lookup finds the block");
}

static void test_retire(int fd, uint32_t s, uint32_t block)
{
	struct vt_live c0 = vt_live_now(), c1;
	uint32_t ids[1] = { block }, cap;
	int r;

	vt_debugfs_write_u32("fail_cmds", 1);
	r = retire(fd, s, ids, 1, &cap);
	c1 = vt_live_now();
	vt_report(r == -EIO && vt_live_eq(c0, c1) && found(fd, s, 1, block),
		  "SHIE_RETIRE: failed removal -> EIO, the block stays live and found (got %d)", r);
	vt_debugfs_write_u32("fail_cmds", 0);
	r = retire(fd, s, ids, 1, &cap);
	vt_report(!r && cap == 1 && !found(fd, s, 1, block),
		  "SHIE_RETIRE: removal after the failure releases it (got %d, %u records)", r, cap);
	c1 = vt_live_now();
	vt_report(c1.blocks == c0.blocks - 1 && c1.hw_blocks == c0.hw_blocks - 1 &&
		  c1.entries == c0.entries - 1, "SHIE_RETIRE: block and entry gone on both sides");
}

/* Destroy and close with failing commands: nothing of the stream may stay in the hardware. */
static void test_teardown(uint32_t fails, const char *how)
{
	struct drm_vrex_shie_insert_item it;
	struct drm_vrex_frame_submit f;
	struct vt_live c0 = vt_live_now(), c1;
	uint32_t s, luma, kv, ids[64], n = 0;
	int fd = vt_open_node(NULL, 0), r;

	if (fd < 0 || vt_stream_create(fd, 0, 0, &s) || vt_bo_create(fd, BO_SIZE, 1, 0, &luma, NULL) ||
	    vt_bo_create(fd, BO_SIZE, 2, 0, &kv, NULL)) {
		vt_report(0, "teardown (%s): setup", how);
		return;
	}
	paint(fd, luma);
	it = vt_kv_item((const __u64[2]){ 1, 2 }, kv, 0, 0, 0);
	if (vt_frame_submit(fd, s, luma, 0, 0, &f) ||
	    vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_INSERT, s, &it, 1, sizeof(it)) || it.result) {
		vt_report(0, "teardown (%s): frame and insert", how);
		close(fd);
		return;
	}
	vt_debugfs_write_u32("fail_cmds", fails);
	if (!strcmp(how, "destroy")) {
		r = vt_stream_destroy(fd, s);
		vt_report(!r, "STREAM_DESTROY with %u failing commands: the stream is gone for the caller "
		       "(got %d)", fails, r);
		vt_debugfs_write_u32("fail_cmds", 0);
		r = vt_stream_destroy(fd, s);
		vt_report(r == -ENOENT, "STREAM_DESTROY: a second destroy -> ENOENT (got %d)", r);
	}
	close(fd);
	vt_debugfs_write_u32("fail_cmds", 0);
	/* Every slot opens again (a stranded one is reclaimed), then all close cleanly. */
	fd = vt_open_node(NULL, 0);
	while (fd >= 0 && n < 64 && !vt_stream_create(fd, 0, 0, &ids[n]))
		n++;
	vt_report(n == info.max_streams, "%s with %u failing commands: all %u slots open afterwards "
	       "(got %u)", how, fails, info.max_streams, n);
	if (fd >= 0)
		close(fd);
	c1 = vt_live_now();
	vt_live_print("  after", c1);
	vt_report(vt_live_eq(c0, c1), "%s with %u failing commands: no BO, stream, block or SHIE entry "
	       "left", how, fails);
}

/* ---- command status, timeouts and reset, release records ------------------------ */

static int param_write(const char *name, unsigned int val)
{
	char path[256];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/module/vrex/parameters/%s", name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ok = fprintf(f, "%u\n", val) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* debugfs "resets": device resets after timeouts; -1 if unreadable. */
static long resets_now(void)
{
	char path[600];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/resets", vt_debugfs_dir());
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Device status codes reach user space through a fixed table; EINTR/EAGAIN never do. */
static void test_status_map(int fd, uint32_t s, uint32_t luma)
{
	static const struct { unsigned int code; int want; } map[] = {
		{ 4, -EIO },	/* EINTR: libdrm would re-submit */
		{ 11, -EIO },	/* EAGAIN: likewise */
		{ 200, -EIO },	/* unknown */
		{ 28, -ENOSPC },
		{ 17, -EEXIST },
	};
	struct drm_vrex_frame_submit f;
	unsigned int i;
	int r;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		vt_debugfs_write_u32("fail_cmd_code", map[i].code);
		vt_debugfs_write_u32("fail_cmds", 1);
		r = vt_frame_submit(fd, s, luma, 0, 0, &f);
		vt_report(r == map[i].want, "status map: device code %u -> %d (got %d)", map[i].code,
			  map[i].want, r);
	}
	vt_debugfs_write_u32("fail_cmd_code", 0);
	vt_debugfs_write_u32("fail_cmds", 0);
}

/*
 * The kernel's generic fault_attr ("fail_cmd/": probability, interval, times),
 * on kernels with CONFIG_FAULT_INJECTION_DEBUG_FS (the debug kernel): the
 * device says so in "fault_attr", and then the directory must work.
 */
static void test_fault_attr(int fd, uint32_t s, uint32_t luma)
{
	static const char *const knobs[][2] = {
		{ "fail_cmd/verbose", "0" }, { "fail_cmd/interval", "1" },
		{ "fail_cmd/times", "1" }, { "fail_cmd/probability", "100" },
	};
	struct drm_vrex_frame_submit f;
	char path[600], have = 0;
	unsigned int i;
	FILE *fp;
	int r;

	snprintf(path, sizeof(path), "%s/fault_attr", vt_debugfs_dir());
	fp = fopen(path, "r");
	if (!fp || fscanf(fp, " %c", &have) != 1) {
		vt_report(0, "fault_attr: %s readable", path);
		if (fp)
			fclose(fp);
		return;
	}
	fclose(fp);
	if (have != 'Y') {
		printf("  fault_attr: kernel without CONFIG_FAULT_INJECTION_DEBUG_FS, not checked\n");
		return;
	}
	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		if (vt_debugfs_write(knobs[i][0], knobs[i][1])) {
			vt_report(0, "fault_attr: write %s", knobs[i][0]);
			return;
		}
	}
	r = vt_frame_submit(fd, s, luma, 0, 0, &f);
	vt_report(r == -EIO, "fault_attr: fail_cmd times=1 probability=100 -> EIO (got %d)", r);
	r = vt_frame_submit(fd, s, luma, 0, 0, &f);
	vt_report(!r, "fault_attr: used up after one failure, the next frame works (got %d)", r);
	vt_debugfs_write("fail_cmd/probability", "0");
}

/* Counts records of @reason among @n. */
static unsigned int count_reason(const struct drm_vrex_released_block *rel, uint32_t n,
				 uint32_t reason)
{
	unsigned int k = 0;

	while (n--)
		k += rel[n].reason == reason;
	return k;
}

/*
 * A command that never completes: the waiter gives up after cmd_timeout_ms,
 * the device is reset, the batch stops there, and every block of every stream
 * comes back to its stream as a RESET record. Both streams work afterwards.
 */
static void test_timeout_reset(void)
{
	struct drm_vrex_released_block rel[8];
	struct drm_vrex_shie_insert_item it[3], ib;
	struct drm_vrex_frame_submit f;
	uint32_t sa, sb, luma, kv, kvb, cap;
	int fa = vt_open_node(NULL, 0), fb = vt_open_node(NULL, 0), r, i;
	long resets0 = resets_now();
	double t0, ms;

	if (fa < 0 || fb < 0 || vt_stream_create(fa, 0, 0, &sa) || vt_stream_create(fb, 0, 0, &sb) ||
	    vt_bo_create(fa, BO_SIZE, 1, 0, &luma, NULL) || vt_bo_create(fa, BO_SIZE, 2, 0, &kv, NULL) ||
	    vt_bo_create(fb, BO_SIZE, 2, 0, &kvb, NULL) || param_write("cmd_timeout_ms", 50)) {
		vt_report(0, "timeout: setup (streams, BOs, cmd_timeout_ms parameter)");
		goto out;
	}
	paint(fa, luma);
	vt_frame_submit(fa, sa, luma, 0, 0, &f);
	ib = vt_kv_item(f.fp, kvb, 0, 3, 0);
	vt_frame_submit(fb, sb, luma, 0, 0, NULL);
	r = vt_shie_batch(fb, DRM_IOCTL_VREX_SHIE_INSERT, sb, &ib, 1, sizeof(ib));
	for (i = 0; i < 3; i++)
		it[i] = vt_kv_item(f.fp, kv, (uint64_t)i * KV_LEN, (uint32_t)i, 0);
	if (r || ib.result) {
		vt_report(0, "timeout: the other file's block (%d, %d)", r, ib.result);
		goto out;
	}

	vt_debugfs_write_u32("hang_cmds", 1);
	t0 = now_ms();
	r = vt_shie_batch(fa, DRM_IOCTL_VREX_SHIE_INSERT, sa, it, 3, sizeof(it[0]));
	ms = now_ms() - t0;
	vt_report(r == -ETIMEDOUT && it[0].result == -ETIMEDOUT && it[1].result == -ECANCELED &&
		  it[2].result == -ECANCELED,
		  "timeout: a hung command ends the batch: ETIMEDOUT, items %d %d %d (got %d)",
		  it[0].result, it[1].result, it[2].result, r);
	vt_report(ms >= 40 && ms < 1000, "timeout: one wait of cmd_timeout_ms (50), not one per item "
		  "(%.0f ms)", ms);
	vt_report(resets0 >= 0 && resets_now() == resets0 + 1, "timeout: the device was reset once "
		  "(%ld -> %ld)", resets0, resets_now());
	vt_report(vt_debugfs_count("blocks") == 0 && vt_debugfs_count("entries") == 0,
		  "timeout: no block or entry survives the reset");

	cap = 8;
	r = vt_shie_retire(fb, sb, NULL, 0, rel, &cap);
	vt_report(!r && cap == 1 && rel[0].block == ib.block && rel[0].handle == kvb &&
		  rel[0].reason == DRM_VREX_RELEASE_RESET,
		  "timeout: the other file's block comes back as a RESET record (got %d, %u records)",
		  r, cap);
	r = vt_frame_submit(fa, sa, luma, 0, 0, &f);
	vt_report(!r, "timeout: the stream that timed out submits frames again (got %d)", r);
	r = vt_frame_submit(fb, sb, luma, 0, 0, NULL);
	vt_report(!r, "timeout: the other file's stream submits frames again (got %d)", r);
	r = vt_shie_batch(fa, DRM_IOCTL_VREX_SHIE_INSERT, sa, it, 3, sizeof(it[0]));
	vt_report(!r && !it[0].result && !it[1].result && !it[2].result,
		  "timeout: the batch applies after the reset (got %d)", r);
	cap = 8;
	r = vt_shie_retire(fa, sa, &it[0].block, 1, rel, &cap);
	vt_report(!r && cap == 1 && count_reason(rel, cap, DRM_VREX_RELEASE_REMOVED) == 1,
		  "timeout: and its blocks retire normally (got %d, %u records)", r, cap);
out:
	vt_debugfs_write_u32("hang_cmds", 0);
	param_write("cmd_timeout_ms", 250);
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
}

/*
 * A's zombie records stay in the device's release FIFO when A's drain fails;
 * B's next RETIRE drains them. They must reach A's next RETIRE, not vanish.
 */
static void test_foreign_records(void)
{
	struct drm_vrex_released_block rel[8];
	struct drm_vrex_shie_insert_item it;
	struct drm_vrex_frame_submit f;
	uint32_t sa, sb, luma, kv, cap, i;
	int fd = vt_open_node(NULL, 0), r;
	struct vt_live c0 = vt_live_now(), c1;

	if (fd < 0 || vt_stream_create(fd, 0, 0, &sa) || vt_stream_create(fd, 0, 0, &sb) ||
	    vt_bo_create(fd, BO_SIZE, 1, 0, &luma, NULL) || vt_bo_create(fd, BO_SIZE, 2, 0, &kv, NULL)) {
		vt_report(0, "records: setup");
		goto out;
	}
	paint(fd, luma);
	vt_frame_submit(fd, sa, luma, 0, 0, &f);
	vt_frame_submit(fd, sb, luma, 0, 0, NULL);
	it = vt_kv_item(f.fp, kv, 0, 0, 0);
	if (vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_INSERT, sa, &it, 1, sizeof(it)) || it.result) {
		vt_report(0, "records: insert");
		goto out;
	}
	for (i = 0; i < info.zombie_frames + 2; i++)
		vt_frame_submit(fd, sa, luma, 0, 0, NULL);

	/* A's RETIRE queues the zombie; its first POP fails, leaving the record in the FIFO. */
	vt_debugfs_write_u32("fail_cmd_op", VREX_CMD_POP_RELEASED);
	vt_debugfs_write_u32("fail_cmds", 1);
	cap = 8;
	r = vt_shie_retire(fd, sa, NULL, 0, rel, &cap);
	vt_debugfs_write_u32("fail_cmd_op", 0);
	vt_debugfs_write_u32("fail_cmds", 0);
	vt_report(!r && cap == 0, "records: A's RETIRE with a failed drain reports nothing yet "
		  "(got %d, %u)", r, cap);
	cap = 8;
	r = vt_shie_retire(fd, sb, NULL, 0, rel, &cap);
	vt_report(!r && cap == 0, "records: B's RETIRE drains A's record but reports none of it "
		  "(got %d, %u)", r, cap);
	cap = 0;
	r = vt_shie_retire(fd, sa, NULL, 0, rel, &cap);
	vt_report(r == -ENOSPC && cap == 1, "records: A's RETIRE asks room for the waiting record "
		  "(got %d, %u)", r, cap);
	cap = 8;
	r = vt_shie_retire(fd, sa, NULL, 0, rel, &cap);
	vt_report(!r && cap == 1 && rel[0].block == it.block && rel[0].handle == kv &&
		  rel[0].reason == DRM_VREX_RELEASE_ZOMBIE,
		  "records: A's next RETIRE reports its zombie (got %d, %u records)", r, cap);
out:
	if (fd >= 0)
		close(fd);
	c1 = vt_live_now();
	vt_report(vt_live_eq(c0, c1), "records: nothing left after close");
}

/*
 * rmmod while a file holds a stream and a mapped BO must be refused (the
 * fops hold a module reference) and leave everything working.
 */
static void test_rmmod_refused(void)
{
	struct drm_vrex_frame_submit f;
	uint32_t s, luma;
	unsigned char *p;
	int fd = vt_open_node(NULL, 0), st;

	if (fd < 0 || vt_stream_create(fd, 0, 0, &s) || vt_bo_create(fd, BO_SIZE, 1, 0, &luma, NULL)) {
		vt_report(0, "rmmod: setup");
		return;
	}
	p = vt_bo_map(fd, luma, BO_SIZE);
	if (!p) {
		vt_report(0, "rmmod: map");
		close(fd);
		return;
	}
	memset(p, 0x33, BO_SIZE);
	st = system("rmmod vrex 2>/dev/null");
	vt_report(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) != 0,
		  "rmmod with a live file, stream and mapping is refused");
	vt_report(p[BO_SIZE - 1] == 0x33 && !vt_frame_submit(fd, s, luma, 0, 0, &f),
		  "rmmod: mapping and device still work after the refused unload");
	munmap(p, BO_SIZE);
	close(fd);
}

int main(void)
{
	struct drm_vrex_query q = { .param = DRM_VREX_QUERY_DEVICE_INFO, .size = sizeof(info),
				    .ptr = (uintptr_t)&info };
	struct drm_vrex_frame_submit f;
	uint32_t s, luma, kv, block = 0;
	struct vt_live end;
	char path[600];
	int fd;

	fd = vt_open_node(NULL, 0);
	if (fd < 0 || vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q)) {
		printf("no vrex device\nfault: 0 passed, 1 failed\n");
		return 1;
	}
	vt_debugfs_find(fd);
	snprintf(path, sizeof(path), "%s/fail_cmds", vt_debugfs_dir());
	if (!vt_debugfs_dir()[0] || access(path, W_OK)) {
		/* The guests' module is built with the knobs: their absence is a failure. */
		vt_report(0, "fault injection knobs present in debugfs (%s; "
			  "CONFIG_DRM_ACCEL_VREX_FAULT_INJECTION off?)", path);
		close(fd);
		return vt_finish("fault");
	}
	vt_live_print("  before", vt_live_now());

	test_alloc(fd);
	test_stream_open(fd);
	if (vt_stream_create(fd, 0, 0, &s) || vt_bo_create(fd, BO_SIZE, 1, 0, &luma, NULL) ||
	    vt_bo_create(fd, BO_SIZE, 2, 0, &kv, NULL)) {
		vt_report(0, "setup: stream and BOs");
	} else {
		paint(fd, luma);
		test_frame(fd, s, luma);
		vt_frame_submit(fd, s, luma, 0, 0, &f);
		test_insert(fd, s, kv, f.fp, &block);
		test_lookup(fd, s, block);
		test_retire(fd, s, block);
		test_status_map(fd, s, luma);
		test_fault_attr(fd, s, luma);
	}
	close(fd);
	test_teardown(1, "destroy");
	test_teardown(8, "destroy");
	test_teardown(2, "close");
	test_teardown(8, "close");
	test_timeout_reset();
	test_foreign_records();
	test_rmmod_refused();

	vt_debugfs_write_u32("fail_alloc", 0);
	vt_debugfs_write_u32("fail_cmds", 0);
	end = vt_live_now();
	vt_live_print("  end", end);
	vt_report(end.bos == 0 && end.streams == 0 && end.blocks == 0 && end.entries == 0 &&
		  end.hw_blocks == 0, "leak check: nothing live after every file closed");
	return vt_finish("fault");
}
