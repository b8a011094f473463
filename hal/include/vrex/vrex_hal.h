/* SPDX-License-Identifier: MIT */
/*
 * libvrex-hal C ABI: the KV-block allocator for C engines and ctypes. Opaque handles, status codes,
 * plain structs; no exception ever crosses this boundary. Threading as in the C++ API: devices and
 * allocators are thread-safe, a stream is used by one thread at a time. docs/hal.md has the details.
 */
#ifndef VREX_HAL_H
#define VREX_HAL_H

#include <stddef.h>
#include <stdint.h>

#include "vrex/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared up to the matching pop is exported (VREX_API for the whole C ABI). */
#pragma GCC visibility push(default)

/* Version of this header; vrex_hal_version() is the library's. The same major means a compatible
 * ABI (new functions and struct tails only; a minor bump adds them); any break bumps the major, and
 * with it the SONAME (libvrex-hal.so.<major>) and the CMake package version (find_package(vrex
 * <major>.<minor>)). docs/hal.md "ABI policy". */
#define VREX_HAL_VERSION_MAJOR 1
#define VREX_HAL_VERSION_MINOR 3
#define VREX_HAL_VERSION_PATCH 0
#define VREX_HAL_VERSION_ENCODE(major, minor, patch) (((major) << 16) | ((minor) << 8) | (patch))
#define VREX_HAL_VERSION \
	VREX_HAL_VERSION_ENCODE(VREX_HAL_VERSION_MAJOR, VREX_HAL_VERSION_MINOR, VREX_HAL_VERSION_PATCH)

/* VREX_HAL_VERSION of the library the program runs with. */
uint32_t vrex_hal_version(void);

typedef enum vrex_hal_status {
	VREX_HAL_OK = 0,
	VREX_HAL_ERR_INVALID = -1,	/* EINVAL: bad argument */
	VREX_HAL_ERR_NOENT = -2,	/* ENOENT: unknown stream, block or buffer */
	VREX_HAL_ERR_NOSPC = -3,	/* ENOSPC: device memory, table or stream slots exhausted */
	VREX_HAL_ERR_RANGE = -4,	/* ERANGE: offset before frame 0, range past a buffer */
	VREX_HAL_ERR_EXIST = -5,	/* EEXIST: (frame, region) already has a block */
	VREX_HAL_ERR_BUSY = -6,		/* EBUSY: frame already open, buffer in use */
	VREX_HAL_ERR_NOMEM = -7,	/* host memory */
	VREX_HAL_ERR_DEVICE_LOST = -8,	/* device removed/reset: reopen */
	VREX_HAL_ERR_NO_DEVICE = -9,	/* kernel backend requested, no vrex device */
	VREX_HAL_ERR_UNKNOWN_BACKEND = -10,
	VREX_HAL_ERR_BAD_GEOMETRY = -11,	/* geometry refused: the last error names the field and range */
	VREX_HAL_ERR_NOT_IN_FRAME = -12,	/* needs vrex_hal_begin_frame() first */
	VREX_HAL_ERR_IO = -13,		/* any other device or system error */
	VREX_HAL_ERR_STALE = -14,	/* block handle of a released (possibly recycled) block */
	VREX_HAL_ERR_PERM = -15,	/* EPERM: the stream does not own the block */
} vrex_hal_status;

/* Static English description of a status. */
const char *vrex_hal_strerror(vrex_hal_status status);

/*
 * Error messages with context. Every failing call records a message naming what failed and where,
 * e.g. "vrex_hal_allocate: allocate (stream 1, frame 12): block for frame 12, region 3: bank group
 * (banks 4..5) full and no device memory left for a slab of 1048576 bytes: No space left on device".
 * vrex_hal_last_error(): the last failure of any vrex_hal_* call on the calling thread (thread-local;
 * covers calls that have no handle yet, such as vrex_hal_device_open).
 * vrex_hal_stream_last_error(): the last failure of a call on @stream. A stream is used by one
 * thread at a time, so read it on the thread that made the call.
 * Both are "" until a call fails; a successful call does not clear them (like errno). The string
 * stays valid until the next failing call on the same thread / stream (or the stream's destruction).
 */
const char *vrex_hal_last_error(void);

typedef struct vrex_hal_device vrex_hal_device;
typedef struct vrex_hal_allocator vrex_hal_allocator;
typedef struct vrex_hal_stream vrex_hal_stream;

/* @backend: "auto" or NULL (VREX_BACKEND, else kernel if present, else emulated), "kernel", "emulated". */
vrex_hal_status vrex_hal_device_open(const char *backend, vrex_hal_device **out);

/*
 * Device options, size-prefixed: struct_size = sizeof(struct vrex_hal_device_options) (at least 8;
 * unknown trailing bytes of a newer caller must be zero). Zeroed fields are the defaults. The emu_*
 * fields size the emulated device (ignored by the kernel backend, whose geometry is the device's):
 * banks x bank_size bytes of address space, backed only where KV is written. Out of range:
 * VREX_HAL_ERR_INVALID, the last error naming the field and its valid range.
 */
