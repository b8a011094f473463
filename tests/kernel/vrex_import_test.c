// SPDX-License-Identifier: MIT
/*
 * PRIME import of foreign dma-bufs (an inference engine's own KV memory), run
 * as root in the QEMU guests. Sources of "engine memory", each used when the
 * guest has it (the line names it):
 *   vrex_sim   a BO of a second simulated vrex device (configfs), exported
 *              with PRIME: a dma-buf of another DRM device (every kernel,
 *              the debug one included, so the attach/map/detach path runs
 *              under KASAN and kmemleak)
 *   udmabuf    a memfd turned into a dma-buf by /dev/udmabuf (6.12 kernels)
 * Per source: the import is a BO in no bank (bank statistics unchanged, the
 * imported_* counters move), KV blocks can point into it and are found by
 * lookups, the FCC and ReSV refuse it, mmap through vrex is refused, the
 * import is never mapped for DMA (vrex_sim: the exporter builds no
 * sg_table), the engine's bytes are never touched, releases drop the import, a failed
 * import leaks nothing, and the live counts return to zero. Plus: self-import
 * returns the same handle, bad and non-dma-buf fds fail. One line per case,
 * then "import: N passed, M failed".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vrex_test_util.h"

#define ENGINE_SIZE 65536u
#define KV_LEN VT_KV_LEN

/* linux/udmabuf.h, kept here: the guest programs build against the host's headers. */
struct vt_udmabuf_create {
	__u32 memfd;
	__u32 flags;
	__u64 offset;
	__u64 size;
};

#define VT_UDMABUF_CREATE _IOW('u', 0x42, struct vt_udmabuf_create)

static const char sim_dir[] = "/sys/kernel/config/vrex_sim/import";

static struct drm_vrex_device_info info;

/* Engine memory: a dma-buf fd and the engine's own mapping of it. */
struct engine {
	const char *source;
	int dmabuf;
	unsigned char *map;
	int sim_fd;	/* vrex_sim: the exporter's device fd */
	int memfd;	/* udmabuf */
};

static int prime_import(int fd, int dmabuf, uint32_t *handle)
{
	struct drm_prime_handle p = { .fd = dmabuf };
	int r = vt_ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &p);

	if (!r)
		*handle = p.handle;
	return r;
}

static int prime_export(int fd, uint32_t handle, int *dmabuf)
{
	struct drm_prime_handle p = { .handle = handle, .flags = DRM_CLOEXEC | DRM_RDWR };
	int r = vt_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p);

	if (!r)
		*dmabuf = p.fd;
	return r;
}

static int bank_info(int fd, struct drm_vrex_bank_info *bi)
{
	struct drm_vrex_query q = { .param = DRM_VREX_QUERY_BANKS, .size = sizeof(*bi),
				    .ptr = (uintptr_t)bi };

	memset(bi, 0, sizeof(*bi));
	return vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q) || q.size != sizeof(*bi) ? -1 : 0;
}

static uint64_t sum64(const __u64 *v, uint32_t n)
{
	uint64_t s = 0;

	while (n--)
		s += v[n];
	return s;
}

static uint64_t sum32(const __u32 *v, uint32_t n)
{
	uint64_t s = 0;

	while (n--)
		s += v[n];
	return s;
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok ? 0 : -1;
}

/* A vrex node other than @first's device, or -1. */
static int open_other_vrex(int first)
{
	static const char *const dirs[][2] = { { "/dev/accel", "accel" }, { "/dev/dri", "renderD" } };
	struct stat a, b;
	char path[300], name[16];
	unsigned int d, i;

	if (fstat(first, &a))
		return -1;
	for (d = 0; d < 2; d++) {
		for (i = 0; i < 256; i++) {
			struct drm_version v = { .name = name, .name_len = sizeof(name) - 1 };
			int fd;

			snprintf(path, sizeof(path), "%s/%s%u", dirs[d][0], dirs[d][1],
				 d ? 128 + i : i);
			fd = open(path, O_RDWR | O_CLOEXEC);
			if (fd < 0)
				continue;
			memset(name, 0, sizeof(name));
			if (!fstat(fd, &b) && b.st_rdev != a.st_rdev &&
			    !vt_ioctl(fd, DRM_IOCTL_VERSION, &v) && !strcmp(name, "vrex"))
				return fd;
			close(fd);
		}
	}
	return -1;
}

static void fill(unsigned char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + seed + (i >> 8));
}

static int intact(const unsigned char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (unsigned char)(i * 31 + seed + (i >> 8)))
			return 0;
	return 1;
}

