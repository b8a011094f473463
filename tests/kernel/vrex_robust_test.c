// SPDX-License-Identifier: MIT
/*
 * vrex robustness, run as root in the QEMU guests: object lifetime under
 * concurrent use of one file (BO_CREATE racing GEM_CLOSE of the handle it is
 * about to return) and the per-file quotas (module parameters
 * file_max_streams and file_max_bytes, EDQUOT when hit) and the BO placement
 * hints (KV from the bottom of a bank, STAGING from the top). Ends with
 * "robust: N passed, M failed"; every case can fail, nothing is skipped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vrex_test_util.h"

#define PARAM_DIR "/sys/module/vrex/parameters/"

static struct drm_vrex_device_info info;

/* ---- BO_CREATE against GEM_CLOSE ------------------------------------------------------- */

#define RACE_ROUNDS 3000u

struct race {
	int fd;
	uint32_t bank;		/* the only bank the creates may use */
	volatile int stop;
	unsigned int bad_bank, create_err, closed_by_racer;
};

/*
 * GEM handles are the lowest free ids, so the creator's next handle is 1 (or 2 while the
 * racer's close is in flight): close those continuously, ideally between the handle being
 * published and BO_CREATE returning.
 */
static void *racer(void *arg)
{
	struct race *r = arg;
	unsigned int spins = 0;

	while (!r->stop) {
		if (!vt_gem_close(r->fd, 1))
			r->closed_by_racer++;
		if (!vt_gem_close(r->fd, 2))
			r->closed_by_racer++;
		if (!(++spins & 15))
			sched_yield();
	}
	return NULL;
}

static void test_create_close_race(int fd)
{
	struct race r = { .fd = fd, .bank = info.bank_count - 1 };
	struct vt_live c0 = vt_live_now(), c1;
	pthread_t t;
	unsigned int i, mine = 0;

	if (pthread_create(&t, NULL, racer, &r)) {
		vt_report(0, "race: thread");
		return;
	}
	for (i = 0; i < RACE_ROUNDS; i++) {
		uint32_t h, bank = ~0u;
		int ret = vt_bo_create(fd, 4096, 1ull << r.bank, 0, &h, &bank);

		if (ret) {
			r.create_err++;
			continue;
		}
		if (bank != r.bank)
			r.bad_bank++;
		if (!vt_gem_close(fd, h))
			mine++;
	}
	r.stop = 1;
	pthread_join(t, NULL);
	printf("  race: %u creates, %u closed by the creator, %u by the racer\n", RACE_ROUNDS, mine,
	       r.closed_by_racer);
	vt_report(!r.create_err, "race: every BO_CREATE succeeded (%u failed)", r.create_err);
	vt_report(!r.bad_bank, "race: every BO_CREATE reported the only allowed bank %u (%u wrong)",
		  r.bank, r.bad_bank);
	vt_report(mine + r.closed_by_racer == RACE_ROUNDS,
		  "race: every handle closed exactly once (%u + %u of %u)", mine, r.closed_by_racer,
		  RACE_ROUNDS);
	c1 = vt_live_now();
	vt_report(c1.bos == c0.bos, "race: no BO left (%ld before, %ld after)", c0.bos, c1.bos);
}

/* ---- per-file quotas ------------------------------------------------------------------- */

static int param_write(const char *name, unsigned long long val)
{
	char path[256];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), PARAM_DIR "%s", name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ok = fprintf(f, "%llu\n", val) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static void test_quota_streams(void)
{
	uint32_t ids[4], n = 0, s;
	int fd = vt_open_node(NULL, 0), fd2 = vt_open_node(NULL, 0), r;

	if (fd < 0 || fd2 < 0 || param_write("file_max_streams", 2)) {
		vt_report(0, "quota streams: setup (node or " PARAM_DIR "file_max_streams)");
		goto out;
	}
	while (n < 4 && !vt_stream_create(fd, 0, 0, &ids[n]))
		n++;
	r = vt_stream_create(fd, 0, 0, &s);
	vt_report(n == 2 && r == -EDQUOT,
		  "quota streams: 2 streams per file, the third -> EDQUOT (%u opened, got %d)", n, r);
	r = vt_stream_create(fd2, 0, 0, &s);
	vt_report(!r, "quota streams: another file still gets a stream (got %d)", r);
	if (n) {
		vt_stream_destroy(fd, ids[--n]);
		r = vt_stream_create(fd, 0, 0, &ids[n]);
		vt_report(!r, "quota streams: a destroyed stream gives its slot back (got %d)", r);
		if (!r)
			n++;
	}
	param_write("file_max_streams", 0);
	r = vt_stream_create(fd, 0, 0, &s);
	vt_report(!r, "quota streams: 0 lifts the limit (got %d)", r);
out:
	param_write("file_max_streams", 0);
	if (fd >= 0)
		close(fd);
	if (fd2 >= 0)
		close(fd2);
}

