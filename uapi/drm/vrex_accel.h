/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * vrex: uAPI of the V-Rex frame-aware KV-cache retrieval engine.
 */
#ifndef _VREX_ACCEL_H_
#define _VREX_ACCEL_H_

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

/**
 * DOC: vrex uAPI overview
 *
 * V-Rex keeps the KV cache of video LLMs in bank-pinned device memory and
 * finds it again by frame: the FCC fingerprints a luma frame and places its
 * KV in a bank group, the SHIE indexes KV blocks by fingerprint, region and
 * frame, and the ReSV unit hashes keys and selects token ranges. The node is
 * /dev/accel/accelN on kernels with the accel framework, a render node
 * (/dev/dri/renderDN) otherwise; docs/uapi.md is the user's guide.
 *
 * A process opens the node, creates BOs (DRM_IOCTL_VREX_BO_CREATE, pinned in
 * one bank, mapped with DRM_IOCTL_VREX_BO_MMAP_OFFSET) or imports dma-bufs
 * with PRIME, claims streams (DRM_IOCTL_VREX_STREAM_CREATE), submits frames
 * (DRM_IOCTL_VREX_FRAME_SUBMIT), inserts, looks up and retires KV blocks in
 * batches (DRM_IOCTL_VREX_SHIE_INSERT, _LOOKUP, _RETIRE) and drives the ReSV
 * heads (DRM_IOCTL_VREX_RESV_*). DRM_IOCTL_VREX_QUERY and
 * DRM_IOCTL_VREX_STATS report the device and its counters.
 *
 * Rules every struct here follows (Documentation/process/botching-up-ioctls.rst):
 * fixed-width types only, user pointers as __u64, explicit padding that must
 * be zero, sizes multiple of 8 bytes, flags checked against \*_VALID masks.
 * Structs grow only at the end: an ioctl struct through the DRM core's size
 * handling (an older caller's smaller struct is zero-extended), a batch
 * element through its element size (copy_struct_from_user() rules: a larger
 * element's unknown tail must be zero). Ioctl ids are an enum: new ones are
 * appended, never reordered or reused.
 *
 * Ids handed out by the driver (BO handles, stream ids, block ids, head ids)
 * are only meaningful to the file that created them; another file gets
 * -ENOENT. A device that stays hung through repeated resets is wedged: every
 * ioctl that needs it fails with -EIO until it is bound again.
 */

#define DRM_VREX_DRIVER_NAME "vrex"

/*
 * The version DRM_IOCTL_VERSION reports. 1.1: imported BOs (PRIME) and the
 * imported_* bank counters. 1.2: BO generations (@bo_gen of BO_CREATE, of
 * insert items and of release records), -ESTALE on ReSV heads emptied by a
 * reset, the wedged state. 1.3: block generations (@block_gen of insert items,
 * lookup items and release records; an ALIAS insert naming a generation).
 * 1.4: host-tier blocks (DRM_VREX_INSERT_HOST_TIER). 1.5: FRAME_SUBMIT's
 * @region_motion (the struct grew from 96 to 112 bytes; a 96-byte caller
 * keeps working and gets no region motion). 1.6: similarity lookups by tier
 * (DRM_VREX_LOOKUP_TIER_*) and up to DRM_VREX_LOOKUP_MAX_CANDIDATES nearest
 * candidates per lookup (drm_vrex_shie_lookup_item.@max_candidates).
 */
#define DRM_VREX_VERSION_MAJOR 1
#define DRM_VREX_VERSION_MINOR 6

/**
 * enum drm_vrex_ioctl_id - ioctl numbers, offsets from DRM_COMMAND_BASE
 * @DRM_VREX_QUERY: struct drm_vrex_query
 * @DRM_VREX_BO_CREATE: struct drm_vrex_bo_create
 * @DRM_VREX_BO_MMAP_OFFSET: struct drm_vrex_bo_mmap_offset
 * @DRM_VREX_STREAM_CREATE: struct drm_vrex_stream_create
 * @DRM_VREX_STREAM_DESTROY: struct drm_vrex_stream_destroy
 * @DRM_VREX_FRAME_SUBMIT: struct drm_vrex_frame_submit
 * @DRM_VREX_SHIE_INSERT: struct drm_vrex_shie_batch of drm_vrex_shie_insert_item
 * @DRM_VREX_SHIE_LOOKUP: struct drm_vrex_shie_batch of drm_vrex_shie_lookup_item
 * @DRM_VREX_SHIE_RETIRE: struct drm_vrex_shie_retire
 * @DRM_VREX_STATS: struct drm_vrex_stats_query
 * @DRM_VREX_RESERVED_10: was REG_READ, a debug ioctl: retired, the id stays
 *                        reserved and is never reused; the driver answers it
 *                        with -EINVAL (registers are in debugfs: regs, window)
 * @DRM_VREX_RESV_HEAD_CREATE: struct drm_vrex_resv_head_create
 * @DRM_VREX_RESV_HEAD_DESTROY: struct drm_vrex_resv_head_destroy
 * @DRM_VREX_RESV_HASH: struct drm_vrex_resv_hash
 * @DRM_VREX_RESV_SELECT: struct drm_vrex_resv_batch of drm_vrex_resv_select_item
 * @DRM_VREX_RESV_TRUNCATE: struct drm_vrex_resv_truncate
 */
