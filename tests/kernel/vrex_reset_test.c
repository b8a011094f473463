// SPDX-License-Identifier: MIT
/*
 * vrex device resets, run as root in the QEMU guests with vrex_sim's fault
 * knobs (debugfs hang_cmds: the next N commands never complete):
 * - a reset empties every ReSV head: the owner is told (-ESTALE on the head
 *   until RESV_TRUNCATE to 0 acknowledges it), never left hashing into or
 *   selecting from an emptied head as if nothing happened.
 * Ends with "reset: N passed, M failed"; a missing knob is a failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vrex_test_util.h"

#define RESV_DIM 8u
#define KEYS 16u
#define BO_SIZE 65536u

static struct drm_vrex_device_info info;

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

static struct drm_vrex_resv_head_create head_args(void)
{
	struct drm_vrex_resv_head_create a = { 0 };
	unsigned int d;

	a.params.seed = 7;
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

static int hash(int fd, uint32_t head, uint32_t handle, uint32_t *tokens)
{
	struct drm_vrex_resv_hash h = { .head = head, .count = KEYS, .handle = handle };
	int r = vt_ioctl(fd, DRM_IOCTL_VREX_RESV_HASH, &h);

	*tokens = r ? 0 : h.tokens;
	return r;
}

static int truncate_head(int fd, uint32_t head, uint32_t keep)
{
	struct drm_vrex_resv_truncate t = { .head = head, .keep = keep };

	return vt_ioctl(fd, DRM_IOCTL_VREX_RESV_TRUNCATE, &t);
}

static int select_one(int fd, uint32_t head, uint32_t handle)
{
	struct drm_vrex_resv_select_item it = { .head = head, .query_handle = handle };
	struct drm_vrex_resv_batch b = { .count = 1, .elem_size = sizeof(it),
					 .items = (uintptr_t)&it };

	return vt_ioctl(fd, DRM_IOCTL_VREX_RESV_SELECT, &b);
}

/*
 * Another file's command hangs and the device is reset: this file's head,
 * holding KEYS tokens, is emptied by the reset. Its next HASH, SELECT and
 * TRUNCATE to a non-zero length report ESTALE; TRUNCATE to 0 acknowledges and
 * the head works again from empty. Before reset reporting, the HASH after the
 * reset succeeded with KEYS tokens instead of 2 * KEYS: the loss was silent.
 */
static void test_resv_heads(void)
{
	struct drm_vrex_resv_head_create hc = head_args();
	struct drm_vrex_frame_submit f;
	int fa = vt_open_node(NULL, 0), fb = vt_open_node(NULL, 0), r;
	uint32_t bo, luma, s, tokens = 0;
	int16_t *keys;
	unsigned int i;

	if (!(info.caps & DRM_VREX_CAP_RESV)) {
		vt_report(0, "resv: the simulated device has the ReSV unit");
		goto out;
	}
	if (fa < 0 || fb < 0 || vt_ioctl(fa, DRM_IOCTL_VREX_RESV_HEAD_CREATE, &hc) ||
	    vt_bo_create(fa, BO_SIZE, 1, 0, &bo, NULL) || vt_stream_create(fb, 0, 0, &s) ||
	    vt_bo_create(fb, BO_SIZE, 1, 0, &luma, NULL) || param_write("cmd_timeout_ms", 50)) {
		vt_report(0, "resv: setup (files, head, BOs, stream, cmd_timeout_ms)");
		goto out;
	}
	keys = vt_bo_map(fa, bo, BO_SIZE);
	if (!keys) {
		vt_report(0, "resv: map the key BO");
		goto out;
	}
	for (i = 0; i < KEYS * RESV_DIM; i++)
		keys[i] = (int16_t)((i * 2654435761u) >> 16);
	munmap(keys, BO_SIZE);
	r = hash(fa, hc.head, bo, &tokens);
	vt_report(!r && tokens == KEYS, "resv: control: %u keys hashed (got %d, %u tokens)", KEYS, r,
		  tokens);

	if (vt_debugfs_write_u32("hang_cmds", 1)) {
		vt_report(0, "resv: hang_cmds knob");
		goto out;
	}
	r = vt_frame_submit(fb, s, luma, 0, 0, &f);
	vt_report(r == -ETIMEDOUT, "resv: another file's command hangs: ETIMEDOUT and a reset (got %d)",
		  r);

	r = hash(fa, hc.head, bo, &tokens);
	vt_report(r == -ESTALE, "resv: HASH on the head the reset emptied: ESTALE (got %d, %u tokens)",
		  r, tokens);
	r = select_one(fa, hc.head, bo);
	vt_report(r == -ESTALE, "resv: SELECT on it: ESTALE (got %d)", r);
	r = truncate_head(fa, hc.head, 1);
	vt_report(r == -ESTALE, "resv: TRUNCATE to 1 token: ESTALE (got %d)", r);
	r = truncate_head(fa, hc.head, 0);
	vt_report(!r, "resv: TRUNCATE to 0 acknowledges the loss (got %d)", r);
	r = hash(fa, hc.head, bo, &tokens);
	vt_report(!r && tokens == KEYS, "resv: the head works again from empty (got %d, %u tokens)",
		  r, tokens);
	r = select_one(fa, hc.head, bo);
	vt_report(!r, "resv: and selects (got %d)", r);
out:
	vt_debugfs_write_u32("hang_cmds", 0);
	param_write("cmd_timeout_ms", 250);
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
}

int main(void)
{
	struct drm_vrex_query q = { .param = DRM_VREX_QUERY_DEVICE_INFO, .size = sizeof(info),
				    .ptr = (uintptr_t)&info };
	int fd;

	fd = vt_open_node(NULL, 0);
	if (fd < 0 || vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q)) {
		printf("no vrex device\nreset: 0 passed, 1 failed\n");
		return 1;
	}
	vt_debugfs_find(fd);
	close(fd);
	test_resv_heads();
	return vt_finish("reset");
}
