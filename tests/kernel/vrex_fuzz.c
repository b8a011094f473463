// SPDX-License-Identifier: MIT
/*
 * In-guest ioctl fuzzer for vrex.ko: several threads share several open files
 * of the vrex node and issue random and mutated ioctls (every vrex id, ids past
 * the table, the DRM core's GEM/PRIME ioctls), with wrong struct sizes and
 * directions in the ioctl number, bad pointers, and arguments biased towards
 * ids the driver handed out (handles, streams, blocks) so deep paths run.
 * mmap/munmap of BOs and dma-bufs, close/reopen of files and the fault
 * injection knobs are interleaved.
 *
 *   vrex_fuzz [SECONDS [MAX_CALLS [SEED]]]     (SECONDS also from VREX_FUZZ_SECONDS)
 *
 * SECONDS is extended (by at most COVERAGE_GRACE_S) until every id has been seen
 * succeeding; MAX_CALLS bounds the run in any case.
 *
 * Cases: no unexpected errno from a vrex ioctl, every vrex ioctl id exercised
 * and seen succeeding, the device usable afterwards (every stream slot opens),
 * and with every file closed debugfs "counts" shows no BO, stream, block or
 * SHIE entry. The guest's init checks dmesg (WARN/BUG/Oops) and rmmod.
 * With VREX_FUZZ_PEERS=N and VREX_FUZZ_BARRIER=FILE (scripts/qemu/fuzz-peers.sh),
 * N copies fuzz the device at once; each waits for all of them before the
 * end-of-run checks, which run one copy at a time.
 * Ends with "fuzz: N passed, M failed".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vrex_test_util.h"

#define NFILES 3
#define NTHREADS 4
#define MAX_HANDLES 24
#define MAX_STREAMS 16
#define MAX_BLOCKS 64
#define MAX_MAPS 6
#define MAX_ITEMS 64
#define NIDS (DRM_VREX_RESERVED_10 + 1)
/* The ReSV ids (11..15, fuzz_resv_ioctl()); "past the table" starts after them. */
#define FIRST_PAST (DRM_VREX_RESV_TRUNCATE + 1)
#define MAX_HEADS 8
/* Buckets of the per-id table: the vrex ids, "past the table", DRM core ioctls, the ReSV ids. */
#define ID_PAST NIDS
#define ID_CORE (NIDS + 1)
#define ID_RESV (NIDS + 2)
#define NBUCKETS (NIDS + 3)
#define NERR 140

static const char *const id_names[NBUCKETS] = {
	"QUERY", "BO_CREATE", "BO_MMAP_OFFSET", "STREAM_CREATE", "STREAM_DESTROY",
	"FRAME_SUBMIT", "SHIE_INSERT", "SHIE_LOOKUP", "SHIE_RETIRE", "STATS", "RESERVED_10",
	"(past table)", "(drm core)", "(resv)",
};

struct file_slot {
	pthread_mutex_t lock;
	int fd;
	uint32_t handles[MAX_HANDLES];
	uint64_t sizes[MAX_HANDLES];
	unsigned int nhandles;
	uint32_t streams[MAX_STREAMS];
	unsigned int nstreams;
	uint32_t blocks[MAX_BLOCKS];
	unsigned int nblocks;
	uint32_t heads[MAX_HEADS];
	unsigned int nheads;
};

struct mapping {
	void *p;
	size_t len;
};

struct worker {
	pthread_t thread;
	unsigned int id;
	uint64_t rng;
	struct mapping maps[MAX_MAPS];
	unsigned int nmaps;
	/*
	 * Batch items: room for DRM_VREX_MAX_BATCH elements of up to ITEM_ROOM
	 * bytes, because the kernel writes back count x elem_size bytes and a
	 * mutated header may ask for that much.
	 */
	unsigned char *items;
	struct drm_vrex_released_block released[1024];
	uint32_t remove[MAX_ITEMS];
};

#define ITEM_ROOM 128
#define ITEMS_BYTES ((size_t)DRM_VREX_MAX_BATCH * ITEM_ROOM)

static struct file_slot slots[NFILES];
static struct drm_vrex_device_info info;
static char node_path[300];
static volatile int stop;
static uint64_t max_calls;
static time_t deadline;

/* Statistics; updated with atomics, read after the threads are joined. */
static uint64_t calls[NBUCKETS], oks[NBUCKETS], errs[NBUCKETS][NERR];
static uint64_t total_calls, n_maps, n_reopens, n_faults, n_unexpected, n_mmap_long, n_mmap_priv;
static int faults_armed;
static void *guard;	/* a PROT_NONE page: pointers into it fault */


static uint64_t rnd(struct worker *w)
{
	/* xorshift64*: deterministic per seed and thread */
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return w->rng * 0x2545f4914f6cdd1dull;
}

static uint32_t below(struct worker *w, uint32_t n)
{
	return n ? (uint32_t)(rnd(w) % n) : 0;
}

static int chance(struct worker *w, unsigned int one_in)
{
	return below(w, one_in) == 0;
}

/* A value that tends to sit on a boundary of some rule. */
static uint64_t interesting(struct worker *w)
{
	static const uint64_t v[] = {
		0, 1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 63, 64, 65, 255, 4095, 4096, 4097,
		16384, 65535, 65536, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff,
		0x100000000ull, 0x7fffffffffffffffull, 0xfffffffffffff000ull, ~0ull,
	};

	return chance(w, 3) ? rnd(w) : v[below(w, sizeof(v) / sizeof(v[0]))];
}