/* A BO of a second simulated device, exported: foreign to the device under test. */
static int engine_vrex_sim(int fd, struct engine *e)
{
	char path[300];
	uint32_t h;
	int i;

	memset(e, 0, sizeof(*e));
	e->source = "vrex_sim";
	e->dmabuf = e->sim_fd = e->memfd = -1;
	if (mkdir(sim_dir, 0755) && errno != EEXIST)
		return -1;
	snprintf(path, sizeof(path), "%s/enable", sim_dir);
	if (write_file(path, "1"))
		return -1;
	for (i = 0; i < 50 && e->sim_fd < 0; i++) {
		e->sim_fd = open_other_vrex(fd);
		if (e->sim_fd < 0)
			usleep(100000);
	}
	if (e->sim_fd < 0 || vt_bo_create(e->sim_fd, ENGINE_SIZE, 1, DRM_VREX_BO_KV, &h, NULL))
		return -1;
	e->map = vt_bo_map(e->sim_fd, h, ENGINE_SIZE);
	if (!e->map || prime_export(e->sim_fd, h, &e->dmabuf))
		return -1;
	/* The engine keeps the dma-buf and its mapping; its own handle can go. */
	return vt_gem_close(e->sim_fd, h);
}

static int engine_udmabuf(struct engine *e)
{
	struct vt_udmabuf_create c = { .size = ENGINE_SIZE };
	int dev, ret;

	memset(e, 0, sizeof(*e));
	e->source = "udmabuf";
	e->dmabuf = e->sim_fd = e->memfd = -1;
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -1;
	e->memfd = memfd_create("engine-kv", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (e->memfd < 0 || ftruncate(e->memfd, ENGINE_SIZE) ||
	    fcntl(e->memfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		close(dev);
		return -1;
	}
	c.memfd = (__u32)e->memfd;
	ret = ioctl(dev, VT_UDMABUF_CREATE, &c);
	close(dev);
	if (ret < 0)
		return -1;
	e->dmabuf = ret;
	e->map = mmap(NULL, ENGINE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, e->memfd, 0);
	return e->map == MAP_FAILED ? (e->map = NULL, -1) : 0;
}

static void engine_close(struct engine *e)
{
	char path[300];

	if (e->map)
		munmap(e->map, ENGINE_SIZE);
	if (e->dmabuf >= 0)
		close(e->dmabuf);
	if (e->memfd >= 0)
		close(e->memfd);
	if (e->sim_fd >= 0) {
		close(e->sim_fd);
		snprintf(path, sizeof(path), "%s/enable", sim_dir);
		write_file(path, "0");
		rmdir(sim_dir);
	}
}

static void __attribute__((format(printf, 3, 4))) tcase(int ok, const char *tag, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vt_vreport(ok, tag, fmt, ap);
	va_end(ap);
}

#define CASE(e, ok, ...) tcase((ok), (e)->source, __VA_ARGS__)

/* The whole life of one import on device @fd. */
static void test_source(int fd, struct engine *e, uint32_t luma)
{
	struct drm_vrex_bank_info b0, b1;
	struct drm_vrex_shie_insert_item it;
	struct drm_vrex_shie_lookup_item lk = vt_temporal(3, 0);
	struct drm_vrex_released_block rel[4];
	struct drm_vrex_frame_submit f;
	struct drm_vrex_bo_mmap_offset mo = { 0 };
	uint32_t h, h2, stream, cap = 4;
	long live0 = vt_debugfs_count("imported");
	int r;

	fill(e->map, ENGINE_SIZE, 5);
	if (bank_info(fd, &b0)) {
		CASE(e, 0, "QUERY_BANKS");
		return;
	}
	r = prime_import(fd, e->dmabuf, &h);
	CASE(e, !r, "PRIME_FD_TO_HANDLE of the engine's dma-buf (ret %d)", r);
	if (r)
		return;
	if (e->sim_fd >= 0) {
		long maps;

		/*
		 * vrex never reads imported memory: the exporter (the other vrex
		 * device, which counts the sg_tables it builds for importers) must
		 * not have been asked to map it for DMA.
		 */
		vt_debugfs_find(e->sim_fd);
		maps = vt_debugfs_count("export_maps");
		vt_debugfs_find(fd);
		CASE(e, maps == 0, "the import is not mapped for DMA (exporter's export_maps %ld)",
		     maps);
	}
	r = prime_import(fd, e->dmabuf, &h2);
	CASE(e, !r && h2 == h, "a second import of the same dma-buf gives the same handle (%u, %u)",
	     h, h2);
	CASE(e, vt_debugfs_count("imported") == live0 + 1 || live0 < 0,
	     "debugfs counts: one imported BO");
	r = bank_info(fd, &b1);
	CASE(e, !r && b1.imported_bos == b0.imported_bos + 1 &&
		     b1.imported_bytes == b0.imported_bytes + ENGINE_SIZE &&
		     sum64(b1.bo_bytes, b1.bank_count) == sum64(b0.bo_bytes, b0.bank_count),
	     "QUERY_BANKS: imported_bos +1, imported_bytes +%u, no bank's bo_bytes moved", ENGINE_SIZE);

	mo.handle = h;
	r = vt_ioctl(fd, DRM_IOCTL_VREX_BO_MMAP_OFFSET, &mo);
	CASE(e, r == -EOPNOTSUPP, "BO_MMAP_OFFSET of an imported BO: EOPNOTSUPP (got %d)", r);

	if (vt_stream_create(fd, 0, 0, &stream)) {
		CASE(e, 0, "STREAM_CREATE");
		return;
	}
	r = vt_frame_submit(fd, stream, h, 0, 0, NULL);
	CASE(e, r == -EINVAL, "FRAME_SUBMIT from an imported BO: EINVAL (got %d)", r);
	r = vt_frame_submit(fd, stream, luma, 0, 0, &f);
	CASE(e, !r, "FRAME_SUBMIT from a vrex BO still works (ret %d)", r);

	it = vt_kv_item(f.fp, h, ENGINE_SIZE - KV_LEN + 64, 3, 0);
	r = vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_INSERT, stream, &it, 1, sizeof(it));
	CASE(e, r == -EINVAL, "SHIE_INSERT past the imported BO's end: EINVAL (got %d)", r);
	it = vt_kv_item(f.fp, h, UINT64_MAX - 100, 3, 0);
	r = vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_INSERT, stream, &it, 1, sizeof(it));
	CASE(e, r == -EINVAL, "SHIE_INSERT with an overflowing offset: EINVAL (got %d)", r);
	it = vt_kv_item(f.fp, h, KV_LEN, 3, 0);
	r = vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_INSERT, stream, &it, 1, sizeof(it));
	CASE(e, !r && !it.result, "SHIE_INSERT of a block in the imported BO (ret %d, result %d)", r,
	     it.result);
	r = bank_info(fd, &b1);
	CASE(e, !r && b1.imported_kv_blocks == b0.imported_kv_blocks + 1 &&
		     b1.imported_kv_bytes == b0.imported_kv_bytes + KV_LEN &&
		     sum32(b1.kv_blocks, b1.bank_count) == sum32(b0.kv_blocks, b0.bank_count) &&
		     sum64(b1.kv_bytes, b1.bank_count) == sum64(b0.kv_bytes, b0.bank_count),
	     "QUERY_BANKS: the block counts as imported KV, in no bank");

	r = vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_LOOKUP, stream, &lk, 1, sizeof(lk));
	CASE(e, !r && lk.hit_flags == DRM_VREX_HIT && lk.block == it.block && lk.handle == h &&
		     lk.offset == KV_LEN && lk.length == KV_LEN,
	     "LOOKUP finds it: handle %u offset %llu length %llu", lk.handle,
	     (unsigned long long)lk.offset, (unsigned long long)lk.length);

	/* The block keeps the import alive after the handle is closed. */
	r = vt_gem_close(fd, h);
	CASE(e, !r && (vt_debugfs_count("imported") == live0 + 1 || live0 < 0),
	     "GEM_CLOSE of the handle: the block keeps the import (ret %d)", r);
	lk = vt_temporal(3, 0);
	r = vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_LOOKUP, stream, &lk, 1, sizeof(lk));
	CASE(e, !r && lk.hit_flags == DRM_VREX_HIT && lk.handle == 0,
	     "LOOKUP after the close: hit, handle 0 (got %u)", lk.handle);

	r = vt_shie_retire(fd, stream, &it.block, 1, rel, &cap);
	/* As LOOKUP: the closed handle is not named (it may belong to another BO by now). */
	CASE(e, !r && cap == 1 && rel[0].block == it.block && rel[0].handle == 0 &&
		     rel[0].bo_gen == it.bo_gen && it.bo_gen && rel[0].offset == KV_LEN &&
		     rel[0].reason == DRM_VREX_RELEASE_REMOVED,
	     "RETIRE reports the imported block by its generation, handle 0 (%u records)", cap);
	r = bank_info(fd, &b1);
	CASE(e, !r && b1.imported_bos == b0.imported_bos && b1.imported_bytes == b0.imported_bytes &&
		     b1.imported_kv_blocks == b0.imported_kv_blocks &&
		     b1.imported_kv_bytes == b0.imported_kv_bytes &&
		     (vt_debugfs_count("imported") == live0 || live0 < 0),
	     "after the release the import is gone (counters back)");
	CASE(e, intact(e->map, ENGINE_SIZE, 5), "the engine's memory is untouched");

	/* The engine's writes show through the dma-buf the whole time: one buffer. */
	fill(e->map, ENGINE_SIZE, 9);
	CASE(e, intact(e->map, ENGINE_SIZE, 9), "the engine's mapping still writable");

	/* A failed import (injected ENOMEM) leaks nothing and the next one works. */
	if (!vt_debugfs_write_u32("fail_alloc", 1)) {
		r = prime_import(fd, e->dmabuf, &h);
		CASE(e, r == -ENOMEM && (vt_debugfs_count("imported") == live0 || live0 < 0),
		     "an import failing in the driver (fail_alloc): ENOMEM, nothing left (got %d)", r);
		vt_debugfs_write_u32("fail_alloc", 0);
	}

	/* Closing the stream with a live imported block releases it. */
	r = prime_import(fd, e->dmabuf, &h);
	if (!r) {
		it = vt_kv_item(f.fp, h, 0, 4, 0);
		r = vt_shie_batch(fd, DRM_IOCTL_VREX_SHIE_INSERT, stream, &it, 1, sizeof(it));
		r = r ? r : it.result;
		vt_gem_close(fd, h);
	}
	CASE(e, !r, "import and insert again (ret %d)", r);
	r = vt_stream_destroy(fd, stream);
	CASE(e, !r && (vt_debugfs_count("imported") == live0 || live0 < 0) &&
		     !bank_info(fd, &b1) && b1.imported_kv_blocks == b0.imported_kv_blocks,
	     "STREAM_DESTROY with a live imported block drops the import (ret %d)", r);
}

