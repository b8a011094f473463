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
 * "fault: N passed, M failed"; exits 0 with a note when the knobs are absent.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <drm.h>
#include <drm/vrex_accel.h>

#define W 128
#define H 96
#define KV_LEN 16384u
#define BO_SIZE 65536u

static int n_pass, n_fail;
static char dbg_dir[512];
static struct drm_vrex_device_info info;

static void report(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", ok ? "ok  " : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (ok)
		n_pass++;
	else
		n_fail++;
}

static int xioctl(int fd, unsigned long req, void *arg)
{
	int r;

	do {
		r = ioctl(fd, req, arg);
	} while (r == -1 && (errno == EINTR || errno == EAGAIN));
	return r == -1 ? -errno : 0;
}

static int open_in(const char *dir, const char *prefix)
{
	char path[300], name[64];
	struct drm_version v;
	struct dirent *de;
	DIR *d = opendir(dir);
	int fd;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&v, 0, sizeof(v));
		memset(name, 0, sizeof(name));
		v.name = name;
		v.name_len = sizeof(name) - 1;
		if (!xioctl(fd, DRM_IOCTL_VERSION, &v) && !strcmp(name, DRM_VREX_DRIVER_NAME)) {
			closedir(d);
			return fd;
		}
		close(fd);
	}
	closedir(d);
	return -1;
}

static int open_node(void)
{
	int fd = open_in("/dev/accel", "accel");

	return fd >= 0 ? fd : open_in("/dev/dri", "renderD");
}

static void find_debugfs(int fd)
{
	char path[600], buf[64], want[64];
	struct dirent *de;
	struct stat st;
	DIR *d;
	FILE *f;

	mkdir("/sys/kernel/debug", 0755);
	mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	if (fstat(fd, &st))
		return;
	snprintf(want, sizeof(want), "%u:%u\n", major(st.st_rdev), minor(st.st_rdev));
	d = opendir("/sys/kernel/debug/vrex");
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/debug/vrex/%s/dev", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && !strcmp(buf, want))
			snprintf(dbg_dir, sizeof(dbg_dir), "/sys/kernel/debug/vrex/%s", de->d_name);
		fclose(f);
	}
	closedir(d);
}

static long count(const char *what)
{
	char path[600], key[32];
	long val, found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/counts", dbg_dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%31s %ld", key, &val) == 2)
		if (!strcmp(key, what))
			found = val;
	fclose(f);
	return found;
}