static void bump(uint64_t *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

/* ---- the files ------------------------------------------------------------ */

/* The first open finds the node; reopens (threads closing and reopening files) reuse its path. */
static int open_node(void)
{
	if (node_path[0])
		return open(node_path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	return vt_open_node(node_path, sizeof(node_path));
}

/* ---- what the threads know about a file --------------------------------------------- */

struct snap {
	struct file_slot *slot;
	int fd;
	uint32_t handle;	/* a known BO handle, or a made-up one */
	uint64_t size;		/* its size (guess when made up) */
	uint32_t handle2;
	uint32_t stream;
	uint32_t block;
};

static void take_snap(struct worker *w, struct snap *s)
{
	struct file_slot *f = &slots[below(w, NFILES)];
	unsigned int i;

	pthread_mutex_lock(&f->lock);
	s->slot = f;
	s->fd = f->fd;
	s->handle = below(w, 40);
	s->size = 65536;
	if (f->nhandles && !chance(w, 8)) {
		i = below(w, f->nhandles);
		s->handle = f->handles[i];
		s->size = f->sizes[i];
	}
	s->handle2 = f->nhandles ? f->handles[below(w, f->nhandles)] : below(w, 40);
	s->stream = f->nstreams && !chance(w, 8) ? f->streams[below(w, f->nstreams)] : below(w, 40);
	s->block = f->nblocks && !chance(w, 6) ? f->blocks[below(w, f->nblocks)] :
						 (uint32_t)interesting(w);
	pthread_mutex_unlock(&f->lock);
}

/* Remembers an id only while the file it came from is still the slot's file. */
static void learn(struct snap *s, uint32_t *arr, unsigned int *n, unsigned int cap, uint32_t id,
		  uint64_t *sizes, uint64_t size)
{
	struct file_slot *f = s->slot;
	unsigned int i;

	pthread_mutex_lock(&f->lock);
	if (f->fd == s->fd) {
		i = *n < cap ? (*n)++ : (unsigned int)(id % cap);
		arr[i] = id;
		if (sizes)
			sizes[i] = size;
	}
	pthread_mutex_unlock(&f->lock);
}

static void forget(struct snap *s, uint32_t *arr, unsigned int *n, uint32_t id, uint64_t *sizes)
{
	struct file_slot *f = s->slot;
	unsigned int i;

	pthread_mutex_lock(&f->lock);
	for (i = 0; f->fd == s->fd && i < *n; i++) {
		if (arr[i] != id)
			continue;
		(*n)--;
		arr[i] = arr[*n];
		if (sizes)
			sizes[i] = sizes[*n];
		break;
	}
	pthread_mutex_unlock(&f->lock);
}

/* ---- argument builders (valid first, then mutated) --------------------------------------- */

static uint32_t fp_word(struct worker *w)
{
	return chance(w, 2) ? 0x5a5a0000u + below(w, 16) : (uint32_t)rnd(w);
}

static void fill_insert(struct worker *w, struct snap *s, struct drm_vrex_shie_insert_item *it)
{
	memset(it, 0, sizeof(*it));
	it->fp[0] = ((uint64_t)fp_word(w) << 32) | fp_word(w);
	it->fp[1] = fp_word(w);
	it->region = below(w, DRM_VREX_REGIONS);
	it->frame_offset = (int32_t)below(w, 6) + DRM_VREX_OFFSET_MIN;
	if (chance(w, 4)) {
		it->flags = DRM_VREX_INSERT_ALIAS;
		it->block = s->block;
		return;
	}
	it->handle = s->handle;
	it->length = 16384;
	it->offset = s->size > 16384 ? (below(w, (uint32_t)(s->size / 16384))) * 16384ull : 0;
}

static void fill_lookup(struct worker *w, struct drm_vrex_shie_lookup_item *it)
{
	memset(it, 0, sizeof(*it));
	it->region = below(w, DRM_VREX_REGIONS);
	if (chance(w, 2)) {
		it->kind = DRM_VREX_LOOKUP_TEMPORAL;
		it->frame_offset = (int32_t)below(w, 6) + DRM_VREX_OFFSET_MIN;
	} else {
		it->kind = DRM_VREX_LOOKUP_SIMILAR;
		it->fp[0] = ((uint64_t)fp_word(w) << 32) | fp_word(w);
		it->fp[1] = fp_word(w);
		it->radius = below(w, DRM_VREX_MAX_RADIUS + 1);
		it->flags = below(w, DRM_VREX_LOOKUP_VALID_FLAGS + 1);
		/* 1.6: candidates, nearest first; half the lookups ask for some. */
		if (chance(w, 2))
			it->max_candidates = below(w, DRM_VREX_LOOKUP_MAX_CANDIDATES + 1);
	}
}

/* Random damage to @len bytes at @p: bit flips, or a field overwritten with a boundary value. */
static void mutate(struct worker *w, void *p, size_t len)
{
	unsigned char *b = p;
	unsigned int n = 1 + below(w, 3), i;
	uint64_t v;
	size_t at;

	for (i = 0; i < n && len >= 4; i++) {
		at = below(w, (uint32_t)(len / 4)) * 4;
		switch (below(w, 3)) {
		case 0:
			b[below(w, (uint32_t)len)] ^= 1u << below(w, 8);
			break;
		case 1:
			v = interesting(w);
			memcpy(b + at, &v, 4);
			break;
		default:
			v = interesting(w);
			if (at + 8 <= len)
				memcpy(b + at, &v, 8);
			break;
		}
	}
}

/* A user pointer: usually @good, sometimes NULL, a low address or the guard page. */
static uint64_t user_ptr(struct worker *w, void *good, size_t len)
{
	switch (below(w, 24)) {
	case 0:
		return 0;
	case 1:
		return 16;
	case 2:
		/*
		 * The tail of the array runs into the PROT_NONE page; at most the
		 * one writable page before it (ours, scratch only) is written.
		 */
		return (uintptr_t)guard - (len > 8 ? (len / 2 < 2048 ? len / 2 : 2048) : 8);
	case 3:
		return 0xffff800000000000ull;
	default:
		return (uintptr_t)good;
	}
}

/* ---- one ioctl ---------------------------------------------------------------------------- */

static int known_errno(int id, int err)
{
	switch (err) {
	case 0:
	case EINVAL:
	case ENOENT:
	case ENOSPC:
	case EFAULT:
	case EBUSY:
	case EOPNOTSUPP:
	case ENOMEM:
		return 1;
	case EIO:
	case ETIMEDOUT:
		return __atomic_load_n(&faults_armed, __ATOMIC_RELAXED);
	case ESTALE:	/* a ReSV head emptied by a reset (after an injected hang) */
		return id == ID_RESV && __atomic_load_n(&faults_armed, __ATOMIC_RELAXED);
	case E2BIG:	/* a larger batch element with a non-zero tail, or too large */
		return id == DRM_VREX_SHIE_INSERT || id == DRM_VREX_SHIE_LOOKUP ||
		       id == DRM_VREX_SHIE_RETIRE || id == ID_RESV;
	default:
		return 0;
	}
}

/*
 * Another thread closed the snapshot's file: its number may now be free
 * (EBADF) or name a dma-buf or debugfs file (ENOTTY). Only then are those
 * errnos expected.
 */
static int fd_replaced(struct snap *s)
{
	int fd;

	pthread_mutex_lock(&s->slot->lock);
	fd = s->slot->fd;
	pthread_mutex_unlock(&s->slot->lock);
	return fd != s->fd;
}

static void count_result_of(int bucket, int r, struct snap *s)
{
	int raced = s && (r == EBADF || r == ENOTTY) && fd_replaced(s);

	bump(&calls[bucket]);
	bump(&total_calls);
	if (!r)
		bump(&oks[bucket]);
	bump(&errs[bucket][r < NERR ? r : NERR - 1]);
	if ((bucket < NIDS || bucket == ID_RESV) && !raced && !known_errno(bucket, r)) {
		if (__atomic_fetch_add(&n_unexpected, 1, __ATOMIC_RELAXED) < 10)
			printf("unexpected: %s -> %s\n", id_names[bucket], strerror(r));
	}
}

static void count_result(int bucket, int r)
{
	count_result_of(bucket, r, NULL);
}

static int do_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? errno : 0;
}

/* Bit of the 8-byte word of @type that holds the user pointer @field (for cmd_for()). */
#define PTR_WORD(type, field) (1u << (offsetof(type, field) / 8))

/*
 * The ioctl number for @id with the real size, or (sometimes) a wrong size or
 * direction. The DRM core zero-fills the argument past a short size, so a size
 * ending inside a user pointer would leave the pointer's low bytes only: an
 * address the fuzzer never chose, e.g. a thread's stack address cut to 3 bytes
 * lands in the fuzzer's own .bss, and the kernel's copy-out then overwrote
 * slots[] there. A short size is therefore moved to the start of a pointer it
 * would cut (the pointer reads as NULL); @ptr_words has bit i set when bytes
 * 8i..8i+7 of the struct are a user pointer.
 */
static unsigned long cmd_for(struct worker *w, unsigned long real, unsigned int ptr_words,
			     int *resized)
{
	unsigned int size = _IOC_SIZE(real), dir = _IOC_DIR(real);

	*resized = 0;
	if (!chance(w, 10))
		return real;
	*resized = 1;
	if (chance(w, 3)) {
		dir = below(w, 4);
	} else if (chance(w, 2)) {
		size = below(w, size + 1);
		if (size % 8 && size / 8 < 32 && (ptr_words >> (size / 8)) & 1)
			size &= ~7u;
	} else {
		size += 8 * (1 + below(w, 16));
	}
	return _IOC(dir, _IOC_TYPE(real), _IOC_NR(real), size & _IOC_SIZEMASK);
}

static const unsigned long vrex_cmds[NIDS] = {
	DRM_IOCTL_VREX_QUERY, DRM_IOCTL_VREX_BO_CREATE, DRM_IOCTL_VREX_BO_MMAP_OFFSET,
	DRM_IOCTL_VREX_STREAM_CREATE, DRM_IOCTL_VREX_STREAM_DESTROY, DRM_IOCTL_VREX_FRAME_SUBMIT,
	DRM_IOCTL_VREX_SHIE_INSERT, DRM_IOCTL_VREX_SHIE_LOOKUP, DRM_IOCTL_VREX_SHIE_RETIRE,
	DRM_IOCTL_VREX_STATS, VT_IOCTL_RESERVED_10,
};

/* The user pointers in each id's argument (cmd_for()). */
static const unsigned int ptr_words[NIDS] = {
	[DRM_VREX_QUERY] = PTR_WORD(struct drm_vrex_query, ptr),
	[DRM_VREX_SHIE_INSERT] = PTR_WORD(struct drm_vrex_shie_batch, items),
	[DRM_VREX_SHIE_LOOKUP] = PTR_WORD(struct drm_vrex_shie_batch, items),
	[DRM_VREX_SHIE_RETIRE] = PTR_WORD(struct drm_vrex_shie_retire, remove) |
				 PTR_WORD(struct drm_vrex_shie_retire, released),
	[DRM_VREX_STATS] = PTR_WORD(struct drm_vrex_stats_query, ptr),
};

/*
 * The kernel writes through the pointers in the arguments, so after mutation
 * they are put back to what user_ptr() chose, and a buffer the (possibly
 * mutated) sizes would overrun is swapped for the guard page: the fuzzer
 * must not corrupt its own memory.
 */
static uint64_t safe_extent(uint64_t ptr, uint64_t bytes, void *buf, size_t room)
{
	if (ptr == (uintptr_t)buf && bytes > room)
		return (uintptr_t)guard;
	return ptr;
}

static void fuzz_vrex_ioctl(struct worker *w)
{
	/* Room for any struct plus the oversize the ioctl number may claim. */
	union {
		struct drm_vrex_query q;
		struct drm_vrex_bo_create bo;
		struct drm_vrex_bo_mmap_offset mo;
		struct drm_vrex_stream_create sc;
		struct drm_vrex_stream_destroy sd;
		struct drm_vrex_frame_submit fs;
		struct drm_vrex_shie_batch b;
		struct drm_vrex_shie_retire rt;
		struct drm_vrex_stats_query st;
		__u64 rr;
		unsigned char raw[512];
	} a;
	unsigned char out[sizeof(struct drm_vrex_bank_info) + 64];
	int id = (int)below(w, NIDS), resized, r, mutated = chance(w, 3);
	uint32_t n, i, esz;
	uint64_t ptr = 0, ptr2 = 0;
	unsigned long cmd;
	struct snap s;

	take_snap(w, &s);
	memset(&a, 0, sizeof(a));
	switch (id) {
	case DRM_VREX_QUERY:
		a.q.param = below(w, 3);
		a.q.size = chance(w, 2) ? sizeof(out) : below(w, sizeof(out));
		a.q.ptr = chance(w, 4) ? 0 : user_ptr(w, out, a.q.size);
		break;
	case DRM_VREX_BO_CREATE:
		a.bo.size = chance(w, 2) ? 65536 : 4096ull * (1 + below(w, 64));
		a.bo.bank_mask = 1ull << below(w, info.bank_count);
		if (chance(w, 3))
			a.bo.bank_mask = (1ull << info.bank_count) - 1;
		a.bo.flags = below(w, DRM_VREX_BO_VALID_FLAGS + 1);
		break;
	case DRM_VREX_BO_MMAP_OFFSET:
		a.mo.handle = s.handle;
		break;
	case DRM_VREX_STREAM_CREATE:
		if (chance(w, 2)) {
			a.sc.flags = DRM_VREX_STREAM_POOLED;
			a.sc.pool = below(w, 4);
		}
		break;
	case DRM_VREX_STREAM_DESTROY:
		a.sd.stream = s.stream;
		break;
	case DRM_VREX_FRAME_SUBMIT:
		a.fs.stream = s.stream;
		a.fs.handle = s.handle;
		a.fs.width = 64 + below(w, 96);
		a.fs.height = 64 + below(w, 64);
		a.fs.stride = a.fs.width + below(w, 3) * 16;
		a.fs.flags = below(w, 2) ? DRM_VREX_FRAME_EVENT : 0;
		a.fs.user_data = rnd(w);
		break;
	case DRM_VREX_SHIE_INSERT:
	case DRM_VREX_SHIE_LOOKUP:
		n = 1 + below(w, chance(w, 4) ? MAX_ITEMS : 4);
		esz = id == DRM_VREX_SHIE_INSERT ? sizeof(struct drm_vrex_shie_insert_item) :
						   sizeof(struct drm_vrex_shie_lookup_item);
		if (chance(w, 6))
			esz += 8 * below(w, 4);
		memset(w->items, 0, (size_t)n * esz);
		for (i = 0; i < n; i++) {
			void *it = w->items + (size_t)i * esz;

			if (id == DRM_VREX_SHIE_INSERT)
				fill_insert(w, &s, it);
			else
				fill_lookup(w, it);
			if (mutated && chance(w, 4))
				mutate(w, it, esz);
		}
		a.b.stream = s.stream;
		a.b.count = n;
		a.b.elem_size = esz;
		a.b.items = user_ptr(w, w->items, (size_t)n * esz);
		break;
	case DRM_VREX_SHIE_RETIRE:
		n = chance(w, 2) ? 0 : 1 + below(w, 4);
		for (i = 0; i < n; i++) {
			struct snap t;

			/* mostly ids of this file; sometimes another file's */
			take_snap(w, &t);
			w->remove[i] = i == 0 || t.slot == s.slot ? s.block : t.block;
		}
		a.rt.stream = s.stream;
		a.rt.remove_count = n;
		a.rt.remove = user_ptr(w, w->remove, n * 4);
		a.rt.released_cap = chance(w, 8) ? below(w, 4) : 1024;
		a.rt.elem_size = sizeof(w->released[0]);
		a.rt.released = user_ptr(w, w->released, sizeof(w->released));
		break;
	case DRM_VREX_STATS:
		a.st.size = chance(w, 2) ? sizeof(struct drm_vrex_stats) : below(w, 200);
		if (a.st.size > sizeof(out))
			a.st.size = sizeof(out);
		a.st.ptr = chance(w, 4) ? 0 : user_ptr(w, out, a.st.size);
		break;
	case DRM_VREX_RESERVED_10:
		a.rr = chance(w, 2) ? below(w, 0x400) & ~3u : (uint64_t)interesting(w);
		break;
	}
	switch (id) {
	case DRM_VREX_QUERY:
		ptr = a.q.ptr;
		break;
	case DRM_VREX_STATS:
		ptr = a.st.ptr;
		break;
	case DRM_VREX_SHIE_INSERT:
	case DRM_VREX_SHIE_LOOKUP:
		ptr = a.b.items;
		break;
	case DRM_VREX_SHIE_RETIRE:
		ptr = a.rt.remove;
		ptr2 = a.rt.released;
		break;
	}
	if (mutated)
		mutate(w, &a, _IOC_SIZE(vrex_cmds[id]));
	switch (id) {
	case DRM_VREX_QUERY:
		a.q.ptr = safe_extent(ptr, a.q.size, out, sizeof(out));
		break;
	case DRM_VREX_STATS:
		a.st.ptr = safe_extent(ptr, a.st.size, out, sizeof(out));
		break;
	case DRM_VREX_SHIE_INSERT:
	case DRM_VREX_SHIE_LOOKUP:
		a.b.items = safe_extent(ptr, (uint64_t)a.b.count * a.b.elem_size, w->items,
					ITEMS_BYTES);
		break;
	case DRM_VREX_SHIE_RETIRE:
		a.rt.remove = ptr;
		a.rt.released = safe_extent(ptr2, (uint64_t)a.rt.released_cap * a.rt.elem_size,
					    w->released, sizeof(w->released));
		break;
	}
	cmd = cmd_for(w, vrex_cmds[id], ptr_words[id], &resized);
	r = do_ioctl(s.fd, cmd, chance(w, 60) ? (void *)user_ptr(w, &a, sizeof(a)) : &a);
	count_result_of(id, r, &s);
	if (r || resized)
		return;
	/* Learn what the driver handed out, and forget what it took back. */
	switch (id) {
	case DRM_VREX_BO_CREATE:
		learn(&s, s.slot->handles, &s.slot->nhandles, MAX_HANDLES, a.bo.handle,
		      s.slot->sizes, (a.bo.size + 4095) & ~4095ull);
		break;
	case DRM_VREX_STREAM_CREATE:
		learn(&s, s.slot->streams, &s.slot->nstreams, MAX_STREAMS, a.sc.stream, NULL, 0);
		break;
	case DRM_VREX_STREAM_DESTROY:
		forget(&s, s.slot->streams, &s.slot->nstreams, a.sd.stream, NULL);
		break;
	case DRM_VREX_SHIE_INSERT:
		for (i = 0; i < a.b.count && a.b.items == (uintptr_t)w->items; i++) {
			struct drm_vrex_shie_insert_item *it =
				(void *)(w->items + (size_t)i * a.b.elem_size);

			if (!it->result && !(it->flags & DRM_VREX_INSERT_ALIAS))
				learn(&s, s.slot->blocks, &s.slot->nblocks, MAX_BLOCKS, it->block,
				      NULL, 0);
		}
		break;
	case DRM_VREX_SHIE_RETIRE:
		for (i = 0; i < a.rt.released_cap && a.rt.released == (uintptr_t)w->released &&
			    i < 1024 && a.rt.elem_size == sizeof(w->released[0]); i++)
			forget(&s, s.slot->blocks, &s.slot->nblocks, w->released[i].block, NULL);
		break;
	}
}

/*
 * ReSV: head create/destroy, hash, select batches and truncate on the file's
 * heads (sometimes another file's or a made-up id), keys and queries in the
 * file's BOs at random offsets, sizes and element sizes sometimes wrong,
 * arguments sometimes mutated. Results go to the "(resv)" bucket.
 */
static void fuzz_resv_ioctl(struct worker *w)
{
	union {
		struct drm_vrex_resv_head_create hc;
		struct drm_vrex_resv_head_destroy hd;
		struct drm_vrex_resv_hash h;
		struct drm_vrex_resv_batch b;
		struct drm_vrex_resv_truncate t;
		unsigned char raw[256];
	} a;
	static const unsigned long cmds[] = {
		DRM_IOCTL_VREX_RESV_HEAD_CREATE, DRM_IOCTL_VREX_RESV_HEAD_DESTROY,
		DRM_IOCTL_VREX_RESV_HASH, DRM_IOCTL_VREX_RESV_SELECT, DRM_IOCTL_VREX_RESV_TRUNCATE,
	};
	unsigned int op = below(w, 5), resized, d;
	uint32_t head, n, i, esz;
	uint64_t ptr = 0;
	struct snap s;
	int r;

	take_snap(w, &s);
	pthread_mutex_lock(&s.slot->lock);
	head = s.slot->nheads && !chance(w, 8) ? s.slot->heads[below(w, s.slot->nheads)] :
						 below(w, 20);
	pthread_mutex_unlock(&s.slot->lock);
	memset(&a, 0, sizeof(a));
	switch (op) {
	case 0:
		a.hc.params.seed = rnd(w);
		a.hc.params.dim = 1 + below(w, chance(w, 4) ? 300 : 64);
		a.hc.params.th = below(w, 34);
		a.hc.params.ratio = chance(w, 2) ? below(w, 65538) : 19661;
		a.hc.params.mode = below(w, 3);
		a.hc.params.tokens_per_block = below(w, 20);
		a.hc.params.bytes_per_token = (uint32_t)rnd(w);
		for (d = 0; d < DRM_VREX_RESV_LUT_SIZE; d++)
			a.hc.params.lut[d] = (__u16)rnd(w);
		break;
	case 1:
		a.hd.head = head;
		break;
	case 2:
		a.h.head = head;
		a.h.count = chance(w, 8) ? (uint32_t)interesting(w) : 1 + below(w, 64);
		a.h.handle = s.handle;
		a.h.offset = chance(w, 8) ? interesting(w) : 2 * below(w, 1024);
		break;
	case 3:
		n = 1 + below(w, chance(w, 4) ? MAX_ITEMS : 4);
		esz = sizeof(struct drm_vrex_resv_select_item);
		if (chance(w, 6))
			esz = chance(w, 2) ? esz + 8 * below(w, 4) : 4 + 4 * below(w, esz / 4);
		memset(w->items, 0, (size_t)n * esz);
		for (i = 0; i < n; i++) {
			struct drm_vrex_resv_select_item *it = (void *)(w->items + (size_t)i * esz);
			struct drm_vrex_resv_select_item tmp = {
				.head = head,
				.flags = below(w, 2),
				.query_handle = s.handle,
				.out_handle = chance(w, 2) ? s.handle : s.handle2,
				.query_offset = 2 * below(w, 2048),
				.out_offset = 4 * below(w, 2048),
				.max_ranges = chance(w, 4) ? 0 : below(w, 512),
			};

			memcpy(it, &tmp, esz < sizeof(tmp) ? esz : sizeof(tmp));
			if (chance(w, 8))
				mutate(w, it, esz);
		}
		a.b.count = n;
		a.b.elem_size = esz;
		a.b.items = ptr = user_ptr(w, w->items, (size_t)n * esz);
		break;
	default:
		a.t.head = head;
		a.t.keep = chance(w, 2) ? below(w, 64) : (uint32_t)interesting(w);
		break;
	}
	if (chance(w, 3))
		mutate(w, &a, _IOC_SIZE(cmds[op]));
	if (op == 3)
		a.b.items = safe_extent(ptr, (uint64_t)a.b.count * a.b.elem_size, w->items,
					ITEMS_BYTES);
	r = do_ioctl(s.fd, cmd_for(w, cmds[op],
				   op == 3 ? PTR_WORD(struct drm_vrex_resv_batch, items) : 0,
				   (int *)&resized), &a);
	count_result_of(ID_RESV, r, &s);
	if (r || resized)
		return;
	if (op == 0)
		learn(&s, s.slot->heads, &s.slot->nheads, MAX_HEADS, a.hc.head, NULL, 0);
	else if (op == 1)
		forget(&s, s.slot->heads, &s.slot->nheads, a.hd.head, NULL);
}

/* Ids past the driver's table, and the DRM core's GEM/PRIME ioctls on our handles. */
static void fuzz_other_ioctl(struct worker *w)
{
	struct drm_prime_handle ph;
	struct drm_gem_close gc;
	unsigned char raw[64];
	struct snap s;
	void *p;
	int r;

	take_snap(w, &s);
	switch (below(w, 4)) {
	case 0:
		memset(raw, 0, sizeof(raw));
		mutate(w, raw, sizeof(raw));
		r = do_ioctl(s.fd, _IOC(below(w, 4), DRM_IOCTL_BASE,
					DRM_COMMAND_BASE + FIRST_PAST + below(w, 0x60 - FIRST_PAST),
					below(w, sizeof(raw))), raw);
		count_result(ID_PAST, r);
		if (!r)
			printf("unexpected: ioctl past the table succeeded\n");
		break;
	case 1:
		gc = (struct drm_gem_close){ .handle = s.handle };
		r = do_ioctl(s.fd, DRM_IOCTL_GEM_CLOSE, &gc);
		count_result(ID_CORE, r);
		if (!r)
			forget(&s, s.slot->handles, &s.slot->nhandles, s.handle, s.slot->sizes);
		break;
	default:
		/* dma-buf export, sometimes mapped, sometimes imported into another file */
		ph = (struct drm_prime_handle){ .handle = s.handle, .flags = DRM_CLOEXEC | DRM_RDWR };
		r = do_ioctl(s.fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph);
		count_result(ID_CORE, r);
		if (r)
			break;
		if (chance(w, 2)) {
			p = mmap(NULL, s.size, PROT_READ | PROT_WRITE, MAP_SHARED, ph.fd, 0);
			if (p != MAP_FAILED) {
				((volatile unsigned char *)p)[s.size - 1] ^= 1;
				munmap(p, s.size);
			}
		} else {
			struct snap t;

			take_snap(w, &t);
			ph.handle = 0;
			r = do_ioctl(t.fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &ph);
			count_result(ID_CORE, r);
			if (!r)
				learn(&t, t.slot->handles, &t.slot->nhandles, MAX_HANDLES, ph.handle,
				      t.slot->sizes, s.size);
		}
		close(ph.fd);
		break;
	}
}

/* Maps a BO (sometimes too long or private: must be refused), touches it, keeps or drops it. */
static void fuzz_mmap(struct worker *w)
{
	struct drm_vrex_bo_mmap_offset mo;
	struct snap s;
	size_t len;
	void *p;
	int priv;

	if (w->nmaps && (w->nmaps == MAX_MAPS || chance(w, 2))) {
		w->nmaps--;
		munmap(w->maps[w->nmaps].p, w->maps[w->nmaps].len);
		return;
	}
	take_snap(w, &s);
	mo = (struct drm_vrex_bo_mmap_offset){ .handle = s.handle };
	if (do_ioctl(s.fd, DRM_IOCTL_VREX_BO_MMAP_OFFSET, &mo))
		return;
	len = s.size;
	priv = chance(w, 10);
	if (chance(w, 10))
		len += 4096;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, priv ? MAP_PRIVATE : MAP_SHARED, s.fd,
		 (off_t)mo.offset);
	if (p == MAP_FAILED)
		return;
	bump(&n_maps);
	/* Private mappings of device memory must always be refused. */
	if (priv)
		bump(&n_mmap_priv);
	/* The handle may have been reused for a bigger BO meanwhile: only counted. */
	if (len > s.size)
		bump(&n_mmap_long);
	((volatile unsigned char *)p)[0] ^= 0xff;
	((volatile unsigned char *)p)[len - 1] ^= 0xff;
	w->maps[w->nmaps].p = p;
	w->maps[w->nmaps].len = len;
	w->nmaps++;
}