struct vrex_hal_device_options {
	uint32_t struct_size;
	uint32_t flags;			/* 0 */
	const char *node;		/* kernel: "/dev/accel/accel0"; NULL = the first vrex device */
	uint64_t emu_bank_size;		/* bytes per bank, a multiple of 4096 in 64 KiB..64 GiB; 0: 4 MiB */
	uint32_t emu_banks;		/* 1..64; 0: 16 */
	uint32_t emu_group_banks;	/* banks per bank group, divides emu_banks; 0: 2 (1 for odd emu_banks) */
	uint32_t emu_zombie_frames;	/* 1..255; 0: 5 */
	uint32_t pad;			/* 0 */
};
/* Emulated banks x bank size is at most this (address space the emulation reserves). */
#define VREX_HAL_EMU_MAX_BYTES (1ull << 40)

/* vrex_hal_device_open() with options (NULL = defaults). */
vrex_hal_status vrex_hal_device_open_with(const char *backend, const struct vrex_hal_device_options *options,
					  vrex_hal_device **out);
void vrex_hal_device_close(vrex_hal_device *dev);
/* "kernel" or "emulated"; valid while @dev is open. */
const char *vrex_hal_device_backend(const vrex_hal_device *dev);

/* Element types of the KV (vrex stores bytes; the type fixes the element size and tells engines
 * sharing blocks how to read them). FP8: OCP 8-bit floats, E4M3 (bias 7, no inf) and E5M2. */
enum vrex_hal_dtype {
	VREX_HAL_FP16 = 0,
	VREX_HAL_BF16 = 1,
	VREX_HAL_FP32 = 2,
	VREX_HAL_INT8 = 3,
	VREX_HAL_FP8_E4M3 = 4,
	VREX_HAL_FP8_E5M2 = 5,
};

/*
 * Quantisation scales stored in every block, after its KV (int8 and fp8 dtypes only): one fp32
 * (host order) per (layer, K/V) for PER_LAYER, per (layer, K/V, kv_head) for PER_HEAD, per
 * (layer, K/V, kv_head, token) for PER_TOKEN. The scales are part of the block: they are shared,
 * reused, copied by copy-on-write and exported with it. vrex_hal_geometry_layout() says where.
 */
enum vrex_hal_scale_layout {
	VREX_HAL_SCALES_NONE = 0,
	VREX_HAL_SCALES_PER_LAYER = 1,
	VREX_HAL_SCALES_PER_HEAD = 2,
	VREX_HAL_SCALES_PER_TOKEN = 3,
};

struct vrex_hal_geometry {
	uint32_t layers;
	uint32_t kv_heads;
	uint32_t head_dim;
	uint32_t dtype;		/* enum vrex_hal_dtype */
	uint32_t tokens_per_block;
	uint32_t scales;	/* enum vrex_hal_scale_layout (was pad, zero: none) */
};

/*
 * Where things are in a block of @geom (size-prefixed out struct: struct_size = sizeof, at least
 * 8; a larger struct gets its unknown bytes zeroed). KV element (l, kv, h, t, d) is at
 * ((((l * 2 + kv) * H + h) * T + t) * D + d) * element_size; scale i at scales_offset + 4 * i with
 * i = (l * 2 + kv) for PER_LAYER, ((l * 2 + kv) * H + h) for PER_HEAD, (((l * 2 + kv) * H + h) * T
 * + t) for PER_TOKEN. VREX_HAL_ERR_BAD_GEOMETRY (the last error names the field and its valid range)
 * for a geometry vrex_hal_allocator_create() would refuse.
 */
struct vrex_hal_block_layout {
	uint32_t struct_size;
	uint32_t element_size;		/* bytes of one KV element */
	uint64_t block_bytes;		/* the whole block: KV, then scales, padded to 64 */
	uint64_t kv_bytes;		/* 2 * L * H * T * D * element_size, at offset 0 */
	uint64_t scales_offset;		/* = kv_bytes */
	uint64_t scales_bytes;		/* 4 * scale_count (0 without scales) */
	uint32_t scale_count;
	uint32_t pad;
};
vrex_hal_status vrex_hal_geometry_layout(const struct vrex_hal_geometry *geom,
					 struct vrex_hal_block_layout *layout);

/* The allocator keeps @dev alive; close both in any order. */
vrex_hal_status vrex_hal_allocator_create(vrex_hal_device *dev, const struct vrex_hal_geometry *geom,
					  vrex_hal_allocator **out);
/*
 * Allocator options, size-prefixed: set struct_size = sizeof(struct vrex_hal_allocator_options).
 * A smaller struct (older header) is accepted, missing fields take their defaults; a larger one
 * (newer header) is accepted only when the bytes this library does not know are all zero, else
 * VREX_HAL_ERR_INVALID. Zeroed fields are the defaults.
 */
