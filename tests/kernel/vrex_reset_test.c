// SPDX-License-Identifier: MIT
/*
 * vrex device resets, run as root in the QEMU guests with vrex_sim's fault
 * knobs (debugfs hang_cmds: the next N commands never complete):
 * - a reset empties every ReSV head: the owner is told (-ESTALE on the head
 *   until RESV_TRUNCATE to 0 acknowledges it), never left hashing into or
 *   selecting from an emptied head as if nothing happened;
 * - while a command hangs (the device lock held for a whole timeout), the
 *   world-readable sysfs counters answer at once and a process waiting for
 *   the lock can be killed;
 * - a device that stays hung through repeated resets is wedged: ioctls fail
 *   with EIO at once (sysfs "wedged" reads 1) until the device is bound
 *   again, which gives a working device.
 * Ends with "reset: N passed, M failed"; a missing knob is a failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
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

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The sysfs directory of @fd's device ("/sys/dev/char/M:m/device", resolved) into @out. */
static int device_dir(int fd, char *out, size_t len)
{
	char path[128], real[PATH_MAX];
	struct stat st;

	if (fstat(fd, &st))
		return -1;
	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/device", major(st.st_rdev),
		 minor(st.st_rdev));
	if (!realpath(path, real))
		return -1;
	snprintf(out, len, "%s", real);
	return 0;
}

static long read_long(const char *path)
{
	char buf[64] = { 0 };
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

struct hanger {
	int fd;
	uint32_t stream, luma;
	int ret;
	double t_end;		/* when the hung ioctl returned */
};

/* One frame submit that hangs for the whole cmd_timeout_ms, holding the device lock. */
static void *hang_one(void *arg)
{
	struct hanger *h = arg;

	h->ret = vt_frame_submit(h->fd, h->stream, h->luma, 0, 0, NULL);
	h->t_end = now_ms();
	return NULL;
}

static long debugfs_long(const char *name)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/%s", vt_debugfs_dir(), name);
	return read_long(path);
}

/*
 * Starts a frame submit on @h that hangs for cmd_timeout_ms and returns once
 * the hung command is in the device (vrex_sim's hang_cmds counted it down):
 * from then on the submitter holds the device lock. 0, or -1 on timeout.
 */
static int hang_start(struct hanger *h, pthread_t *th)
{
	int i;

	h->t_end = 0;
	vt_debugfs_write_u32("hang_cmds", 1);
	pthread_create(th, NULL, hang_one, h);
	for (i = 0; i < 2000 && debugfs_long("hang_cmds") != 0; i++)
		usleep(1000);
	return debugfs_long("hang_cmds") == 0 ? 0 : -1;
}

static void hang_end(struct hanger *h, pthread_t th, const char *what)
{
	pthread_join(th, NULL);
	vt_report(h->ret == -ETIMEDOUT, "busy: control: the command hung for the %s timed out "
		  "(got %d)", what, h->ret);
}

/*
 * A command hangs for HANG_MS, holding the device lock. A sysfs counter read
 * must come back while the command is still hung (before: it slept on the
 * device lock until the timeout and the reset were over), and, during a
 * second hang, a process blocked on the lock in an ioctl must die at SIGKILL
 * while the command is still hung (before: uninterruptible until the lock
 * was free). "While still hung" is judged against when the hung ioctl
 * returned, with a 200 ms margin, not by absolute times: the debug kernels
 * run slowly.
 */