enum drm_vrex_ioctl_id {
	DRM_VREX_QUERY = 0,
	DRM_VREX_BO_CREATE,
	DRM_VREX_BO_MMAP_OFFSET,
	DRM_VREX_STREAM_CREATE,
	DRM_VREX_STREAM_DESTROY,
	DRM_VREX_FRAME_SUBMIT,
	DRM_VREX_SHIE_INSERT,
	DRM_VREX_SHIE_LOOKUP,
	DRM_VREX_SHIE_RETIRE,
	DRM_VREX_STATS,
	DRM_VREX_RESERVED_10,
	DRM_VREX_RESV_HEAD_CREATE,
	DRM_VREX_RESV_HEAD_DESTROY,
	DRM_VREX_RESV_HASH,
	DRM_VREX_RESV_SELECT,
	DRM_VREX_RESV_TRUNCATE,
	/* Place new ioctls here; never reorder or reuse an id. */
};

/* ---- DRM_VREX_QUERY ---------------------------------------------------- */

/**
 * enum drm_vrex_query_param - what DRM_IOCTL_VREX_QUERY reports
 * @DRM_VREX_QUERY_DEVICE_INFO: struct drm_vrex_device_info
 * @DRM_VREX_QUERY_BANKS: struct drm_vrex_bank_info
 * @DRM_VREX_QUERY_RESV_STATS: struct drm_vrex_resv_stats (-EOPNOTSUPP without
 *                             the ReSV unit)
 */
enum drm_vrex_query_param {
	DRM_VREX_QUERY_DEVICE_INFO = 0,
	DRM_VREX_QUERY_BANKS = 1,
	DRM_VREX_QUERY_RESV_STATS = 2,
};

/**
 * struct drm_vrex_query - size-negotiated query
 * @param: DRM_VREX_QUERY_*
 * @size: in: bytes at @ptr; out: bytes of the kernel's struct. With @ptr == 0
 *        only the size is returned. Otherwise min(size, kernel size) bytes are
 *        copied and the rest of the user buffer is left untouched.
 * @ptr: user pointer to the result struct, or 0
 */
struct drm_vrex_query {
	__u32 param;
	__u32 size;
	__u64 ptr;
};

#define DRM_VREX_CAP_FCC		(1u << 0)
#define DRM_VREX_CAP_SHIE		(1u << 1)
#define DRM_VREX_CAP_POOLED		(1u << 2)
#define DRM_VREX_CAP_PREDICT_SLOTS	(1u << 3)
#define DRM_VREX_CAP_RESV		(1u << 4)	/* ReSV ioctls */

#define DRM_VREX_MAX_BANKS 64

/**
 * struct drm_vrex_device_info - DRM_VREX_QUERY_DEVICE_INFO
 * @hw_id: ID register ("VREX")
 * @hw_version: major << 16 | minor
 * @caps: DRM_VREX_CAP_*
 * @bank_count: banks of device memory, 1..DRM_VREX_MAX_BANKS
 * @bank_size: bytes per bank
 * @group_banks: banks per bank group (the FCC places a frame's KV in one group)
 * @max_streams: hardware stream slots, shared by all files
 * @shie_capacity: SHIE entries, all streams
 * @block_capacity: KV blocks, all streams
 * @zombie_frames: a block cold for more frames than this is released at RETIRE
 * @max_batch: elements per SHIE ioctl (DRM_VREX_MAX_BATCH)
 * @fcc_min_dim: smallest frame width and height
 * @fcc_max_dim: largest frame width and height
 * @simulated: 1 for the register-level simulated device
 * @pad: zero
 */
struct drm_vrex_device_info {
	__u32 hw_id;
	__u32 hw_version;
	__u32 caps;
	__u32 bank_count;
	__u64 bank_size;
	__u32 group_banks;
	__u32 max_streams;
	__u32 shie_capacity;
	__u32 block_capacity;
	__u32 zombie_frames;
	__u32 max_batch;
	__u32 fcc_min_dim;
	__u32 fcc_max_dim;
	__u32 simulated;
	__u32 pad;
};

/*
 * The bank of memory that is in no bank: a BO imported with PRIME
 * (DRM_IOCTL_PRIME_FD_TO_HANDLE of another driver's dma-buf, e.g. an
 * inference engine's own KV cache) and the KV blocks pointing into it.
 */
#define DRM_VREX_BANK_NONE	0xffffffffu