/* Self-import: the dma-buf of a vrex BO of this device is the BO itself. */
static void test_self_import(int fd)
{
	struct drm_vrex_bank_info b0, b1;
	uint32_t h, h2;
	int dmabuf, r;

	if (vt_bo_create(fd, 8192, 1, 0, &h, NULL) || prime_export(fd, h, &dmabuf)) {
		tcase(0, "self", "BO_CREATE + PRIME export");
		return;
	}
	bank_info(fd, &b0);
	r = prime_import(fd, dmabuf, &h2);
	bank_info(fd, &b1);
	tcase(!r && h2 == h && b1.imported_bos == b0.imported_bos, "self",
		  "importing a vrex BO's own dma-buf gives its handle back (%u, %u), no import", h, h2);
	close(dmabuf);
	vt_gem_close(fd, h);
}

static void test_bad_fds(int fd)
{
	int p[2], r;
	uint32_t h;

	r = prime_import(fd, -1, &h);
	tcase(r == -EBADF, "bad fd", "PRIME_FD_TO_HANDLE of fd -1: EBADF (got %d)", r);
	if (pipe(p))
		return;
	r = prime_import(fd, p[0], &h);
	tcase(r == -EINVAL, "bad fd", "PRIME_FD_TO_HANDLE of a pipe: EINVAL (got %d)", r);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	struct drm_vrex_query q = { .param = DRM_VREX_QUERY_DEVICE_INFO, .size = sizeof(info),
				    .ptr = (uintptr_t)&info };
	struct vt_live c0;
	struct engine e;
	unsigned char *p;
	uint32_t luma;
	int fd;

	fd = vt_open_node(NULL, 0);
	if (fd < 0 || vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q) || vt_debugfs_find(fd)) {
		printf("setup failed: %s\nimport: 0 passed, 1 failed\n", strerror(errno));
		return 1;
	}
	c0 = vt_live_now();
	if (vt_bo_create(fd, 65536, 1, DRM_VREX_BO_STAGING, &luma, NULL) ||
	    !(p = vt_bo_map(fd, luma, 65536))) {
		printf("setup failed: luma BO\nimport: 0 passed, 1 failed\n");
		return 1;
	}
	fill(p, 65536, 1);
	munmap(p, 65536);

	if (engine_vrex_sim(fd, &e) == 0)
		test_source(fd, &e, luma);
	else
		tcase(0, "vrex_sim", "a second simulated device exporting a BO: %s",
			  strerror(errno));
	engine_close(&e);

	if (access("/dev/udmabuf", F_OK) == 0) {
		if (engine_udmabuf(&e) == 0)
			test_source(fd, &e, luma);
		else
			tcase(0, "udmabuf", "memfd -> /dev/udmabuf: %s", strerror(errno));
		engine_close(&e);
	} else {
		printf("skip [udmabuf] this kernel has no /dev/udmabuf (CONFIG_UDMABUF)\n");
	}

	test_self_import(fd);
	test_bad_fds(fd);
	vt_gem_close(fd, luma);
	tcase(vt_live_eq(c0, vt_live_now()), NULL, "live counts back to where they started");
	close(fd);
	return vt_finish("import");
}