struct vrex_hal_allocator_options {
	uint32_t struct_size;
	uint32_t blocks_per_slab;	/* 0: 16, or as many as fit a bank */
	uint32_t spare_slabs;		/* empty slabs kept; ignored unless flags has SPARE_SLABS */
	uint32_t flags;			/* VREX_HAL_ALLOC_* */
};
#define VREX_HAL_ALLOC_EVICT_UNDER_PRESSURE (1u << 0)	/* zombies, then LRU, instead of NOSPC */
#define VREX_HAL_ALLOC_SPARE_SLABS (1u << 1)		/* spare_slabs is set (default 1) */
/* Block stride rounded up to the page size, so every block.offset is page-aligned and
 * mmap(dma-buf fd, block.offset) maps exactly one block; vrex_hal_allocator_block_bytes() and
 * block.size are then the stride (the tail past the layout's block_bytes is padding). Without it a
 * block is page-aligned only when block_bytes is a page multiple (every real model geometry). */
#define VREX_HAL_ALLOC_PAGE_ALIGNED (1u << 2)

/* vrex_hal_allocator_create() with options (NULL = defaults). */
vrex_hal_status vrex_hal_allocator_create_with(vrex_hal_device *dev, const struct vrex_hal_geometry *geom,
					       const struct vrex_hal_allocator_options *options,
					       vrex_hal_allocator **out);
void vrex_hal_allocator_destroy(vrex_hal_allocator *alloc);
uint64_t vrex_hal_allocator_block_bytes(const vrex_hal_allocator *alloc);

vrex_hal_status vrex_hal_stream_create(vrex_hal_allocator *alloc, int pooled, uint32_t pool,
				       vrex_hal_stream **out);
void vrex_hal_stream_destroy(vrex_hal_stream *stream);
uint32_t vrex_hal_stream_id(const vrex_hal_stream *stream);
const char *vrex_hal_stream_last_error(const vrex_hal_stream *stream);

#define VREX_HAL_FRAME_OPENED_GROUP (1u << 0)
#define VREX_HAL_FRAME_CONFLICT (1u << 1)

struct vrex_hal_frame_info {
	uint64_t fp[2];
	uint32_t frame;
	uint32_t group;
	uint32_t bank_first;
	uint32_t bank_count;
	uint32_t flags;		/* VREX_HAL_FRAME_* */
	uint32_t pad;
};

/* Block handle: (id, generation). A handle whose block was released gets VREX_HAL_ERR_STALE. */
#define VREX_HAL_BLOCK_SHARED (1u << 0)	/* another stream owns or references it: read-only */
#define VREX_HAL_BLOCK_SEGMENT (1u << 1)	/* a segment's block (vrex_hal_segment_*, 0.4) */

struct vrex_hal_block {
	void *data;		/* host view of size bytes; writable unless flags has BLOCK_SHARED */
	uint64_t size;
	uint64_t offset;	/* in the buffer @handle (dma-buf export) */
	uint32_t id;
	uint32_t bank;
	uint32_t handle;
	uint32_t frame;
	uint32_t region;
	uint32_t generation;	/* incarnation of @id; 0 is never valid */
	uint32_t flags;		/* VREX_HAL_BLOCK_* */
	uint32_t first_token;	/* position metadata (vrex_hal_set_positions), 0 until set */
	uint32_t token_count;
	uint32_t pad;
};

struct vrex_hal_retrieval {
	uint32_t hit;
	uint32_t approximate;
	uint32_t distance;
	uint32_t frame;
	uint32_t stream;
	uint32_t pad;
	uint64_t fp[2];
	struct vrex_hal_block block;	/* valid when hit */
};

vrex_hal_status vrex_hal_begin_frame(vrex_hal_stream *stream, const uint8_t *luma, uint32_t width,
				     uint32_t height, uint32_t stride, struct vrex_hal_frame_info *info);
/*
 * The FCC's region motion of the open frame (ABI 1.2): @motion[16] gets, per SHIE region (the 4x4
 * grid, region r at row r / 4, column r % 4), the mean motion-vector length the FCC's search found
 * against the stream's previous frame, in 1/16 px of its working grid: 0 iff nothing in the region
 * moved, at most 90; VREX_HAL_REGION_MOTION_UNKNOWN in every region when the device does not report
 * it (a kernel before uAPI 1.5). VREX_HAL_ERR_NOT_IN_FRAME without an open frame.
 */
#define VREX_HAL_REGIONS 16
#define VREX_HAL_REGION_MOTION_UNKNOWN 255
vrex_hal_status vrex_hal_frame_region_motion(vrex_hal_stream *stream, uint8_t *motion);
vrex_hal_status vrex_hal_allocate(vrex_hal_stream *stream, uint32_t region, int32_t frame_offset,
				  struct vrex_hal_block *block);
vrex_hal_status vrex_hal_reuse(vrex_hal_stream *stream, uint32_t region, const struct vrex_hal_block *block,
			       int32_t frame_offset);
vrex_hal_status vrex_hal_retrieve_temporal(vrex_hal_stream *stream, uint32_t region, int32_t frame_offset,
					   struct vrex_hal_retrieval *out);