/**
 * struct drm_vrex_bank_info - DRM_VREX_QUERY_BANKS: occupancy, all files
 * @bank_count: valid entries of the per-bank arrays
 * @pad: zero
 * @bo_bytes: per bank, bytes of live BOs
 * @kv_bytes: per bank, KV bytes the SHIE's blocks point into
 * @kv_blocks: per bank, live KV blocks
 * @group_owned: per bank group, 1 if a pool holds it
 * @imported_bytes: bytes of imported BOs (DRM_VREX_BANK_NONE; counted in no
 *                  bank above and in no file's quota)
 * @imported_bos: imported BOs alive
 * @imported_kv_blocks: live KV blocks pointing into imported BOs
 * @imported_kv_bytes: KV bytes of those blocks
 *
 * The imported_* fields were appended (vrex 1.1); an older caller's smaller
 * struct simply does not receive them (QUERY's size negotiation).
 */
struct drm_vrex_bank_info {
	__u32 bank_count;
	__u32 pad;
	__u64 bo_bytes[DRM_VREX_MAX_BANKS];
	__u64 kv_bytes[DRM_VREX_MAX_BANKS];
	__u32 kv_blocks[DRM_VREX_MAX_BANKS];
	__u32 group_owned[DRM_VREX_MAX_BANKS];
	__u64 imported_bytes;
	__u32 imported_bos;
	__u32 imported_kv_blocks;
	__u64 imported_kv_bytes;
};

/* ---- DRM_VREX_BO_CREATE / DRM_VREX_BO_MMAP_OFFSET ---------------------- */

/*
 * Placement hints, both optional: KV buffers (long-lived) are placed from the
 * bottom of a bank, STAGING buffers (luma planes, short-lived) from its top,
 * so freeing staging memory does not leave holes between KV buffers. Neither
 * restricts how the buffer may be used.
 */
#define DRM_VREX_BO_KV		(1u << 0)	/* holds KV blocks */
#define DRM_VREX_BO_STAGING	(1u << 1)	/* holds luma frames for the FCC */
#define DRM_VREX_BO_VALID_FLAGS	(DRM_VREX_BO_KV | DRM_VREX_BO_STAGING)

/**
 * struct drm_vrex_bo_create - pinned buffer in one bank of device memory
 * @size: bytes, > 0; rounded up to the page size
 * @bank_mask: banks the buffer may be placed in (bit n = bank n), != 0 and
 *             within the device's bank count; the lowest-numbered bank with
 *             room is used
 * @flags: DRM_VREX_BO_*
 * @handle: out: GEM handle
 * @bank: out: the bank the buffer lives in
 * @pad: must be zero
 * @bo_gen: out: the buffer's generation, unique per device for its lifetime
 *          (never reused, never 0): release records name it, so a record
 *          of a closed handle that now names another buffer is told apart.
 *          Appended in vrex 1.2; the DRM core zero-extends an older
 *          caller's 32-byte struct and writes back only what it passed.
 */
struct drm_vrex_bo_create {
	__u64 size;
	__u64 bank_mask;
	__u32 flags;
	__u32 handle;
	__u32 bank;
	__u32 pad;
	__u64 bo_gen;
};

/**
 * struct drm_vrex_bo_mmap_offset - where to mmap() a BO
 * @handle: GEM handle of this file; -EOPNOTSUPP for an imported BO (map the
 *          dma-buf it came from instead)
 * @pad: zero
 * @offset: out: fake offset for mmap(MAP_SHARED) on the device fd
 */
struct drm_vrex_bo_mmap_offset {
	__u32 handle;
	__u32 pad;
	__u64 offset;
};

/* ---- DRM_VREX_STREAM_CREATE / DRM_VREX_STREAM_DESTROY ------------------ */

#define DRM_VREX_STREAM_POOLED		(1u << 0)	/* share placement with @pool */
#define DRM_VREX_STREAM_VALID_FLAGS	DRM_VREX_STREAM_POOLED

/**
 * struct drm_vrex_stream_create - claim a hardware stream slot
 * @flags: DRM_VREX_STREAM_*
 * @pool: with DRM_VREX_STREAM_POOLED, streams of this file with the same
 *        @pool share bank groups and pool-scoped lookups; must be 0 otherwise
 * @stream: out: stream id
 * @pad: must be zero
 */
struct drm_vrex_stream_create {
	__u32 flags;
	__u32 pool;
	__u32 stream;
	__u32 pad;
};

/**
 * struct drm_vrex_stream_destroy - release a stream, its blocks and entries
 * @stream: stream id of this file
 * @pad: zero
 */
struct drm_vrex_stream_destroy {
	__u32 stream;
	__u32 pad;
};

/* ---- DRM_VREX_FRAME_SUBMIT --------------------------------------------- */

#define DRM_VREX_FRAME_EVENT		(1u << 0)	/* also send a drm_vrex_event_frame */
#define DRM_VREX_FRAME_VALID_FLAGS	DRM_VREX_FRAME_EVENT