static int knob(const char *file, unsigned int n)
{
	char path[600], s[16];
	int fd, len, ok;

	snprintf(path, sizeof(path), "%s/%s", dbg_dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = snprintf(s, sizeof(s), "%u", n);
	ok = write(fd, s, len) == len;
	close(fd);
	return ok ? 0 : -1;
}

/* Live objects, kernel and hardware side. */
struct counts {
	long bos, streams, blocks, entries, hw_blocks;
};

static struct counts counts_now(void)
{
	return (struct counts){ count("bos"), count("streams"), count("blocks"), count("entries"),
				count("hw_blocks") };
}

static int counts_eq(struct counts a, struct counts b)
{
	return a.bos == b.bos && a.streams == b.streams && a.blocks == b.blocks &&
	       a.entries == b.entries && a.hw_blocks == b.hw_blocks;
}

static void print_counts(const char *when, struct counts c)
{
	printf("  %s: bos %ld streams %ld blocks %ld entries %ld hw_blocks %ld\n", when, c.bos,
	       c.streams, c.blocks, c.entries, c.hw_blocks);
}

/* ---- wrappers ------------------------------------------------------------------ */

static int bo_create(int fd, uint64_t size, uint64_t mask, uint32_t *handle)
{
	struct drm_vrex_bo_create c = { .size = size, .bank_mask = mask };
	int r = xioctl(fd, DRM_IOCTL_VREX_BO_CREATE, &c);

	if (!r)
		*handle = c.handle;
	return r;
}

static int stream_create(int fd, uint32_t *id)
{
	struct drm_vrex_stream_create c = { 0 };
	int r = xioctl(fd, DRM_IOCTL_VREX_STREAM_CREATE, &c);

	if (!r)
		*id = c.stream;
	return r;
}

static int stream_destroy(int fd, uint32_t id)
{
	struct drm_vrex_stream_destroy d = { .stream = id };

	return xioctl(fd, DRM_IOCTL_VREX_STREAM_DESTROY, &d);
}

static int frame(int fd, uint32_t stream, uint32_t handle, uint32_t flags,
		 struct drm_vrex_frame_submit *out)
{
	struct drm_vrex_frame_submit f = { .stream = stream, .handle = handle, .width = W,
					   .height = H, .stride = W, .flags = flags };
	int r = xioctl(fd, DRM_IOCTL_VREX_FRAME_SUBMIT, &f);

	if (out)
		*out = f;
	return r;
}

static int batch(int fd, unsigned long req, uint32_t stream, void *items, uint32_t n,
		 uint32_t esz)
{
	struct drm_vrex_shie_batch b = { .stream = stream, .count = n, .elem_size = esz,
					 .items = (uintptr_t)items };

	return xioctl(fd, req, &b);
}

static struct drm_vrex_shie_insert_item kv_item(const __u64 fp[2], uint32_t handle,
						uint64_t offset, uint32_t region)
{
	return (struct drm_vrex_shie_insert_item){ .fp = { fp[0], fp[1] }, .handle = handle,
						   .offset = offset, .length = KV_LEN,
						   .region = region };
}

static int retire(int fd, uint32_t stream, uint32_t *ids, uint32_t n, uint32_t *cap)
{
	static struct drm_vrex_released_block rel[64];
	struct drm_vrex_shie_retire r = { .stream = stream, .remove_count = n,
					  .released_cap = 64, .elem_size = sizeof(rel[0]),
					  .remove = (uintptr_t)ids, .released = (uintptr_t)rel };
	int ret = xioctl(fd, DRM_IOCTL_VREX_SHIE_RETIRE, &r);

	if (cap)
		*cap = r.released_cap;
	return ret;
}

static int found(int fd, uint32_t stream, uint32_t region, uint32_t block)
{
	struct drm_vrex_shie_lookup_item lk = { .kind = DRM_VREX_LOOKUP_TEMPORAL, .region = region };

	return !batch(fd, DRM_IOCTL_VREX_SHIE_LOOKUP, stream, &lk, 1, sizeof(lk)) &&
	       lk.hit_flags == DRM_VREX_HIT && lk.block == block;
}

static void paint(int fd, uint32_t handle)
{
	struct drm_vrex_bo_mmap_offset mo = { .handle = handle };
	unsigned char *p;
	unsigned int i;

	if (xioctl(fd, DRM_IOCTL_VREX_BO_MMAP_OFFSET, &mo))
		return;
	p = mmap(NULL, BO_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)mo.offset);
	if (p == MAP_FAILED)
		return;
	for (i = 0; i < BO_SIZE; i++)
		p[i] = (unsigned char)((i * 7) ^ ((i >> 7) * 13));
	munmap(p, BO_SIZE);
}

/* ---- the cases --------------------------------------------------------------------- */

static void test_alloc(int fd)
{
	struct counts c0 = counts_now(), c1;
	uint32_t h;
	int r;

	knob("fail_alloc", 1);
	r = bo_create(fd, 4096, 1, &h);
	c1 = counts_now();
	report(r == -ENOMEM && counts_eq(c0, c1), "BO_CREATE: injected allocation failure -> ENOMEM, "
	       "no BO counted (got %d)", r);
	r = bo_create(fd, 4096, 1, &h);
	report(!r, "BO_CREATE: next allocation works (got %d)", r);
	if (!r) {
		struct drm_gem_close gc = { .handle = h };

		xioctl(fd, DRM_IOCTL_GEM_CLOSE, &gc);
	}
	report(counts_eq(c0, counts_now()), "BO_CREATE: BO count back after close");
}

static void test_stream_open(int fd)
{
	struct counts c0 = counts_now();
	uint32_t ids[64], n = 0, s;
	int r;

	knob("fail_cmds", 1);
	r = stream_create(fd, &s);
	report(r == -EIO && counts_eq(c0, counts_now()),
	       "STREAM_CREATE: injected command failure -> EIO, no stream counted (got %d)", r);
	/* The failed open must not have used up a slot. */
	while (n < 64 && !stream_create(fd, &ids[n]))
		n++;
	report(n == info.max_streams, "STREAM_CREATE: all %u slots open after the failure (got %u)",
	       info.max_streams, n);
	while (n--)
		stream_destroy(fd, ids[n]);
	report(counts_eq(c0, counts_now()), "STREAM_CREATE: counts back after destroying them");
}