#define VREX_HAL_SCOPE_POOL (1u << 0)
#define VREX_HAL_PAST_ONLY (1u << 1)
#define VREX_HAL_TIER_DEVICE (1u << 2)	/* ABI 1.3: entries of device blocks only */
#define VREX_HAL_TIER_HOST (1u << 3)	/* ABI 1.3: host-tier entries only (neither bit: every tier) */
vrex_hal_status vrex_hal_retrieve_similar(vrex_hal_stream *stream, uint32_t region, const uint64_t fp[2],
					  uint32_t radius, uint32_t flags, struct vrex_hal_retrieval *out);
/*
 * ABI 1.3 (C++: Query::candidates): up to @max (1..VREX_HAL_MAX_CANDIDATES) entries within
 * @radius, nearest first (smallest distance, then the most recent frame), of the tiers @flags
 * names (VREX_HAL_TIER_*; also VREX_HAL_SCOPE_POOL, VREX_HAL_PAST_ONLY): written to out[0..*count),
 * each a hit, host_tier 1 for a host-tier entry. *count 0: nothing within the radius.
 */
#define VREX_HAL_MAX_CANDIDATES 8u
struct vrex_hal_candidate {
	struct vrex_hal_retrieval retrieval;
	uint32_t host_tier;
	uint32_t pad;
};
vrex_hal_status vrex_hal_retrieve_candidates(vrex_hal_stream *stream, uint32_t region, const uint64_t fp[2],
					     uint32_t radius, uint32_t flags, uint32_t max,
					     struct vrex_hal_candidate *out, uint32_t *count);
vrex_hal_status vrex_hal_release(vrex_hal_stream *stream, const struct vrex_hal_block *block);
/*
 * Batches, all or nothing (like the C++ Stream::allocate_batch / release_batch): on failure nothing
 * was allocated / released and the status and last error name the first item that failed.
 * Size-prefixed: struct_size = sizeof(struct vrex_hal_batch); block_size = sizeof(struct
 * vrex_hal_block) (the stride of @blocks, so the block struct can grow). Unknown trailing bytes of a
 * newer caller's struct must be zero; flags must be 0.
 */
struct vrex_hal_batch {
	uint32_t struct_size;
	uint32_t block_size;
	uint32_t count;			/* entries of @regions / @blocks */
	int32_t frame_offset;		/* allocate: relative to the open frame */
	uint32_t flags;			/* 0 */
	uint32_t pad;			/* 0 */
	const uint32_t *regions;	/* allocate: @count regions */
	struct vrex_hal_block *blocks;	/* allocate: out, @count blocks; release: in */
};
vrex_hal_status vrex_hal_allocate_batch(vrex_hal_stream *stream, const struct vrex_hal_batch *batch);
vrex_hal_status vrex_hal_release_batch(vrex_hal_stream *stream, const struct vrex_hal_batch *batch);

/* Ends the frame; *released (may be NULL) gets the number of blocks released since the previous
 * end_frame (vrex_hal_released_blocks() lists them). */
vrex_hal_status vrex_hal_end_frame(vrex_hal_stream *stream, uint32_t *released);

enum vrex_hal_release_reason {
	VREX_HAL_RELEASE_ZOMBIE = 1,	/* aged out (zombie_frames) */
	VREX_HAL_RELEASE_REMOVED = 2,	/* vrex_hal_release() */
	VREX_HAL_RELEASE_PRESSURE = 3,	/* evicted to make room */
};

struct vrex_hal_released {
	uint32_t id;
	uint32_t generation;
	uint32_t reason;	/* enum vrex_hal_release_reason */
	uint32_t bank;
	uint32_t memory_freed;	/* 0: another stream still references the memory */
	uint32_t pad;
};

/* The blocks the last vrex_hal_end_frame() reported: *count gets their number, the first
 * min(capacity, *count) are written to @out. */
vrex_hal_status vrex_hal_released_blocks(const vrex_hal_stream *stream, struct vrex_hal_released *out,
					 uint32_t capacity, uint32_t *count);

/* Called on the stream's thread for every batch of releases (end_frame, pressure eviction); NULL
 * removes it. */
typedef void (*vrex_hal_release_fn)(void *user, const struct vrex_hal_released *blocks, uint32_t count);
vrex_hal_status vrex_hal_stream_on_release(vrex_hal_stream *stream, vrex_hal_release_fn fn, void *user);
/* An eventfd owned by the stream; its counter grows by the number of blocks released. */
vrex_hal_status vrex_hal_stream_release_fd(vrex_hal_stream *stream, int *fd);

/* Position metadata of a block this stream owns (returned by every later retrieval). */
vrex_hal_status vrex_hal_set_positions(vrex_hal_stream *stream, const struct vrex_hal_block *block,
				       uint32_t first_token, uint32_t token_count);