#define HANG_MS 2000
static void test_busy_device(void)
{
	struct hanger h = { .fd = vt_open_node(NULL, 0) };
	char dir[PATH_MAX], path[PATH_MAX + 32];
	double t0, t_read, t_reaped;
	pthread_t th;
	long frames;
	pid_t pid;
	int st, fd2;

	if (h.fd < 0 || vt_stream_create(h.fd, 0, 0, &h.stream) ||
	    vt_bo_create(h.fd, BO_SIZE, 1, 0, &h.luma, NULL) || device_dir(h.fd, dir, sizeof(dir)) ||
	    param_write("cmd_timeout_ms", HANG_MS)) {
		vt_report(0, "busy: setup");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/vrex/frames", dir);
	frames = read_long(path);
	vt_report(frames >= 0, "busy: control: %s readable (%ld)", path, frames);

	if (hang_start(&h, &th)) {
		vt_report(0, "busy: the hung command reached the device");
		goto out_join;
	}
	t0 = now_ms();
	frames = read_long(path);
	t_read = now_ms();
	pthread_join(th, NULL);
	vt_report(frames >= 0 && t_read < h.t_end - 200, "busy: a sysfs counter answers while a "
		  "command hangs (%ld after %.0f ms, %.0f ms before the hung ioctl returned)", frames,
		  t_read - t0, h.t_end - t_read);
	vt_report(h.ret == -ETIMEDOUT, "busy: control: the command hung for the sysfs read timed "
		  "out (got %d)", h.ret);

	if (hang_start(&h, &th)) {
		vt_report(0, "busy: the second hung command reached the device");
		goto out_join;
	}
	fd2 = vt_open_node(NULL, 0);
	pid = fork();
	if (pid == 0) {
		uint32_t s;

		/* Blocks on the device lock the hung command holds. */
		_exit(vt_stream_create(fd2, 0, 0, &s) ? 1 : 0);
	}
	usleep(300 * 1000);
	t0 = now_ms();
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	t_reaped = now_ms();
	if (fd2 >= 0)
		close(fd2);
	hang_end(&h, th, "kill");
	vt_report(WIFSIGNALED(st) && t_reaped < h.t_end - 200, "busy: a process waiting for the "
		  "device lock dies at SIGKILL while the command hangs (%s after %.0f ms, %.0f ms "
		  "before the hung ioctl returned)", WIFSIGNALED(st) ? "killed" : "exited",
		  t_reaped - t0, h.t_end - t_reaped);
	goto out;
out_join:
	pthread_join(th, NULL);
out:
	vt_debugfs_write_u32("hang_cmds", 0);
	param_write("cmd_timeout_ms", 250);
	if (h.fd >= 0)
		close(h.fd);
}

/*
 * Every command hangs: the first times out, the resets that follow do not
 * bring the device back, and it is declared wedged. From then on ioctls that
 * need the device fail with EIO without waiting (before: every command
 * waited for its timeout and reset again), sysfs "wedged" reads 1, and
 * binding the device again clears it.
 */
static void test_wedged(void)
{
	char dir[PATH_MAX], drv[PATH_MAX], path[PATH_MAX + 32];
	int fd = vt_open_node(NULL, 0), r;
	uint32_t s, luma;
	const char *dev;
	double t0, ms;

	if (fd < 0 || vt_stream_create(fd, 0, 0, &s) || vt_bo_create(fd, BO_SIZE, 1, 0, &luma, NULL) ||
	    device_dir(fd, dir, sizeof(dir)) || param_write("cmd_timeout_ms", 50)) {
		vt_report(0, "wedged: setup");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/driver", dir);
	if (!realpath(path, drv)) {
		vt_report(0, "wedged: the device's driver in sysfs");
		goto out;
	}
	dev = strrchr(dir, '/') + 1;
	vt_debugfs_write_u32("hang_cmds", 1000);
	r = vt_frame_submit(fd, s, luma, 0, 0, NULL);
	vt_report(r == -ETIMEDOUT, "wedged: the hung command times out (got %d)", r);
	/*
	 * A command that waited would now take the whole 2 s timeout; one that
	 * does not wait returns at once. 1 s apart, so a TCG guest whose vCPU
	 * the host stalls for a while (40 ms was once the bound) cannot fail it.
	 */
	param_write("cmd_timeout_ms", 2000);
	t0 = now_ms();
	r = vt_frame_submit(fd, s, luma, 0, 0, NULL);
	ms = now_ms() - t0;
	vt_report(r == -EIO && ms < 1000, "wedged: the next command fails with EIO without waiting "
		  "for the 2000 ms timeout (got %d after %.0f ms)", r, ms);
	snprintf(path, sizeof(path), "%s/vrex/wedged", dir);
	vt_report(read_long(path) == 1, "wedged: sysfs wedged reads 1 (%ld)", read_long(path));
	vt_debugfs_write_u32("hang_cmds", 0);
	r = vt_frame_submit(fd, s, luma, 0, 0, NULL);
	vt_report(r == -EIO, "wedged: stays wedged once the device would answer (got %d)", r);
	r = vt_stream_destroy(fd, s);
	vt_report(!r, "wedged: a stream can still be destroyed (got %d)", r);
	close(fd);
	fd = -1;

	snprintf(path, sizeof(path), "%s/unbind", drv);
	r = vt_write_str(path, dev);
	snprintf(path, sizeof(path), "%s/bind", drv);
	r = r ? r : vt_write_str(path, dev);
	vt_report(!r, "wedged: unbind and bind the device again (%d)", r);
	fd = vt_open_node(NULL, 0);
	r = fd < 0 ? -ENODEV : vt_stream_create(fd, 0, 0, &s);
	if (!r)
		r = vt_bo_create(fd, BO_SIZE, 1, 0, &luma, NULL);
	if (!r)
		r = vt_frame_submit(fd, s, luma, 0, 0, NULL);
	vt_report(!r, "wedged: the rebound device works (got %d)", r);
	snprintf(path, sizeof(path), "%s/vrex/wedged", dir);
	vt_report(read_long(path) == 0, "wedged: and reads wedged 0 (%ld)", read_long(path));
out:
	if (fd >= 0) {
		vt_debugfs_find(fd);
		vt_debugfs_write_u32("hang_cmds", 0);
		close(fd);
	}
	param_write("cmd_timeout_ms", 250);
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
	test_busy_device();
	test_wedged();
	return vt_finish("reset");
}