/**
 * struct drm_vrex_frame_submit - run the FCC on a luma plane held in a BO
 * @stream: stream id
 * @handle: BO holding the plane; not an imported BO (-EINVAL: the FCC reads
 *          the plane through the device's own address space, bank memory)
 * @offset: byte offset of the plane in the BO; the plane (height - 1) *
 *          stride + width bytes must lie inside the BO
 * @width: fcc_min_dim..fcc_max_dim
 * @height: fcc_min_dim..fcc_max_dim
 * @stride: >= width
 * @flags: DRM_VREX_FRAME_*
 * @user_data: returned in the completion event
 * @fp: out: 128-bit fingerprint (fp[0] bits 0..63)
 * @frame: out: the stream's frame number
 * @group: out: bank group
 * @bank_first: out: first bank of the group
 * @bank_count: out: banks of the group
 * @result_flags: out: DRM_VREX_FRAME_OPENED_GROUP / _CONFLICT
 * @centre_motion: out: FCC feature, motion at the frame's centre (docs/hardware.md)
 * @static_ratio: out: FCC feature, share of static blocks (docs/hardware.md)
 * @roi_dx: out: FCC feature, horizontal shift of the region of interest
 * @roi_dy: out: FCC feature, vertical shift of the region of interest
 * @pad: zero
 * @region_motion: out (1.5): per SHIE region (the 4 x 4 grid, region r at
 *          row r / 4, column r % 4), the mean motion-vector length the FCC's
 *          search found against the stream's previous frame, in 1/16 px of
 *          the FCC's working grid; 0 iff nothing in the region moved (a
 *          stream's first frame: all 0). Output only: whatever the caller
 *          passes in is ignored and overwritten. An older caller's 96-byte
 *          struct is zero-extended by the DRM core and gets back only its own
 *          96 bytes.
 */
struct drm_vrex_frame_submit {
	__u32 stream;
	__u32 handle;
	__u64 offset;
	__u32 width;
	__u32 height;
	__u32 stride;
	__u32 flags;
	__u64 user_data;
	__u64 fp[2];
	__u32 frame;
	__u32 group;
	__u32 bank_first;
	__u32 bank_count;
	__u32 result_flags;
	__u32 centre_motion;
	__u32 static_ratio;
	__s32 roi_dx;
	__s32 roi_dy;
	__u32 pad;
	__u8 region_motion[16];
};

#define DRM_VREX_FRAME_OPENED_GROUP	(1u << 0)
#define DRM_VREX_FRAME_CONFLICT		(1u << 1)

/* ---- SHIE batches ------------------------------------------------------ */

#define DRM_VREX_REGIONS	16
#define DRM_VREX_OFFSET_MIN	(-3)
#define DRM_VREX_OFFSET_MAX	2
#define DRM_VREX_MAX_RADIUS	31

#define DRM_VREX_INSERT_ALIAS		(1u << 0)	/* point at existing @block */
#define DRM_VREX_INSERT_HOST_TIER	(1u << 1)	/* a demoted block in host memory */
#define DRM_VREX_INSERT_VALID_FLAGS	(DRM_VREX_INSERT_ALIAS | DRM_VREX_INSERT_HOST_TIER)

/**
 * struct drm_vrex_shie_insert_item - one SHIE entry (and, unless ALIAS, one
 * new KV block)
 * @fp: fingerprint the entry is indexed by
 * @handle: BO holding the KV block (ignored with ALIAS, must be 0); a BO
 *          created with BO_CREATE or imported with PRIME (the block is then
 *          in no bank, DRM_VREX_BANK_NONE)
 * @flags: DRM_VREX_INSERT_*
 * @offset: start of the KV range inside the BO (must be 0 with ALIAS)
 * @length: bytes of the KV range, > 0; the range must not overflow and must
 *          lie inside the BO (must be 0 with ALIAS)
 * @region: 0..15
 * @frame_offset: relative to the stream's current frame, -3..+2; with
 *                HOST_TIER any offset <= 0 that stays at or after the
 *                stream's first frame (-ERANGE before it)
 * @block: in: with ALIAS, an existing block of this file; out: the block id
 * @result: out: 0 or a negative errno for this item (-EEXIST, -ENOSPC, ...)
 * @bo_gen: out: generation of the BO the block points into (as
 *          drm_vrex_bo_create.@bo_gen; also for imported BOs); ignored on
 *          input. Appended in vrex 1.2 (elem_size 56 before).
 * @block_gen: in: with ALIAS, 0 or the generation of @block the caller means
 *             (the @block_gen an insert or lookup reported for it): when the
 *             id now names another block (released, and its id given to a
 *             new one), the batch fails with -ENOENT as for a released id.
 *             0 accepts whichever block has the id (the behaviour before
 *             1.3). Must be 0 without ALIAS. out: the generation of the block
 *             (new or aliased): unique per device and never reused, never 0.
 *             Appended in vrex 1.3 (elem_size 64 before).
 *
 * HOST_TIER (vrex 1.4, not with ALIAS): the block is a copy of a demoted
 * block in host memory, @handle an imported BO (in no bank: -EINVAL for a
 * BO of device memory), indexed under the frame that computed it. Zombie
 * release never ages it: its entry stays findable until the block is
 * removed (SHIE_RETIRE's remove list) or the stream is destroyed, so the
 * host tier bounds itself by the memory it imports.
 */
struct drm_vrex_shie_insert_item {
	__u64 fp[2];
	__u32 handle;
	__u32 flags;
	__u64 offset;
	__u64 length;
	__u32 region;
	__s32 frame_offset;
	__u32 block;
	__s32 result;
	__u64 bo_gen;
	__u64 block_gen;
};