/* Closes a file (its streams, blocks and BOs go with it) and opens a new one in its place. */
static void fuzz_reopen(struct worker *w)
{
	struct file_slot *f = &slots[below(w, NFILES)];
	int old, fd = open_node();

	if (fd < 0)
		return;
	pthread_mutex_lock(&f->lock);
	old = f->fd;
	f->fd = fd;
	f->nhandles = 0;
	f->nstreams = 0;
	f->nblocks = 0;
	f->nheads = 0;
	pthread_mutex_unlock(&f->lock);
	close(old);
	bump(&n_reopens);
}

static void fuzz_events(struct worker *w)
{
	struct pollfd pfd;
	char buf[256];
	struct snap s;

	take_snap(w, &s);
	pfd = (struct pollfd){ .fd = s.fd, .events = POLLIN };
	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN))
		if (read(s.fd, buf, chance(w, 4) ? below(w, 64) : sizeof(buf)) < 0)
			return;
}

static void fuzz_fault(struct worker *w)
{
	if (!vt_debugfs_dir()[0])
		return;
	__atomic_store_n(&faults_armed, 1, __ATOMIC_RELAXED);
	if (!vt_debugfs_write_u32(chance(w, 2) ? "fail_alloc" : "fail_cmds", 1))
		bump(&n_faults);
}

