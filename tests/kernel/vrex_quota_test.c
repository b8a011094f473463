// SPDX-License-Identifier: MIT
/*
 * vrex per-user quotas, run as root in the QEMU guests. The checks run in
 * child processes that drop to an unprivileged uid (65534) and open the node
 * themselves, so they are charged as that user; root (CAP_SYS_ADMIN) is
 * counted but not limited. Per resource, with its module parameter set to a
 * small share (and every default checked to be non-zero first):
 *   streams  uid_streams_pct: the limit spans the uid's files (a second file
 *            of the same uid is refused too), EDQUOT, and frees on close
 *   bytes    uid_bytes_pct: BO bytes
 *   heads    uid_heads_pct: ReSV heads
 *   entries  uid_entries_pct: SHIE entries (per-item result EDQUOT)
 * Before per-user quotas nothing was limited by default and no limit spanned
 * files. Ends with "quota: N passed, M failed".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vrex_test_util.h"

#define NOBODY 65534
#define PARAMS "/sys/module/vrex/parameters/"

static struct drm_vrex_device_info info;
static char node[256];

static long param_read(const char *name)
{
	char path[256], buf[32] = { 0 };
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

static int param_write(const char *name, long val)
{
	char path[256], buf[32];
	int fd, ok;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	snprintf(buf, sizeof(buf), "%ld\n", val);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ok = write(fd, buf, strlen(buf)) == (ssize_t)strlen(buf);
	close(fd);
	return ok ? 0 : -1;
}

/*
 * Runs @fn as uid NOBODY in a child; its exit status (0..255) comes back,
 * 255 when the child could not drop privileges or open the node.
 */
static int as_nobody(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		if (setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
			_exit(255);
		_exit(fn(arg) & 0xff);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static int open_nobody(void)
{
	return open(node, O_RDWR | O_CLOEXEC);
}

/* Streams until EDQUOT over two files: returns how many succeeded, 200 + n if not EDQUOT. */
static int streams_child(void *arg)
{
	int fa = open_nobody(), fb = open_nobody(), n = 0, r = 0, i;
	uint32_t s;

	(void)arg;
	if (fa < 0 || fb < 0)
		return 255;
	for (i = 0; i < 64; i++) {
		/* Alternate files: the limit is the uid's, not a file's. */
		r = vt_stream_create(i & 1 ? fb : fa, 0, 0, &s);
		if (r)
			break;
		n++;
	}
	return r == -EDQUOT ? n : 200 + n;
}

static int bytes_child(void *arg)
{
	uint64_t size = *(uint64_t *)arg;
	int fd = open_nobody(), n = 0, r = 0, i;
	uint32_t h;

	if (fd < 0)
		return 255;
	for (i = 0; i < 64; i++) {
		r = vt_bo_create(fd, size, ~0ull >> (64 - info.bank_count), 0, &h, NULL);
		if (r)
			break;
		n++;
	}
	return r == -EDQUOT ? n : 200 + n;
}

static int heads_child(void *arg)
{
	int fd = open_nobody(), n = 0, r = 0, i;
	unsigned int d;

	(void)arg;
	if (fd < 0)
		return 255;
	for (i = 0; i < 64; i++) {
		struct drm_vrex_resv_head_create hc = { 0 };

		hc.params.seed = 1;
		hc.params.dim = 8;
		hc.params.ratio = DRM_VREX_RESV_RATIO_ONE;
		hc.params.tokens_per_block = 1;
		for (d = 0; d < DRM_VREX_RESV_LUT_SIZE; d++)
			hc.params.lut[d] = 1;
		r = vt_ioctl(fd, DRM_IOCTL_VREX_RESV_HEAD_CREATE, &hc);
		if (r)
			break;
		n++;
	}
	return r == -EDQUOT ? n : 200 + n;
}

/*
 * Inserts ENTRY_STREAMS x ENTRY_ITEMS entries, one batch per stream, each
 * item a distinct (region, frame offset) after four frames; exits with how
 * many got result 0 (less than 250 expected), 250 if an item failed with
 * anything but EDQUOT.
 */
#define ENTRY_STREAMS 3
#define ENTRY_ITEMS 80
static int entries_child(void *arg)
{
	static struct drm_vrex_shie_insert_item it[ENTRY_ITEMS];
	struct drm_vrex_frame_submit f;
	int fd = open_nobody(), n = 0, i, k, j;
	uint32_t s, luma, kv;
	uint8_t *p;

	(void)arg;
	if (fd < 0 || vt_bo_create(fd, 65536, 1, 0, &luma, NULL) ||
	    vt_bo_create(fd, 65536, 2, 0, &kv, NULL) || !(p = vt_bo_map(fd, luma, 65536)))
		return 254;
	memset(p, 0x33, 65536);
	for (k = 0; k < ENTRY_STREAMS; k++) {
		if (vt_stream_create(fd, 0, 0, &s))
			return 253;
		for (j = 0; j < 4; j++)
			if (vt_frame_submit(fd, s, luma, 0, 0, &f))
				return 252;
		for (i = 0; i < ENTRY_ITEMS; i++)
			it[i] = vt_kv_item(f.fp, kv, 0, (uint32_t)i % DRM_VREX_REGIONS,
					   i / DRM_VREX_REGIONS + DRM_VREX_OFFSET_MIN);
		if (vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_INSERT, s, it, ENTRY_ITEMS,
				  sizeof(it[0])))
			return 251;
		for (i = 0; i < ENTRY_ITEMS; i++) {
			if (!it[i].result)
				n++;
			else if (it[i].result != -EDQUOT)
				return 250;
		}
	}
	return n;
}

static void check_defaults(void)
{
	static const char *const names[] = { "uid_bytes_pct", "uid_streams_pct", "uid_heads_pct",
					     "uid_entries_pct", "uid_max_imports" };
	unsigned int i;
	long v;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		v = param_read(names[i]);
		vt_report(v > 0, "defaults: %s is a non-zero limit (%ld)", names[i], v);
	}
}