/* Keep a block's memory alive (and exempt from pressure eviction) until unpinned. */
vrex_hal_status vrex_hal_pin(vrex_hal_stream *stream, const struct vrex_hal_block *block);
vrex_hal_status vrex_hal_unpin(vrex_hal_stream *stream, const struct vrex_hal_block *block);
/* A writable block with @block's contents (itself when this stream is its sole owner). */
vrex_hal_status vrex_hal_copy_on_write(vrex_hal_stream *stream, const struct vrex_hal_block *block,
				       uint32_t region, int32_t frame_offset, struct vrex_hal_block *out);
/* The caller owns *fd; the block is at block->offset in it. */
vrex_hal_status vrex_hal_export_dmabuf(vrex_hal_stream *stream, const struct vrex_hal_block *block, int *fd);

#define VREX_HAL_MAX_BANKS 64

/*
 * Allocator counters, size-prefixed: set struct_size = sizeof(struct vrex_hal_stats) (at least 8).
 * The library fills its own struct and copies min(struct_size, its size) bytes: an older caller's
 * smaller struct gets the fields it knows; a newer caller's larger one has the bytes this library
 * does not know zeroed, and struct_size set to the bytes written (so the caller sees which fields
 * are valid). New fields are only ever appended.
 */
struct vrex_hal_stats {
	uint32_t struct_size;		/* in: the caller's sizeof; out: bytes written */
	uint32_t bank_count;		/* entries of the bank arrays that are valid */
	uint64_t hits;
	uint64_t approx_hits;
	uint64_t misses;
	uint64_t evictions;		/* zombies released at end_frame */
	uint64_t pressure_evictions;	/* evicted to make room (VREX_HAL_ALLOC_EVICT_UNDER_PRESSURE) */
	uint64_t deferred_frees;	/* released blocks whose memory another reference kept */
	uint64_t removed;
	uint64_t allocations;
	uint64_t fallback_allocations;
	uint64_t resident_blocks;
	uint64_t resident_bytes;
	uint64_t slabs;			/* slab BOs held now */
	uint64_t slab_bytes;		/* device memory they hold */
	uint64_t slabs_created;		/* since the allocator was made */
	uint64_t slabs_released;
	uint64_t bank_resident_blocks[VREX_HAL_MAX_BANKS];
	uint64_t bank_resident_bytes[VREX_HAL_MAX_BANKS];
	uint64_t bank_slab_bytes[VREX_HAL_MAX_BANKS];
};

vrex_hal_status vrex_hal_get_stats(vrex_hal_allocator *alloc, struct vrex_hal_stats *stats);

/*
 * Engine-owned KV memory (C++: vrex/imported_memory.hpp, docs/hal.md "Imported memory"). The
 * engine exports its KV buffer as a dma-buf; vrex imports it (the fd stays the caller's) and
 * indexes blocks at offsets inside it. vrex never frees, reuses or writes that memory: releases
 * of such blocks report memory_freed = 0 and bank VREX_HAL_BANK_NONE. The import lives while the
 * vrex_hal_imported handle or any block indexed into it does.
 */
typedef struct vrex_hal_imported vrex_hal_imported;
#define VREX_HAL_BANK_NONE 0xffffffffu	/* bank of engine-owned (imported) memory: no device bank */

/* VREX_HAL_ERR_INVALID: not a dma-buf (the emulation takes any mmap-able fd of whole pages), or
 * vrex memory of this device; VREX_HAL_ERR_IO (EBADF) for a bad fd. */
vrex_hal_status vrex_hal_import_memory(vrex_hal_allocator *alloc, int dmabuf_fd, vrex_hal_imported **out);
/* Blocks indexed into the memory stay valid until released; the import goes with the last. */
void vrex_hal_imported_destroy(vrex_hal_imported *mem);

/* Size-prefixed: struct_size = sizeof(struct vrex_hal_imported_info); a smaller struct gets the
 * fields it has room for (at least struct_size 4), a larger one has its unknown bytes zeroed. */
struct vrex_hal_imported_info {
	uint32_t struct_size;
	uint32_t handle;	/* GEM handle: vrex_hal_block.handle of its blocks */
	uint64_t size;		/* bytes of the buffer */
	void *data;		/* vrex's read/write mapping of it */
	uint32_t blocks;	/* blocks indexed into it that vrex still tracks */
	uint32_t pad;
};
vrex_hal_status vrex_hal_imported_get_info(const vrex_hal_imported *mem, struct vrex_hal_imported_info *info);

/*
 * Indexes the block at @offset (a multiple of 64, the block inside the buffer) of @mem for
 * (open frame + frame_offset, region) under the frame's fingerprint. Size-prefixed:
 * struct_size = sizeof(struct vrex_hal_index_request), block_size = sizeof(struct vrex_hal_block)
 * (bytes of @block a newer library does not know are zeroed); unknown trailing request bytes must
 * be zero, flags 0.
 */
struct vrex_hal_index_request {
	uint32_t struct_size;
	uint32_t block_size;
	uint64_t offset;
	uint32_t region;
	int32_t frame_offset;
	uint32_t flags;		/* 0 */
	uint32_t pad;		/* 0 */
};
vrex_hal_status vrex_hal_index_imported(vrex_hal_stream *stream, const vrex_hal_imported *mem,
					const struct vrex_hal_index_request *req, struct vrex_hal_block *block);