/*
 * Every id seen called and (but the retired one) succeeding: a case below. On
 * a slow guest (a KASAN kernel under TCG makes ~120 calls/s) a few seconds can
 * end before the rarest id succeeded once, so the run goes on past SECONDS until
 * it has, up to COVERAGE_GRACE_S more: the case then fails only when the
 * coverage is not reached in a generous bound, not when the machine is slow.
 */
#define COVERAGE_GRACE_S 60

static int coverage_reached(void)
{
	int i;

	for (i = 0; i < NIDS; i++)
		if (!__atomic_load_n(&calls[i], __ATOMIC_RELAXED) ||
		    (i != DRM_VREX_RESERVED_10 && !__atomic_load_n(&oks[i], __ATOMIC_RELAXED)))
			return 0;
	return 1;
}

static int time_up(void)
{
	time_t now;

	if (stop || (max_calls && __atomic_load_n(&total_calls, __ATOMIC_RELAXED) >= max_calls))
		return 1;
	now = time(NULL);
	return now >= deadline + COVERAGE_GRACE_S || (now >= deadline && coverage_reached());
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint32_t op;

	while (!time_up()) {
		op = below(w, 1000);
		if (op < 800)
			fuzz_vrex_ioctl(w);
		else if (op < 860)
			fuzz_other_ioctl(w);
		else if (op < 900)
			fuzz_resv_ioctl(w);
		else if (op < 960)
			fuzz_mmap(w);
		else if (op < 985)
			fuzz_events(w);
		else if (op < 997)
			fuzz_reopen(w);
		else
			fuzz_fault(w);
	}
	while (w->nmaps) {
		w->nmaps--;
		munmap(w->maps[w->nmaps].p, w->maps[w->nmaps].len);
	}
	return NULL;
}