#define DRM_VREX_LOOKUP_TEMPORAL	0
#define DRM_VREX_LOOKUP_SIMILAR		1

#define DRM_VREX_LOOKUP_SCOPE_POOL	(1u << 0)	/* SIMILAR: all streams of the pool */
#define DRM_VREX_LOOKUP_PAST_ONLY	(1u << 1)	/* SIMILAR: frames before the current */
/*
 * SIMILAR, vrex 1.6: the tiers the lookup accepts, entries of device blocks
 * and/or host-tier entries (DRM_VREX_INSERT_HOST_TIER). Neither bit: every
 * tier (the behaviour before 1.6); both: every tier.
 */
#define DRM_VREX_LOOKUP_TIER_DEVICE	(1u << 2)
#define DRM_VREX_LOOKUP_TIER_HOST	(1u << 3)
#define DRM_VREX_LOOKUP_VALID_FLAGS	(DRM_VREX_LOOKUP_SCOPE_POOL | DRM_VREX_LOOKUP_PAST_ONLY | \
					 DRM_VREX_LOOKUP_TIER_DEVICE | DRM_VREX_LOOKUP_TIER_HOST)

#define DRM_VREX_HIT		(1u << 0)
#define DRM_VREX_HIT_APPROX	(1u << 1)
#define DRM_VREX_HIT_HOST_TIER	(1u << 2)	/* candidates only: a host-tier entry */

/* Most candidates one similarity lookup returns (vrex 1.6). */
#define DRM_VREX_LOOKUP_MAX_CANDIDATES	8

/**
 * struct drm_vrex_shie_candidate - one answer of a similarity lookup that
 * asked for candidates (drm_vrex_shie_lookup_item.@max_candidates)
 * @block: block id
 * @frame: frame of the entry
 * @stream: stream id (of this file) the entry belongs to
 * @handle: BO handle of the block, 0 if that handle no longer names the BO
 * @offset: KV range inside the BO
 * @length: KV length
 * @found_fp: fingerprint of the entry
 * @block_gen: generation of @block (as drm_vrex_shie_lookup_item.@block_gen)
 * @hit_flags: DRM_VREX_HIT, DRM_VREX_HIT_APPROX, DRM_VREX_HIT_HOST_TIER
 * @distance: Hamming distance of @found_fp from the query
 */
struct drm_vrex_shie_candidate {
	__u32 block;
	__u32 frame;
	__u32 stream;
	__u32 handle;
	__u64 offset;
	__u64 length;
	__u64 found_fp[2];
	__u64 block_gen;
	__u32 hit_flags;
	__u32 distance;
};

/**
 * struct drm_vrex_shie_lookup_item - one lookup
 * @fp: SIMILAR: query fingerprint (TEMPORAL: must be 0)
 * @kind: DRM_VREX_LOOKUP_TEMPORAL or _SIMILAR
 * @flags: DRM_VREX_LOOKUP_* (TEMPORAL: must be 0)
 * @region: 0..15
 * @frame_offset: TEMPORAL: -3..+2 (SIMILAR: must be 0)
 * @radius: SIMILAR: 0..DRM_VREX_MAX_RADIUS (TEMPORAL: must be 0)
 * @pad: must be zero
 * @hit_flags: out: DRM_VREX_HIT, DRM_VREX_HIT_APPROX (distance > 0); 0 on a miss
 * @distance: out: Hamming distance of the found fingerprint
 * @block: out: block id
 * @frame: out: frame of the found entry
 * @stream: out: stream id (of this file) the entry belongs to
 * @handle: out: BO handle of the block, 0 if that handle no longer names the BO
 * @offset: out: KV range inside the BO
 * @length: out: KV length
 * @found_fp: out: fingerprint of the found entry
 * @block_gen: out: generation of @block (as the insert item's @block_gen), for
 *             an ALIAS insert that must reach this very block; ignored on
 *             input. Appended in vrex 1.3 (elem_size 96 before).
 * @max_candidates: SIMILAR: 0 (the nearest only, in the fields above: the
 *                  behaviour before 1.6) or 1..DRM_VREX_LOOKUP_MAX_CANDIDATES
 *                  (-EINVAL above); TEMPORAL: must be 0. Appended in vrex 1.6
 *                  (elem_size 104 before): an older caller's item is
 *                  zero-extended and gets what it got before.
 * @candidate_count: out: candidates written, 0..@max_candidates
 * @candidates: out: with @max_candidates, the entries within the radius
 *              (of the tiers asked for, under the scope and PAST_ONLY),
 *              nearest first (smallest distance, then the most recent frame);
 *              the first is the one the fields above report. The device
 *              returns up to @max_candidates; those that are not this
 *              file's are dropped. Every candidate's block counts as used.
 *              Entries past @candidate_count are zeroed.
 *
 * A miss zeroes every out field.
 */