static void test_quota_bytes(void)
{
	uint32_t h[3], extra, h2;
	int fd = vt_open_node(NULL, 0), fd2 = vt_open_node(NULL, 0), r, r2, i;

	if (fd < 0 || fd2 < 0 || param_write("file_max_bytes", 3 * 4096)) {
		vt_report(0, "quota bytes: setup (node or " PARAM_DIR "file_max_bytes)");
		goto out;
	}
	r = vt_bo_create(fd, 8192, 1, 0, &h[0], NULL);
	r2 = vt_bo_create(fd, 4096, 1, 0, &h[1], NULL);
	vt_report(!r && !r2, "quota bytes: 12 KiB of BOs under a 12 KiB limit (got %d, %d)", r, r2);
	r = vt_bo_create(fd, 1, 1, 0, &extra, NULL);
	vt_report(r == -EDQUOT, "quota bytes: one more page -> EDQUOT (got %d)", r);
	r = vt_bo_create(fd2, 8192, 1, 0, &h2, NULL);
	vt_report(!r, "quota bytes: another file has its own budget (got %d)", r);
	vt_gem_close(fd, h[0]);
	r = vt_bo_create(fd, 8192, 1, 0, &h[2], NULL);
	vt_report(!r, "quota bytes: freeing a BO gives its bytes back (got %d)", r);
	for (i = 0; i < 2; i++) {
		r = vt_bo_create(fd, 4096, 1, 0, &extra, NULL);
		if (r)
			break;
	}
	vt_report(r == -EDQUOT && i == 0, "quota bytes: still bounded after the refund (got %d)", r);
out:
	param_write("file_max_bytes", 0);
	if (fd >= 0)
		close(fd);
	if (fd2 >= 0)
		close(fd2);
}

/* ---- BO placement hints --------------------------------------------------------------- */

/* Device address of the BO of @size bytes and @flags listed in debugfs banks; -1 if none. */
static long long bo_addr(uint64_t size, uint32_t flags, uint64_t lo, uint64_t hi)
{
	char path[600], line[256];
	unsigned long long addr, sz;
	unsigned int fl;
	long long found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/banks", vt_debugfs_dir());
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "bo %llx %llu %x", &addr, &sz, &fl) == 3 && sz == size &&
		    fl == flags && addr >= lo && addr < hi)
			found = (long long)addr;
	fclose(f);
	return found;
}

/* KV buffers fill a bank from the bottom, STAGING ones from the top. */
static void test_placement(void)
{
	uint64_t bank = info.bank_count - 1, lo = bank * info.bank_size, hi = lo + info.bank_size;
	int fd = vt_open_node(NULL, 0);
	uint32_t kv, st;
	long long a_kv, a_st;

	if (fd < 0 || vt_bo_create(fd, 8192, 1ull << bank, DRM_VREX_BO_KV, &kv, NULL) ||
	    vt_bo_create(fd, 12288, 1ull << bank, DRM_VREX_BO_STAGING, &st, NULL)) {
		vt_report(0, "placement: setup");
		goto out;
	}
	a_kv = bo_addr(8192, DRM_VREX_BO_KV, lo, hi);
	a_st = bo_addr(12288, DRM_VREX_BO_STAGING, lo, hi);
	vt_report(a_kv == (long long)lo, "placement: KV BO at the bottom of bank %llu (%#llx, want %#llx)",
		  (unsigned long long)bank, a_kv, (unsigned long long)lo);
	vt_report(a_st == (long long)(hi - 12288), "placement: STAGING BO at the top of the bank "
		  "(%#llx, want %#llx)", a_st, (unsigned long long)(hi - 12288));
out:
	if (fd >= 0)
		close(fd);
}

int main(void)
{
	struct drm_vrex_query q = { .param = DRM_VREX_QUERY_DEVICE_INFO, .size = sizeof(info),
				    .ptr = (uintptr_t)&info };
	struct vt_live end;
	int fd;

	fd = vt_open_node(NULL, 0);
	if (fd < 0 || vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q) || vt_debugfs_find(fd)) {
		printf("no vrex device or no debugfs\nrobust: 0 passed, 1 failed\n");
		return 1;
	}
	test_create_close_race(fd);
	close(fd);
	test_quota_streams();
	test_quota_bytes();
	test_placement();

	end = vt_live_now();
	vt_live_print("  end", end);
	vt_report(end.bos == 0 && end.streams == 0 && end.blocks == 0 && end.entries == 0,
		  "leak check: nothing live after every file closed");
	return vt_finish("robust");
}