/* After the run: a fresh file still gets every stream slot and a working frame path. */
static int device_usable(void)
{
	struct drm_vrex_stream_create sc;
	struct drm_vrex_bo_create bo = { .size = 65536, .bank_mask = 1, .flags = DRM_VREX_BO_STAGING };
	struct drm_vrex_frame_submit fs;
	uint32_t n = 0, first = 0;
	int fd = open_node(), ok;

	if (fd < 0)
		return 0;
	for (;;) {
		sc = (struct drm_vrex_stream_create){ 0 };
		if (ioctl(fd, DRM_IOCTL_VREX_STREAM_CREATE, &sc))
			break;
		if (!n++)
			first = sc.stream;
	}
	ok = errno == EBUSY && n == info.max_streams;
	printf("usable: %u of %u stream slots opened\n", n, info.max_streams);
	if (ok && !ioctl(fd, DRM_IOCTL_VREX_BO_CREATE, &bo)) {
		fs = (struct drm_vrex_frame_submit){ .stream = first, .handle = bo.handle, .width = 128,
						     .height = 96, .stride = 128 };
		ok = !ioctl(fd, DRM_IOCTL_VREX_FRAME_SUBMIT, &fs);
	} else {
		ok = 0;
	}
	close(fd);
	return ok;
}