/*
 * The host tier (C++: Stream::index_host_tier): indexes the block at @offset of @mem -- the copy
 * of a block demoted to host memory -- for (frame, region) under @fp, frame any frame of the
 * stream up to the open one. The device never ages it; the block indexed at @offset before by this
 * stream is retired first (slot reuse), so @mem bounds the tier. VREX_HAL_ERR_INVALID for a bad
 * offset or frame, another allocator's memory, a vrex.ko before uAPI 1.4; VREX_HAL_ERR_BUSY when
 * another kind of block sits at @offset. Size-prefixed like vrex_hal_index_request; flags 0.
 */
struct vrex_hal_host_tier_request {
	uint32_t struct_size;
	uint32_t block_size;
	uint64_t offset;
	uint64_t fp[2];
	uint32_t region;
	uint32_t frame;
	uint32_t flags;		/* 0 */
	uint32_t pad;		/* 0 */
};
vrex_hal_status vrex_hal_index_host_tier(vrex_hal_stream *stream, const vrex_hal_imported *mem,
					 const struct vrex_hal_host_tier_request *req,
					 struct vrex_hal_block *block);

/* ---- ReSV: key hashing and WiCSum selection (docs/hw/resv.md, C++: vrex/resv.hpp) -------------- */

/*
 * One (layer, attention head) of one sequence on the device: keys are appended (hashed and
 * clustered by the device), a query selects the tokens to attend to as merged ranges. A head keeps
 * its device alive; it is used by one thread at a time. Without a ReSV unit on the device
 * vrex_hal_resv_head_create() returns VREX_HAL_ERR_NO_DEVICE.
 */
typedef struct vrex_hal_resv_head vrex_hal_resv_head;

enum vrex_hal_resv_mode { VREX_HAL_RESV_MASS = 0, VREX_HAL_RESV_TOKENS = 1 };
#define VREX_HAL_RESV_LUT_SIZE 33

/*
 * Size-prefixed like vrex_hal_allocator_options: start from vrex_hal_resv_default_params(), which
 * sets struct_size. A smaller struct (older header) takes defaults for the missing fields; a larger
 * one needs its unknown bytes zero, else VREX_HAL_ERR_INVALID.
 */
struct vrex_hal_resv_params {
	uint32_t struct_size;
	uint32_t dim;			/* values per key and query, 1..256 */
	uint64_t seed;			/* of the hyperplanes */
	double ratio;			/* WiCSum ratio, 0..1 */
	uint32_t th;			/* clustering radius (Hamming), 0..32 */
	uint32_t mode;			/* enum vrex_hal_resv_mode */
	uint32_t tokens_per_block;	/* block ranges: token t is in block t / tokens_per_block */
	uint32_t bytes_per_token;	/* 0: fp16 K and V, 4 * dim (statistics only) */
	uint32_t max_batch;		/* keys per device command (larger appends are split); 0: 1024 */
	uint32_t has_lut;		/* 0: the device's default weights */
	uint16_t lut[VREX_HAL_RESV_LUT_SIZE];	/* MASS weight per Hamming distance, with has_lut */
	uint16_t pad[3];		/* must be zero */
};

struct vrex_hal_resv_range {
	uint32_t first;
	uint32_t count;
};

struct vrex_hal_resv_selection {
	uint32_t ranges;	/* ranges in total (more than the capacity given: only those written) */
	uint32_t tokens;	/* tokens selected */
	uint32_t clusters;	/* clusters selected */
	uint32_t head_tokens;	/* tokens the head holds */
	uint32_t qhash;		/* the query's hash */
	uint32_t cutoff;	/* Hamming distance of the last selected cluster */
};

#define VREX_HAL_RESV_BLOCKS (1u << 0)	/* select: block ranges instead of token ranges */

struct vrex_hal_resv_stats {
	uint64_t keys;
	uint64_t clusters;
	uint64_t selects;
	uint64_t tokens_scanned;
	uint64_t tokens_selected;
	uint64_t bytes_selected;
	uint64_t ranges;
	uint32_t heads;
	uint32_t heads_in_use;
	uint32_t max_tokens;	/* per head */
	uint32_t max_clusters;	/* per head */
};

/* The defaults of the C++ ResvParams (dim 128, th 7, ratio 0.3, MASS, 16 tokens per block). */
void vrex_hal_resv_default_params(struct vrex_hal_resv_params *params);
/* VREX_HAL_ERR_INVALID for bad parameters, VREX_HAL_ERR_BUSY when every hardware head is in use. */
vrex_hal_status vrex_hal_resv_head_create(vrex_hal_device *dev, const struct vrex_hal_resv_params *params,
					  vrex_hal_resv_head **out);