struct drm_vrex_shie_lookup_item {
	__u64 fp[2];
	__u32 kind;
	__u32 flags;
	__u32 region;
	__s32 frame_offset;
	__u32 radius;
	__u32 pad;
	__u32 hit_flags;
	__u32 distance;
	__u32 block;
	__u32 frame;
	__u32 stream;
	__u32 handle;
	__u64 offset;
	__u64 length;
	__u64 found_fp[2];
	__u64 block_gen;
	__u32 max_candidates;
	__u32 candidate_count;
	struct drm_vrex_shie_candidate candidates[DRM_VREX_LOOKUP_MAX_CANDIDATES];
};

#define DRM_VREX_MAX_BATCH	4096
/* Largest element size of a batch or release array (-E2BIG above). */
#define DRM_VREX_MAX_ELEM_SIZE	4096

/**
 * struct drm_vrex_shie_batch - DRM_VREX_SHIE_INSERT and DRM_VREX_SHIE_LOOKUP
 * @stream: stream id
 * @count: items at @items, 1..DRM_VREX_MAX_BATCH
 * @elem_size: sizeof(item) as the caller knows it, 1..DRM_VREX_MAX_ELEM_SIZE. Smaller than
 *             today's item: zero-extended; larger: the bytes past today's
 *             item must be zero (else -E2BIG). min(elem_size, item) bytes of
 *             each element are written back.
 * @flags: must be zero
 * @items: user pointer to @count items
 *
 * The whole batch is validated before anything is applied: a malformed item
 * fails the ioctl with nothing changed. Device-side outcomes are per item. A
 * command that fails itself (-ETIMEDOUT, -EIO) stops the batch: INSERT still
 * writes the items back (later ones with result -ECANCELED) and returns it.
 */
struct drm_vrex_shie_batch {
	__u32 stream;
	__u32 count;
	__u32 elem_size;
	__u32 flags;
	__u64 items;
};

#define DRM_VREX_RELEASE_ZOMBIE		1	/* cold for more than zombie_frames frames */
#define DRM_VREX_RELEASE_REMOVED	2	/* removed explicitly (RETIRE @remove) */
#define DRM_VREX_RELEASE_RESET		3	/* lost in a device reset after a timeout */

/**
 * struct drm_vrex_released_block - one block the hardware no longer points at
 * @block: block id
 * @handle: BO handle the block was inserted with; 0 when, as the record is
 *          delivered, that handle no longer names the BO (closed, or closed
 *          and reused for another BO)
 * @offset: KV range inside the BO; the memory may be reused now
 * @length: KV length
 * @reason: DRM_VREX_RELEASE_*
 * @pad: zero
 * @bo_gen: generation of the BO the block pointed into (the @bo_gen of
 *          BO_CREATE and of the insert item). Appended in vrex 1.2
 *          (elem_size 32 before).
 * @block_gen: generation of the released block (the @block_gen its insert
 *             reported): @block may name a new block by the time the record
 *             is read. Appended in vrex 1.3 (elem_size 40 before).
 */
struct drm_vrex_released_block {
	__u32 block;
	__u32 handle;
	__u64 offset;
	__u64 length;
	__u32 reason;
	__u32 pad;
	__u64 bo_gen;
	__u64 block_gen;
};

/**
 * struct drm_vrex_shie_retire - end of frame: release blocks
 * @stream: stream id
 * @flags: must be zero
 * @remove_count: blocks of this stream to release explicitly (ids at @remove)
 * @released_cap: in: room at @released, in elements; out: blocks released.
 *                If the room cannot hold every block that could be released
 *                (the stream's live blocks plus the records kept for it),
 *                -ENOSPC is returned, nothing is released and @released_cap
 *                holds the room needed.
 * @elem_size: sizeof(struct drm_vrex_released_block) as the caller knows it,
 *             1..DRM_VREX_MAX_ELEM_SIZE; min(elem_size, ours) bytes are
 *             written per record
 * @pad: must be zero
 * @remove: user pointer to __u32 block ids
 * @released: user pointer to struct drm_vrex_released_block
 *
 * Records kept for the stream (released while another stream's command
 * drained the device, or by a reset) come first, then explicit removals, then
 * every block of the stream cold for more than zombie_frames frames is
 * released with all its SHIE entries.
 */
struct drm_vrex_shie_retire {
	__u32 stream;
	__u32 flags;
	__u32 remove_count;
	__u32 released_cap;
	__u32 elem_size;
	__u32 pad;
	__u64 remove;
	__u64 released;
};

/* ---- DRM_VREX_STATS ---------------------------------------------------- */

/**
 * struct drm_vrex_stats - device counters, all files, since probe or reset
 * @lookups: SHIE lookups
 * @exact_hits: lookups that found distance 0
 * @approx_hits: lookups that found 0 < distance <= radius
 * @misses: lookups that found nothing
 * @evictions: entries dropped to make room
 * @bank_conflicts: frames whose group was taken by another pool
 * @inserts: SHIE entries inserted
 * @removes: SHIE entries removed
 * @frames: frames fingerprinted
 * @live_entries: SHIE entries now
 * @live_blocks: KV blocks now
 * @cmd_errors: commands that ended in an error status
 */