static void print_table(double secs)
{
	unsigned int b, e, covered = 0;
	char line[512];
	int len;

	printf("fuzz: %llu calls in %.1f s (%.0f/s), %llu mappings (%llu private, %llu longer than "
	       "the BO first seen), %llu reopens, %llu injected faults\n",
	       (unsigned long long)total_calls, secs, secs > 0 ? total_calls / secs : 0.0,
	       (unsigned long long)n_maps, (unsigned long long)n_mmap_priv,
	       (unsigned long long)n_mmap_long,
	       (unsigned long long)n_reopens, (unsigned long long)n_faults);
	for (b = 0; b < NBUCKETS; b++) {
		len = snprintf(line, sizeof(line), "fuzz: %-15s calls %7llu ok %7llu", id_names[b],
			       (unsigned long long)calls[b], (unsigned long long)oks[b]);
		for (e = 1; e < NERR && len < (int)sizeof(line) - 32; e++)
			if (errs[b][e])
				len += snprintf(line + len, sizeof(line) - len, " %s %llu",
						strerrorname_np(e) ? strerrorname_np(e) : "?",
						(unsigned long long)errs[b][e]);
		puts(line);
		if (b < NIDS && calls[b])
			covered++;
	}
	printf("fuzz: ioctl id coverage %u/%u\n", covered, NIDS);
}