static void test_resource(const char *what, const char *param, long pct, int (*fn)(void *),
			  void *arg, long capacity)
{
	long old = param_read(param), want = capacity * pct / 100;
	int got;

	if (want < 1)
		want = 1;
	if (old < 0 || param_write(param, pct)) {
		vt_report(0, "%s: parameter %s writable", what, param);
		return;
	}
	got = as_nobody(fn, arg);
	vt_report(got == want, "%s: uid %d gets %ld of %ld at %s=%ld, then EDQUOT (child said %d)",
		  what, NOBODY, want, capacity, param, pct, got);
	/* Everything the child held went with its files: the full share again. */
	got = as_nobody(fn, arg);
	vt_report(got == want, "%s: released at close, the share is there again (child said %d)",
		  what, got);
	param_write(param, old);
}

int main(void)
{
	struct drm_vrex_query q = { .param = DRM_VREX_QUERY_DEVICE_INFO, .size = sizeof(info),
				    .ptr = (uintptr_t)&info };
	struct drm_vrex_resv_stats rs = { 0 };
	struct drm_vrex_query qr = { .param = DRM_VREX_QUERY_RESV_STATS, .size = sizeof(rs),
				     .ptr = (uintptr_t)&rs };
	uint64_t bo_size;
	struct stat st;
	int fd;

	fd = vt_open_node(node, sizeof(node));
	if (fd < 0 || vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q) || stat(node, &st)) {
		printf("no vrex device\nquota: 0 passed, 1 failed\n");
		return 1;
	}
	vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &qr);
	close(fd);
	/* The unprivileged children open the node themselves. */
	chmod(node, 0666);

	check_defaults();
	test_resource("streams", "uid_streams_pct", 25, streams_child, NULL, info.max_streams);
	bo_size = info.bank_size;
	test_resource("bytes", "uid_bytes_pct", 25, bytes_child, &bo_size, info.bank_count);
	if (rs.heads)
		test_resource("heads", "uid_heads_pct", 50, heads_child, NULL, rs.heads);
	else
		vt_report(0, "heads: the simulated device has ReSV heads");
	/* 1% of the SHIE, below the items inserted. */
	if (info.shie_capacity / 100 < ENTRY_STREAMS * ENTRY_ITEMS)
		test_resource("entries", "uid_entries_pct", 1, entries_child, NULL, info.shie_capacity);
	else
		vt_report(0, "entries: 1%% of %u entries fits one batch", info.shie_capacity);
	(void)bo_size;

	chmod(node, st.st_mode & 07777);
	return vt_finish("quota");
}