struct drm_vrex_stats {
	__u64 lookups;
	__u64 exact_hits;
	__u64 approx_hits;
	__u64 misses;
	__u64 evictions;
	__u64 bank_conflicts;
	__u64 inserts;
	__u64 removes;
	__u64 frames;
	__u64 live_entries;
	__u64 live_blocks;
	__u64 cmd_errors;
};

/**
 * struct drm_vrex_stats_query - size-negotiated like drm_vrex_query
 * @size: in: bytes at @ptr; out: bytes of struct drm_vrex_stats
 * @pad: zero
 * @ptr: user pointer to struct drm_vrex_stats, or 0 for the size only
 */
struct drm_vrex_stats_query {
	__u32 size;
	__u32 pad;
	__u64 ptr;
};

/* ---- ReSV: key hashing and WiCSum selection (docs/hw/resv.md) ----------- */

#define DRM_VREX_RESV_MAX_DIM		256
#define DRM_VREX_RESV_MAX_TH		32
#define DRM_VREX_RESV_RATIO_ONE		65536	/* ratio is Q16 */
#define DRM_VREX_RESV_LUT_SIZE		33
#define DRM_VREX_RESV_MODE_MASS		0	/* sum of count * lut[distance] */
#define DRM_VREX_RESV_MODE_TOKENS	1	/* sum of count: a token budget */

/**
 * struct drm_vrex_resv_params - how a head hashes, clusters and selects
 * @seed: seed of the +-1 hyperplanes; keys of one head are only comparable
 *        under one seed and dim, so they are fixed for the head's lifetime
 * @dim: int16 values per key and query, 1..DRM_VREX_RESV_MAX_DIM
 * @th: clustering radius (Hamming), 0..DRM_VREX_RESV_MAX_TH
 * @ratio: WiCSum ratio, 0..DRM_VREX_RESV_RATIO_ONE
 * @mode: DRM_VREX_RESV_MODE_*
 * @tokens_per_block: block size for block ranges, >= 1
 * @bytes_per_token: K+V bytes per token (statistics only)
 * @lut: MASS weight per Hamming distance 0..32
 * @pad: must be zero
 */
struct drm_vrex_resv_params {
	__u64 seed;
	__u32 dim;
	__u32 th;
	__u32 ratio;
	__u32 mode;
	__u32 tokens_per_block;
	__u32 bytes_per_token;
	__u16 lut[DRM_VREX_RESV_LUT_SIZE];
	__u16 pad[3];
};

/**
 * struct drm_vrex_resv_head_create - claims a head (one layer and attention
 * head of one sequence); -EBUSY when every hardware head is in use
 * @params: in
 * @flags: must be zero
 * @head: out: head id
 */
struct drm_vrex_resv_head_create {
	struct drm_vrex_resv_params params;
	__u32 flags;
	__u32 head;
};

/**
 * struct drm_vrex_resv_head_destroy - empties and frees a head of this file
 * @head: head id
 * @pad: must be zero
 */
struct drm_vrex_resv_head_destroy {
	__u32 head;
	__u32 pad;
};

/**
 * struct drm_vrex_resv_hash - hash @count keys and append them to the head
 * @head: head id
 * @count: keys, >= 1
 * @handle: BO holding @count * dim little-endian int16 at @offset (2-aligned)
 * @flags: must be zero
 * @offset: byte offset in the BO
 * @tokens: out: tokens the head holds
 * @clusters: out: clusters of the head
 *
 * -ENOSPC when the head's token or cluster table cannot take the batch;
 * nothing is added then.
 */
struct drm_vrex_resv_hash {
	__u32 head;
	__u32 count;
	__u32 handle;
	__u32 flags;
	__u64 offset;
	__u32 tokens;
	__u32 clusters;
};

#define DRM_VREX_RESV_SELECT_BLOCKS	(1u << 0)	/* block ranges, not token ranges */
#define DRM_VREX_RESV_SELECT_VALID_FLAGS DRM_VREX_RESV_SELECT_BLOCKS

/**
 * struct drm_vrex_resv_select_item - one WiCSum selection
 * @head: head id
 * @flags: DRM_VREX_RESV_SELECT_*
 * @query_handle: BO holding the query (dim int16) at @query_offset, 2-aligned
 * @out_handle: BO receiving up to @max_ranges (__u32 first, __u32 count)
 *              pairs at @out_offset, 4-aligned (unused when @max_ranges is 0)
 * @query_offset: byte offset of the query in @query_handle
 * @out_offset: byte offset of the ranges in @out_handle
 * @max_ranges: room at @out_offset in ranges
 * @ranges: out: ranges in total (more than @max_ranges: only those written)
 * @tokens: out: tokens selected
 * @clusters: out: clusters selected
 * @qhash: out: the query's hash
 * @cutoff: out: Hamming distance of the last selected cluster
 * @head_tokens: out: tokens the head holds
 * @pad: must be zero
 */
struct drm_vrex_resv_select_item {
	__u32 head;
	__u32 flags;
	__u32 query_handle;
	__u32 out_handle;
	__u64 query_offset;
	__u64 out_offset;
	__u32 max_ranges;
	__u32 ranges;
	__u32 tokens;
	__u32 clusters;
	__u32 qhash;
	__u32 cutoff;
	__u32 head_tokens;
	__u32 pad;
};