static void test_frame(int fd, uint32_t s, uint32_t luma)
{
	struct drm_vrex_frame_submit f0, f1, f2;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int r;

	if (frame(fd, s, luma, 0, &f0)) {
		report(0, "FRAME_SUBMIT: baseline frame");
		return;
	}
	knob("fail_cmds", 1);
	r = frame(fd, s, luma, DRM_VREX_FRAME_EVENT, &f1);
	report(r == -EIO, "FRAME_SUBMIT: injected command failure -> EIO (got %d)", r);
	report(poll(&pfd, 1, 0) == 0, "FRAME_SUBMIT: no event queued for the failed frame");
	r = frame(fd, s, luma, 0, &f2);
	report(!r && f2.frame == f0.frame + 1,
	       "FRAME_SUBMIT: next frame works and the failed one did not count (%u -> %u)",
	       f0.frame, f2.frame);
}

static void test_insert(int fd, uint32_t s, uint32_t kv, const __u64 fp[2], uint32_t *block)
{
	struct drm_vrex_shie_insert_item it[2];
	struct counts c0 = counts_now(), c1;
	int r;

	it[0] = kv_item(fp, kv, 0, 0);
	it[1] = kv_item(fp, kv, KV_LEN, 1);
	knob("fail_cmds", 1);
	r = batch(fd, DRM_IOCTL_VREX_SHIE_INSERT, s, it, 2, sizeof(it[0]));
	c1 = counts_now();
	report(!r && it[0].result == -EIO && it[1].result == 0,
	       "SHIE_INSERT: injected failure is item 0's result -EIO, item 1 applied (%d, %d, %d)",
	       r, it[0].result, it[1].result);
	report(c1.blocks == c0.blocks + 1 && c1.hw_blocks == c0.hw_blocks + 1 &&
	       c1.entries == c0.entries + 1, "SHIE_INSERT: exactly one block and entry more");
	report(!found(fd, s, 0, it[0].block) && found(fd, s, 1, it[1].block),
	       "SHIE_INSERT: the failed item is not found, the applied one is");
	*block = it[1].block;
}

static void test_lookup(int fd, uint32_t s, uint32_t block)
{
	struct drm_vrex_shie_lookup_item lk = { .kind = DRM_VREX_LOOKUP_TEMPORAL, .region = 1 };
	int r;

	knob("fail_cmds", 1);
	r = batch(fd, DRM_IOCTL_VREX_SHIE_LOOKUP, s, &lk, 1, sizeof(lk));
	report(r == -EIO, "SHIE_LOOKUP: injected command failure -> EIO (got %d)", r);
	report(found(fd, s, 1, block), "SHIE_LOOKUP: the next lookup finds the block");
}

static void test_retire(int fd, uint32_t s, uint32_t block)
{
	struct counts c0 = counts_now(), c1;
	uint32_t ids[1] = { block }, cap;
	int r;

	knob("fail_cmds", 1);
	r = retire(fd, s, ids, 1, &cap);
	c1 = counts_now();
	report(r == -EIO && counts_eq(c0, c1) && found(fd, s, 1, block),
	       "SHIE_RETIRE: failed removal -> EIO, the block stays live and found (got %d)", r);
	knob("fail_cmds", 0);
	r = retire(fd, s, ids, 1, &cap);
	report(!r && cap == 1 && !found(fd, s, 1, block),
	       "SHIE_RETIRE: removal after the failure releases it (got %d, %u records)", r, cap);
	c1 = counts_now();
	report(c1.blocks == c0.blocks - 1 && c1.hw_blocks == c0.hw_blocks - 1 &&
	       c1.entries == c0.entries - 1, "SHIE_RETIRE: block and entry gone on both sides");
}