void vrex_hal_resv_head_destroy(vrex_hal_resv_head *head);
uint32_t vrex_hal_resv_head_tokens(const vrex_hal_resv_head *head);
/*
 * Appends @count keys of dim values each, all or nothing (VREX_HAL_ERR_NOSPC: the head is full).
 * float keys are scaled per key to int16 (the hash does not depend on a positive scale). *tokens
 * (may be NULL) gets the tokens the head holds afterwards.
 */
vrex_hal_status vrex_hal_resv_append_f32(vrex_hal_resv_head *head, const float *keys, size_t count,
					 uint32_t *tokens);
vrex_hal_status vrex_hal_resv_append_i16(vrex_hal_resv_head *head, const int16_t *keys, size_t count,
					 uint32_t *tokens);
/*
 * The WiCSum selection for one query of dim values: the first min(capacity, sel->ranges) ranges
 * (ascending, merged) go to @ranges (may be NULL with capacity 0). @flags: VREX_HAL_RESV_BLOCKS.
 */
vrex_hal_status vrex_hal_resv_select_f32(vrex_hal_resv_head *head, const float *query, uint32_t flags,
					 struct vrex_hal_resv_range *ranges, uint32_t capacity,
					 struct vrex_hal_resv_selection *sel);
vrex_hal_status vrex_hal_resv_select_i16(vrex_hal_resv_head *head, const int16_t *query, uint32_t flags,
					 struct vrex_hal_resv_range *ranges, uint32_t capacity,
					 struct vrex_hal_resv_selection *sel);
/* Keeps the first @keep tokens (VREX_HAL_ERR_INVALID beyond the head's tokens). */
vrex_hal_status vrex_hal_resv_truncate(vrex_hal_resv_head *head, uint32_t keep);
/* Device-wide ReSV counters (VREX_HAL_ERR_NO_DEVICE without the unit). */
vrex_hal_status vrex_hal_resv_get_stats(vrex_hal_device *dev, struct vrex_hal_resv_stats *stats);

/* ---- Segments: prompt and generated tokens (docs/hal.md "Segments", C++: vrex/segment.hpp) ---- */

/*
 * An append-only token sequence in blocks of tokens_per_block tokens, for KV that has no frame
 * (the text prompt, generated tokens): block k holds positions first_position + k * T .. + T - 1
 * (block.first_token, block.token_count). Segment blocks are ordinary KV blocks (same slabs,
 * layout, handles, vrex_hal_export_dmabuf, vrex_hal_pin) with VREX_HAL_BLOCK_SEGMENT set; they
 * are not indexed, never aged and never evicted under pressure; vrex_hal_release / reuse /
 * set_positions / copy_on_write refuse them (VREX_HAL_ERR_INVALID). A segment is used on its
 * stream's thread; destroying the stream closes it (later calls: VREX_HAL_ERR_STALE), and
 * vrex_hal_segment_close() must still be called. Failures are recorded in vrex_hal_last_error().
 */
typedef struct vrex_hal_segment vrex_hal_segment;

enum vrex_hal_segment_kind { VREX_HAL_SEGMENT_PROMPT = 1, VREX_HAL_SEGMENT_GENERATED = 2 };

vrex_hal_status vrex_hal_segment_open(vrex_hal_stream *stream, uint32_t kind, uint32_t first_position,
				      vrex_hal_segment **out);
/* Releases every block of the segment and frees the handle (NULL: no-op). */
void vrex_hal_segment_close(vrex_hal_segment *seg);

#define VREX_HAL_SEGMENT_OPEN (1u << 0)	/* not closed (by its stream's destruction) */

/* Out, size-prefixed: set struct_size = sizeof(struct vrex_hal_segment_info); the library writes
 * what both know and zeroes the rest of a larger struct. */
struct vrex_hal_segment_info {
	uint32_t struct_size;
	uint32_t kind;			/* enum vrex_hal_segment_kind */
	uint32_t first_position;
	uint32_t tokens;		/* positions first_position .. + tokens - 1 */
	uint32_t blocks;
	uint32_t flags;			/* VREX_HAL_SEGMENT_OPEN */
	uint32_t stream;		/* vrex_hal_stream_id() of its stream */
	uint32_t pad;
};
vrex_hal_status vrex_hal_segment_get_info(const vrex_hal_segment *seg, struct vrex_hal_segment_info *info);

/*
 * A list of blocks, size-prefixed like vrex_hal_batch: struct_size = sizeof(struct
 * vrex_hal_block_list), block_size = sizeof(struct vrex_hal_block) (the stride of @blocks),
 * @capacity entries at @blocks; @count is set to the number of blocks of the answer.
 */
struct vrex_hal_block_list {
	uint32_t struct_size;
	uint32_t block_size;
	uint32_t capacity;
	uint32_t count;			/* out */
	struct vrex_hal_block *blocks;
};
/*
 * Appends @tokens positions: the last partial block fills first, then new blocks. @out (may be
 * NULL) gets the blocks that now hold the new tokens, in position order. All or nothing: on
 * VREX_HAL_ERR_NOSPC nothing changed; a @capacity below the blocks the append touches is
 * VREX_HAL_ERR_RANGE before anything changes (@count says how many are needed).
 */
