// SPDX-License-Identifier: MIT
/*
 * vrex robustness, run as root in the QEMU guests: object lifetime under
 * concurrent use of one file (BO_CREATE racing GEM_CLOSE of the handle it is
 * about to return). Ends with
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

	end = vt_live_now();
	vt_live_print("  end", end);
	vt_report(end.bos == 0 && end.streams == 0 && end.blocks == 0 && end.entries == 0,
		  "leak check: nothing live after every file closed");
	return vt_finish("robust");
}