/**
 * struct drm_vrex_resv_batch - DRM_VREX_RESV_SELECT: one decode step's
 * selections (e.g. every layer and head), validated as a whole like
 * drm_vrex_shie_batch
 * @count: items at @items, 1..DRM_VREX_MAX_BATCH
 * @elem_size: sizeof(item) as the caller knows it, as in drm_vrex_shie_batch
 * @flags: must be zero
 * @pad: must be zero
 * @items: user pointer to @count struct drm_vrex_resv_select_item
 */
struct drm_vrex_resv_batch {
	__u32 count;
	__u32 elem_size;
	__u32 flags;
	__u32 pad;
	__u64 items;
};

/**
 * struct drm_vrex_resv_truncate - the head keeps its first @keep tokens
 * @head: head id
 * @keep: tokens kept, at most the head's tokens
 */
struct drm_vrex_resv_truncate {
	__u32 head;
	__u32 keep;
};

/**
 * struct drm_vrex_resv_stats - DRM_VREX_QUERY_RESV_STATS: device-wide ReSV
 * counters, all files, since probe or reset
 * @keys: keys hashed
 * @clusters: clusters opened
 * @selects: selections
 * @tokens_scanned: tokens held by the heads selected from
 * @tokens_selected: tokens selected
 * @bytes_selected: tokens selected times the head's bytes_per_token
 * @ranges: ranges the selections produced
 * @heads: hardware heads
 * @heads_in_use: heads some file holds
 * @max_tokens: tokens per head
 * @max_clusters: clusters per head
 */
struct drm_vrex_resv_stats {
	__u64 keys;
	__u64 clusters;
	__u64 selects;
	__u64 tokens_scanned;
	__u64 tokens_selected;
	__u64 bytes_selected;
	__u64 ranges;
	__u32 heads;
	__u32 heads_in_use;
	__u32 max_tokens;
	__u32 max_clusters;
};

/* ---- Events (read() on the device fd) ---------------------------------- */

#define DRM_VREX_EVENT_FRAME_DONE 0x80000000

/**
 * struct drm_vrex_event_frame - completion of a FRAME_SUBMIT with DRM_VREX_FRAME_EVENT
 * @base: type DRM_VREX_EVENT_FRAME_DONE, length sizeof(this)
 * @user_data: as submitted
 * @fp: fingerprint
 * @stream: stream id
 * @frame: the stream's frame number
 * @group: bank group
 * @pad: zero
 */
struct drm_vrex_event_frame {
	struct drm_event base;
	__u64 user_data;
	__u64 fp[2];
	__u32 stream;
	__u32 frame;
	__u32 group;
	__u32 pad;
};

#define DRM_IOCTL_VREX_QUERY \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VREX_QUERY, struct drm_vrex_query)
#define DRM_IOCTL_VREX_BO_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VREX_BO_CREATE, struct drm_vrex_bo_create)
#define DRM_IOCTL_VREX_BO_MMAP_OFFSET \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VREX_BO_MMAP_OFFSET, struct drm_vrex_bo_mmap_offset)
#define DRM_IOCTL_VREX_STREAM_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VREX_STREAM_CREATE, struct drm_vrex_stream_create)
#define DRM_IOCTL_VREX_STREAM_DESTROY \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VREX_STREAM_DESTROY, struct drm_vrex_stream_destroy)
#define DRM_IOCTL_VREX_FRAME_SUBMIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VREX_FRAME_SUBMIT, struct drm_vrex_frame_submit)
#define DRM_IOCTL_VREX_SHIE_INSERT \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VREX_SHIE_INSERT, struct drm_vrex_shie_batch)
#define DRM_IOCTL_VREX_SHIE_LOOKUP \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VREX_SHIE_LOOKUP, struct drm_vrex_shie_batch)
#define DRM_IOCTL_VREX_SHIE_RETIRE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VREX_SHIE_RETIRE, struct drm_vrex_shie_retire)
#define DRM_IOCTL_VREX_STATS \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VREX_STATS, struct drm_vrex_stats_query)
#define DRM_IOCTL_VREX_RESV_HEAD_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VREX_RESV_HEAD_CREATE, struct drm_vrex_resv_head_create)
#define DRM_IOCTL_VREX_RESV_HEAD_DESTROY \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VREX_RESV_HEAD_DESTROY, struct drm_vrex_resv_head_destroy)
#define DRM_IOCTL_VREX_RESV_HASH \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VREX_RESV_HASH, struct drm_vrex_resv_hash)
#define DRM_IOCTL_VREX_RESV_SELECT \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VREX_RESV_SELECT, struct drm_vrex_resv_batch)
#define DRM_IOCTL_VREX_RESV_TRUNCATE \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VREX_RESV_TRUNCATE, struct drm_vrex_resv_truncate)

#if defined(__cplusplus)
}
#endif

#endif /* _VREX_ACCEL_H_ */