/* Destroy and close with failing commands: nothing of the stream may stay in the hardware. */
static void test_teardown(uint32_t fails, const char *how)
{
	struct drm_vrex_shie_insert_item it;
	struct drm_vrex_frame_submit f;
	struct counts c0 = counts_now(), c1;
	uint32_t s, luma, kv, ids[64], n = 0;
	int fd = open_node(), r;

	if (fd < 0 || stream_create(fd, &s) || bo_create(fd, BO_SIZE, 1, &luma) ||
	    bo_create(fd, BO_SIZE, 2, &kv)) {
		report(0, "teardown (%s): setup", how);
		return;
	}
	paint(fd, luma);
	it = kv_item((const __u64[2]){ 1, 2 }, kv, 0, 0);
	if (frame(fd, s, luma, 0, &f) ||
	    batch(fd, DRM_IOCTL_VREX_SHIE_INSERT, s, &it, 1, sizeof(it)) || it.result) {
		report(0, "teardown (%s): frame and insert", how);
		close(fd);
		return;
	}
	knob("fail_cmds", fails);
	if (!strcmp(how, "destroy")) {
		r = stream_destroy(fd, s);
		report(!r, "STREAM_DESTROY with %u failing commands: the stream is gone for the caller "
		       "(got %d)", fails, r);
		knob("fail_cmds", 0);
		r = stream_destroy(fd, s);
		report(r == -ENOENT, "STREAM_DESTROY: a second destroy -> ENOENT (got %d)", r);
	}
	close(fd);
	knob("fail_cmds", 0);
	/* Every slot opens again (a stranded one is reclaimed), then all close cleanly. */
	fd = open_node();
	while (fd >= 0 && n < 64 && !stream_create(fd, &ids[n]))
		n++;
	report(n == info.max_streams, "%s with %u failing commands: all %u slots open afterwards "
	       "(got %u)", how, fails, info.max_streams, n);
	if (fd >= 0)
		close(fd);
	c1 = counts_now();
	print_counts("after", c1);
	report(counts_eq(c0, c1), "%s with %u failing commands: no BO, stream, block or SHIE entry "
	       "left", how, fails);
}

/*
 * rmmod while a file holds a stream and a mapped BO must be refused (the
 * fops hold a module reference) and leave everything working.
 */
static void test_rmmod_refused(void)
{
	struct drm_vrex_bo_mmap_offset mo;
	struct drm_vrex_frame_submit f;
	uint32_t s, luma;
	unsigned char *p;
	int fd = open_node(), st;

	if (fd < 0 || stream_create(fd, &s) || bo_create(fd, BO_SIZE, 1, &luma)) {
		report(0, "rmmod: setup");
		return;
	}
	mo = (struct drm_vrex_bo_mmap_offset){ .handle = luma };
	p = xioctl(fd, DRM_IOCTL_VREX_BO_MMAP_OFFSET, &mo) ? MAP_FAILED :
		mmap(NULL, BO_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)mo.offset);
	if (p == MAP_FAILED) {
		report(0, "rmmod: map");
		close(fd);
		return;
	}
	memset(p, 0x33, BO_SIZE);
	st = system("rmmod vrex 2>/dev/null");
	report(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) != 0,
	       "rmmod with a live file, stream and mapping is refused");
	report(p[BO_SIZE - 1] == 0x33 && !frame(fd, s, luma, 0, &f),
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
	struct counts end;
	char path[600];
	int fd;

	fd = open_node();
	if (fd < 0 || xioctl(fd, DRM_IOCTL_VREX_QUERY, &q)) {
		printf("no vrex device\nfault: 0 passed, 1 failed\n");
		return 1;
	}
	find_debugfs(fd);
	snprintf(path, sizeof(path), "%s/fail_cmds", dbg_dir);
	if (!dbg_dir[0] || access(path, W_OK)) {
		printf("fault: no fault injection knobs (CONFIG_DRM_ACCEL_VREX_FAULT_INJECTION off?)\n");
		close(fd);
		return 0;
	}
	print_counts("before", counts_now());

	test_alloc(fd);
	test_stream_open(fd);
	if (stream_create(fd, &s) || bo_create(fd, BO_SIZE, 1, &luma) ||
	    bo_create(fd, BO_SIZE, 2, &kv)) {
		report(0, "setup: stream and BOs");
	} else {
		paint(fd, luma);
		test_frame(fd, s, luma);
		frame(fd, s, luma, 0, &f);
		test_insert(fd, s, kv, f.fp, &block);
		test_lookup(fd, s, block);
		test_retire(fd, s, block);
	}
	close(fd);
	test_teardown(1, "destroy");
	test_teardown(8, "destroy");
	test_teardown(2, "close");
	test_teardown(8, "close");
	test_rmmod_refused();

	knob("fail_alloc", 0);
	knob("fail_cmds", 0);
	end = counts_now();
	print_counts("end", end);
	report(end.bos == 0 && end.streams == 0 && end.blocks == 0 && end.entries == 0 &&
	       end.hw_blocks == 0, "leak check: nothing live after every file closed");
	printf("fault: %d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