/*
 * Concurrent copies: announce that this one's files are closed (a byte
 * appended to the barrier file), wait for every copy, then hold the file's
 * lock over the checks so the device is idle and seen by one copy at a time.
 * Returns the barrier's fd, or -1 when running alone.
 */
static int peers_barrier(void)
{
	const char *path = getenv("VREX_FUZZ_BARRIER");
	const char *env = getenv("VREX_FUZZ_PEERS");
	long peers = env ? strtol(env, NULL, 0) : 1;
	struct stat st;
	int fd, waited;

	if (peers <= 1 || !path)
		return -1;
	fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, "x", 1) != 1) {
		printf("fuzz: barrier %s: %s\n", path, strerror(errno));
		exit(1);
	}
	for (waited = 0; !fstat(fd, &st) && st.st_size < peers; waited++) {
		if (waited > 60000) {	/* 10 minutes: a peer died */
			printf("fuzz: %ld of %ld peers reached the barrier\n", (long)st.st_size, peers);
			break;
		}
		usleep(10000);
	}
	flock(fd, LOCK_EX);
	return fd;
}

int main(int argc, char **argv)
{
	static struct worker workers[NTHREADS];
	const char *env = getenv("VREX_FUZZ_SECONDS");
	struct drm_vrex_query q;
	struct timespec t0, t1;
	unsigned long seconds = env ? strtoul(env, NULL, 0) : 3;
	uint64_t seed;
	unsigned int i;
	int fd, barrier;

	if (argc > 1)
		seconds = strtoul(argv[1], NULL, 0);
	/*
	 * The fault knobs are device-wide: a concurrent copy's injected command
	 * fault can fail one of this copy's commands before this copy armed any.
	 */
	env = getenv("VREX_FUZZ_PEERS");
	if (env && strtol(env, NULL, 0) > 1)
		faults_armed = 1;
	max_calls = argc > 2 ? strtoull(argv[2], NULL, 0) : 0;
	seed = argc > 3 ? strtoull(argv[3], NULL, 0) : (uint64_t)time(NULL);
	printf("fuzz: %lu s, max %llu calls, seed %llu, %d threads, %d files\n", seconds,
	       (unsigned long long)max_calls, (unsigned long long)seed, NTHREADS, NFILES);

	fd = open_node();
	if (fd < 0) {
		printf("no vrex device node\nfuzz: 0 passed, 1 failed\n");
		return 1;
	}
	q = (struct drm_vrex_query){ .param = DRM_VREX_QUERY_DEVICE_INFO, .size = sizeof(info),
				     .ptr = (uintptr_t)&info };
	if (ioctl(fd, DRM_IOCTL_VREX_QUERY, &q) || !info.bank_count || info.bank_count > 64) {
		printf("query failed\nfuzz: 0 passed, 1 failed\n");
		return 1;
	}
	vt_debugfs_find(fd);
	close(fd);
	printf("fuzz: node %s, debugfs %s\n", node_path,
	       vt_debugfs_dir()[0] ? vt_debugfs_dir() : "(none)");
	guard = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guard == MAP_FAILED || mprotect((char *)guard + 4096, 4096, PROT_NONE)) {
		printf("guard page\nfuzz: 0 passed, 1 failed\n");
		return 1;
	}
	guard = (char *)guard + 4096;

	for (i = 0; i < NFILES; i++) {
		pthread_mutex_init(&slots[i].lock, NULL);
		slots[i].fd = open_node();
		if (slots[i].fd < 0) {
			printf("open\nfuzz: 0 passed, 1 failed\n");
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	deadline = time(NULL) + (time_t)seconds;
	for (i = 0; i < NTHREADS; i++) {
		workers[i].items = mmap(NULL, ITEMS_BYTES, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (workers[i].items == MAP_FAILED) {
			printf("items\nfuzz: 0 passed, 1 failed\n");
			return 1;
		}
	}
	for (i = 0; i < NTHREADS; i++) {
		workers[i].id = i;
		workers[i].rng = (seed + 1) * 0x9e3779b97f4a7c15ull + i;
		if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i])) {
			stop = 1;
			printf("pthread_create failed\n");
			break;
		}
	}
	while (i--)
		pthread_join(workers[i].thread, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (i = 0; i < NFILES; i++)
		close(slots[i].fd);
	barrier = peers_barrier();
	if (vt_debugfs_dir()[0]) {
		vt_debugfs_write_u32("fail_alloc", 0);
		vt_debugfs_write_u32("fail_cmds", 0);
	}

	print_table((double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	vt_report(total_calls > 0, "calls executed, none crashed the process");
	vt_report(n_unexpected == 0, "every vrex ioctl failed only with a documented errno");
	vt_report(n_mmap_priv == 0, "no MAP_PRIVATE mapping of a BO was allowed");
	vt_report(coverage_reached() && !oks[DRM_VREX_RESERVED_10], "every vrex ioctl id called, seen succeeding (the retired id 10 never)");
	vt_report(device_usable(), "device usable after the run (all stream slots, BO, frame)");
	if (vt_debugfs_dir()[0]) {
		struct vt_live live = vt_live_now();

		vt_live_print("fuzz: live after close", live);
		vt_report(live.bos == 0 && live.streams == 0 && live.blocks == 0,
			  "no BO, stream or block left after every file closed");
		vt_report(live.entries == 0 && live.hw_blocks == 0,
			  "no SHIE entry or hardware block left after every file closed");
	} else {
		printf("fuzz: no debugfs: leak check skipped\n");
	}
	if (barrier >= 0)
		close(barrier);	/* drops the lock: the next copy checks */
	return vt_finish("fuzz");
}