vrex_hal_status vrex_hal_segment_append(vrex_hal_segment *seg, uint32_t tokens,
					struct vrex_hal_block_list *out);
/* Keeps the positions before @position (first_position <= position <= end, else
 * VREX_HAL_ERR_RANGE): whole blocks beyond it are released (their handles become stale);
 * *released (may be NULL) gets their number. */
vrex_hal_status vrex_hal_segment_truncate(vrex_hal_segment *seg, uint32_t position, uint32_t *released);
/* All blocks in position order: the first min(capacity, count) are written, @count gets the total. */
vrex_hal_status vrex_hal_segment_blocks(const vrex_hal_segment *seg, struct vrex_hal_block_list *out);

/* Out, size-prefixed like vrex_hal_segment_info. Segment blocks are part of vrex_hal_stats'
 * resident counts; its allocations, fallbacks and evictions are frame blocks only. */
struct vrex_hal_segment_stats {
	uint32_t struct_size;
	uint32_t bank_count;
	uint64_t segments_open;
	uint64_t blocks;		/* held by open segments */
	uint64_t tokens;
	uint64_t allocations;
	uint64_t releases;
	uint64_t in_group;		/* placed in the stream's bank group: no room outside it */
	uint64_t bank_blocks[VREX_HAL_MAX_BANKS];
};
vrex_hal_status vrex_hal_get_segment_stats(vrex_hal_allocator *alloc, struct vrex_hal_segment_stats *stats);

/* ---- Publication and the fixed KV pool (docs/hal.md "Concurrency and publication", "Fixed KV
 * pool"; hal/src/c_api_pool.cpp) ------------------------------------------------------------- */

/*
 * Commits blocks this stream owns once their KV is written: until then no other stream sees them
 * (their lookups miss; reuse, pin, copy-on-write and export by another stream are VREX_HAL_ERR_PERM);
 * from then on they are read-only for every stream, the owner included. Streams publish at
 * vrex_hal_end_frame() unless created with VREX_HAL_STREAM_EXPLICIT_PUBLISH. All or nothing:
 * VREX_HAL_ERR_PERM for another stream's block, VREX_HAL_ERR_STALE for a released one.
 */
vrex_hal_status vrex_hal_publish(vrex_hal_stream *stream, const struct vrex_hal_block *block);
/* @count blocks at @blocks, @block_size = sizeof(struct vrex_hal_block) apart (>= the size this
 * library knows). */
vrex_hal_status vrex_hal_publish_batch(vrex_hal_stream *stream, const struct vrex_hal_block *blocks,
				       uint32_t count, uint32_t block_size);

#define VREX_HAL_STREAM_POOLED (1u << 0)		/* share the bank groups and lookups of @pool */
#define VREX_HAL_STREAM_EXPLICIT_PUBLISH (1u << 1)	/* only vrex_hal_publish() publishes */
/* vrex_hal_stream_create() with VREX_HAL_STREAM_* flags (@pool must be 0 unless POOLED). */
vrex_hal_status vrex_hal_stream_create_flags(vrex_hal_allocator *alloc, uint32_t flags, uint32_t pool,
					     vrex_hal_stream **out);

/*
 * An allocator whose KV memory is one fixed pool of @pool_blocks blocks, reserved now in one buffer
 * (one bank, one dma-buf): every block lies at index x block_bytes in it for the allocator's life.
 * @flags: VREX_HAL_ALLOC_EVICT_UNDER_PRESSURE (else a full pool is VREX_HAL_ERR_NOSPC).
 * VREX_HAL_ERR_INVALID (the last error names the largest count) when the blocks do not fit a bank.
 */
vrex_hal_status vrex_hal_allocator_create_pool(vrex_hal_device *dev, const struct vrex_hal_geometry *geom,
					       uint32_t pool_blocks, uint32_t flags, vrex_hal_allocator **out);
/* Out, size-prefixed: set struct_size = sizeof(struct vrex_hal_pool) (a smaller, older struct gets
 * the fields it has). */
struct vrex_hal_pool {
	uint32_t struct_size;
	uint32_t handle;	/* the pool's buffer */
	uint32_t bank;
	uint32_t blocks;
	uint64_t block_bytes;
	uint64_t bytes;		/* blocks x block_bytes */
};
/* VREX_HAL_ERR_NOENT for an allocator without a pool. */
vrex_hal_status vrex_hal_pool_info(vrex_hal_allocator *alloc, struct vrex_hal_pool *out);
/* A dma-buf of the whole pool; the caller owns *fd. */
vrex_hal_status vrex_hal_pool_export_dmabuf(vrex_hal_allocator *alloc, int *fd);
/* The index of @block in the pool (VREX_HAL_ERR_INVALID for a block outside it). */
vrex_hal_status vrex_hal_pool_index(vrex_hal_allocator *alloc, const struct vrex_hal_block *block,
				    uint32_t *index);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* VREX_HAL_H */
