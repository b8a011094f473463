// libvrex-hal engine API: a KV-block allocator for inference engines on top of the Backend seam.
//
// Threading (docs/hal.md): Device and KvAllocator are thread-safe. A Stream is used by one thread at
// a time; different streams may be used in parallel from different threads. Nothing throws: every
// fallible call returns vrex::Result (errno values in std::generic_category, HAL conditions such as
// vrex::errc::device_lost in vrex::hal_category()). Once the device is gone, every Stream and
// KvAllocator call that can fail reports errc::device_lost (also calls that would fail on local
// state, such as begin_frame() inside a frame); destroying them stays clean.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vrex/errors.hpp"
#include "vrex/export.h"
#include "vrex/result.hpp"

namespace vrex {

// ---- Device ----------------------------------------------------------------------------------

enum class BackendChoice { automatic, emulated, kernel };

// Options for opening a backend. Fields a backend does not use are ignored.
struct BackendOptions {
    // Kernel: a specific node ("/dev/accel/accel0"); empty = first vrex device found.
    std::string node;
    // Emulation: device geometry (0 = the reference model's default: 16 banks of 4 MiB, 2 banks a
    // group, 5 zombie frames). Banks x bank size is address space, backed where KV is written. Out of
    // range: EINVAL naming the field and the valid range (limits below).
    std::uint32_t emu_banks = 0;          // 1..kEmuMaxBanks
    std::uint64_t emu_bank_size = 0;      // kEmuMinBankSize..kEmuMaxBankSize, a multiple of 4096
    std::uint32_t emu_group_banks = 0;    // divides the banks (default 2, 1 for an odd bank count)
    std::uint32_t emu_zombie_frames = 0;  // 1..kEmuMaxZombieFrames

    static constexpr std::uint32_t kEmuMaxBanks = 64;
    static constexpr std::uint64_t kEmuMinBankSize = 64 * 1024;
    static constexpr std::uint64_t kEmuMaxBankSize = std::uint64_t{64} << 30;
    static constexpr std::uint64_t kEmuMaxBytes = std::uint64_t{1} << 40;  // banks x bank size
    static constexpr std::uint32_t kEmuMaxZombieFrames = 255;
};

struct DeviceOptions {
    // automatic: VREX_BACKEND (auto|kernel|emulated) if set, else the kernel backend when a vrex
    // device exists, else the emulation. emulated/kernel force that backend (the environment is
    // then ignored).
    BackendChoice backend = BackendChoice::automatic;
    BackendOptions backend_options;
};

// Parses "auto", "kernel", "emulated" (also "emu"); errc::unknown_backend for anything else.
VREX_API Result<BackendChoice> parse_backend_choice(std::string_view name);

// A backend built into this library, in auto-selection order (kernel first, then the emulation).
struct BackendAvailability {
    std::string name;        // "kernel", "emulated": what parse_backend_choice() accepts
    bool available = false;  // Device::open() with this backend can succeed here
};
VREX_API std::vector<BackendAvailability> list_backends();

// The vrex device nodes of this machine (/dev/accel/accelN, /dev/dri/renderDN), accel nodes first:
// udev, else a scan of /dev asking each node's DRM driver name. Empty when there is none.
VREX_API std::vector<std::string> find_device_nodes();

// What the device can do.
struct DeviceCaps {
    bool fcc = false;            // frame fingerprinting (FCC)
    bool shie = false;           // the SHIE retrieval table
    bool pooled = false;         // pooled streams (StreamOptions::pooled)
    bool predict_slots = false;  // predicted-slot prefetch
    bool resv = false;           // the ReSV unit (vrex/resv.hpp)
};

// Hardware revisions (DeviceInfo::hw_version: major << 16 | minor). 1.1 added similarity queries by
// tier and with candidates (Query::in_tier(), nearest(): a 1.0 device refuses a batch holding one,
// EOPNOTSUPP naming the revision, and runs none of it) and FrameInfo::region_motion (a 1.0 device
// reports kRegionMotionUnknown in every region). docs/hardware.md "Hardware 1.0".
inline constexpr std::uint32_t kHwVersion1_0 = 0x0001'0000;
inline constexpr std::uint32_t kHwVersion1_1 = 0x0001'0001;

// The device's identity, geometry and limits.
struct DeviceInfo {
    std::uint32_t hw_id = 0;
    std::uint32_t hw_version = 0;  // kHwVersion1_0, kHwVersion1_1
    DeviceCaps caps;
    std::uint32_t bank_count = 0;   // banks of device memory
    std::uint64_t bank_size = 0;    // bytes per bank
    std::uint32_t group_banks = 0;  // banks per bank group
    std::uint32_t max_streams = 0;
    std::uint32_t shie_capacity = 0;   // SHIE entries
    std::uint32_t block_capacity = 0;  // KV blocks the device tracks
    std::uint32_t zombie_frames = 0;   // frames a block may stay cold before it is released
    std::uint32_t max_batch = 0;       // items per device command
    std::uint32_t fcc_min_dim = 0;     // luma planes: min / max width and height
    std::uint32_t fcc_max_dim = 0;
    bool simulated = false;  // the kernel's simulated device or the emulation, not silicon
};

// The device's own counters (all users of the device, since probe or reset).
struct DeviceStats {
    std::uint64_t lookups = 0;
    std::uint64_t exact_hits = 0;
    std::uint64_t approx_hits = 0;
    std::uint64_t misses = 0;
    std::uint64_t evictions = 0;
    std::uint64_t bank_conflicts = 0;
    std::uint64_t inserts = 0;
    std::uint64_t removes = 0;
    std::uint64_t frames = 0;
    std::uint64_t live_entries = 0;
    std::uint64_t live_blocks = 0;
    std::uint64_t cmd_errors = 0;
};

// Occupancy of one bank (all users of the device).
struct BankUsage {
    std::uint64_t bo_bytes = 0;  // buffer memory placed in the bank
    std::uint64_t kv_bytes = 0;  // of which KV blocks
    std::uint32_t kv_blocks = 0;
};

struct DeviceBanks {
    std::vector<BankUsage> banks;   // index = bank
    std::vector<bool> group_owned;  // index = bank group: a stream or pool holds the group
};

namespace detail {
struct DeviceAccess;  // hal/src/device_impl.hpp
}

class VREX_API Device {
  public:
    static Result<std::shared_ptr<Device>> open(const DeviceOptions& options = {});
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    std::string_view backend_name() const noexcept;  // "kernel" or "emulated"
    std::string description() const;                 // node or emulated geometry
    const DeviceInfo& info() const noexcept;
    Result<DeviceStats> stats();
    Result<DeviceBanks> banks();
    // One 32-bit register of the device's register window (diagnostics, docs/hw/registers.md):
    // a 4-byte aligned offset inside the window, else EINVAL. The kernel backend needs root
    // (EACCES/EPERM otherwise; EOPNOTSUPP without debugfs).
    Result<std::uint32_t> read_register(std::uint32_t offset);

    struct Impl;
    class Key {
        friend struct detail::DeviceAccess;
        Key() = default;
    };
    Device(Key, std::unique_ptr<Impl> impl);

  private:
    friend struct detail::DeviceAccess;
    std::unique_ptr<Impl> impl_;
};

// ---- Model geometry --------------------------------------------------------------------------

// Element type of the KV. vrex stores bytes; the type fixes the element size and tells the engines
// sharing blocks how to read them. fp8: the OCP 8-bit floats E4M3 (bias 7, no infinities) and E5M2.
enum class DType : std::uint32_t { fp16 = 0, bf16 = 1, fp32 = 2, int8 = 3, fp8_e4m3 = 4, fp8_e5m2 = 5 };

VREX_API std::uint32_t dtype_size(DType t) noexcept;     // 0 for an unknown value
VREX_API std::string_view dtype_name(DType t) noexcept;  // "fp16", ..., "fp8_e5m2"; "" for an unknown value

// Quantisation scales stored in every block after its KV (8-bit dtypes: int8, fp8_*): one fp32 (host
// order) per (layer, K/V), per (layer, K/V, kv_head) or per (layer, K/V, kv_head, token). They are
// part of the block, so sharing, reuse, copy_on_write() and dma-buf export carry them with the KV.
enum class ScaleLayout : std::uint32_t { none = 0, per_layer = 1, per_head = 2, per_token = 3 };

struct VREX_API ModelGeometry {
    std::uint32_t layers = 0;
    std::uint32_t kv_heads = 0;
    std::uint32_t head_dim = 0;
    DType dtype = DType::fp16;
    std::uint32_t tokens_per_block = 0;
    ScaleLayout scales = ScaleLayout::none;

    static constexpr std::uint64_t kMinBlockBytes = 16 * 1024;

    static constexpr std::uint64_t kBlockAlign = 64;

    // Bytes of one block: the KV (K and V for every layer, head, channel and token of the block),
    // then the scales, padded to kBlockAlign. errc::bad_geometry, its context naming the field and
    // its valid range, for a zero field, an unknown dtype or scale layout, scales with a dtype that
    // is not 8-bit, a block over 4 GiB, KV below kMinBlockBytes or not a multiple of kBlockAlign
    // (block bases are kBlockAlign-aligned: docs/hal.md "KV memory contract").
    Result<std::uint64_t> block_bytes() const;

    // K and V alone, at offset 0 of the block (unchecked: call block_bytes() first).
    std::uint64_t kv_bytes() const noexcept {
        return std::uint64_t{2} * layers * kv_heads * head_dim * tokens_per_block * dtype_size(dtype);
    }
    // Scales a block holds (0 without).
    std::uint64_t scale_count() const noexcept {
        const std::uint64_t per_layer = 2 * std::uint64_t{layers};
        switch (scales) {
            case ScaleLayout::none:
                return 0;
            case ScaleLayout::per_layer:
                return per_layer;
            case ScaleLayout::per_head:
                return per_layer * kv_heads;
            case ScaleLayout::per_token:
                return per_layer * kv_heads * tokens_per_block;
        }
        return 0;
    }
    // Byte offset in the block of the fp32 scale of (@layer, @kv, @head, @token); the indices a
    // layout does not have are ignored (per_layer: head and token, per_head: token).
    std::uint64_t scale_offset(std::uint32_t layer, std::uint32_t kv, std::uint32_t head = 0,
                               std::uint32_t token = 0) const noexcept {
        std::uint64_t i = std::uint64_t{layer} * 2 + kv;
        if (scales == ScaleLayout::per_head || scales == ScaleLayout::per_token) i = i * kv_heads + head;
        if (scales == ScaleLayout::per_token) i = i * tokens_per_block + token;
        return kv_bytes() + i * sizeof(float);
    }

    // The fixed layout inside a block: [layer][K=0,V=1][kv_head][token][head_dim], elements of
    // dtype tightly packed (no padding). Byte offset of element 0 of the head_dim vector of
    // (@layer, @kv, @head, @token); the caller keeps the indices in range.
    std::uint64_t element_offset(std::uint32_t layer, std::uint32_t kv, std::uint32_t head,
                                 std::uint32_t token) const noexcept {
        const std::uint64_t row = std::uint64_t{head_dim} * dtype_size(dtype);  // one token of one head
        return (((std::uint64_t{layer} * 2 + kv) * kv_heads + head) * tokens_per_block + token) * row;
    }
};

// ---- Frames, blocks, retrievals --------------------------------------------------------------

struct VREX_API Fingerprint {
    std::uint64_t w[2] = {0, 0};
    std::uint32_t distance(const Fingerprint& o) const noexcept;
    bool operator==(const Fingerprint&) const = default;
};

// One luma (Y) plane in host memory: width x height bytes, rows @stride bytes apart.
struct LumaView {
    const std::uint8_t* data = nullptr;
    std::uint32_t width = 0;
    std::uint32_t height = 0;
    std::uint32_t stride = 0;
};

struct FrameInfo {
    Fingerprint fp;
    std::uint32_t frame = 0;       // the stream's frame number
    std::uint32_t group = 0;       // bank group the frame's KV blocks go to
    std::uint32_t bank_first = 0;  // banks of the group
    std::uint32_t bank_count = 0;
    bool opened_group = false;  // a new scene opened (or took over) the group
    bool conflict = false;      // the group was taken from another pool
    // Per SHIE region (the 4x4 grid, region r at row r / 4, column r % 4): the mean motion-vector
    // length the FCC's search found against the stream's previous frame, 1/16 px of its working
    // grid; 0 iff nothing in the region moved (a stream's first frame: all 0), at most 90.
    // kRegionMotionUnknown in every region: the device did not report it (a kernel before uAPI 1.5,
    // a hardware 1.0 device).
    std::array<std::uint8_t, 16> region_motion{};
};
inline constexpr std::uint8_t kRegionMotionUnknown = 255;

// A handle to one KV block: (id, generation). The device recycles ids; the generation tells the
// incarnations apart, so a call with a handle whose block is gone (released, recycled) fails with
// errc::stale_handle and never reaches another block.
//
// Memory lifetime (docs/hal.md "Sharing"): a block's memory lives while it is referenced. Its owner
// (the stream that allocated it) holds a reference until the device releases the block (release(),
// zombie aging, pressure eviction, stream destruction). Another stream that retrieves or reuses the
// block takes a reference held until that stream's next end_frame() (or its release() of the
// block); pin() holds one until unpin(). @view is valid while a reference is held.
//
// Shared blocks are read-only: @data (the writable view) is set only when the calling stream owns
// the block, has not published it (Stream::publish) and no other stream references it; otherwise it
// is empty and copy_on_write() gives a private, writable copy. Other streams see a block only once
// its owner published it (docs/hal.md "Concurrency and publication").
struct KvBlock {
    std::uint32_t id = 0;             // device block id (for reuse / release)
    std::uint32_t generation = 0;     // incarnation of @id (0 = never valid)
    std::span<std::byte> data;        // writable host view, block_bytes() long; empty when shared
    std::span<const std::byte> view;  // read-only host view, always set for a live block
    bool shared = false;              // read-only: another stream owns or references it, or published
    std::uint32_t bank = 0;
    std::uint32_t handle = 0;  // BO of the block (dma-buf export: Stream::export_dmabuf)
    std::uint64_t offset = 0;  // byte offset of the block in the BO
    std::uint32_t frame = 0;   // frame the SHIE entry was made for
    std::uint32_t region = 0;
    // Position metadata (Stream::set_positions): the sequence position of the block's first token
    // and how many of its tokens_per_block slots hold tokens. 0, 0 until set.
    std::uint32_t first_token = 0;
    std::uint32_t token_count = 0;
};

enum class ReleaseReason : std::uint32_t {
    zombie = 1,    // cold for more than zombie_frames frames (the device's aging rule)
    removed = 2,   // release() asked for it
    pressure = 3,  // evicted to make room (AllocatorOptions::evict_under_pressure)
};

// A block the device released for a stream. Its handle (id, generation) is stale from now on. The
// memory goes back to the allocator unless another stream still references it (@memory_freed).
struct ReleasedBlock {
    std::uint32_t id = 0;
    std::uint32_t generation = 0;
    ReleaseReason reason = ReleaseReason::zombie;
    std::uint32_t bank = 0;
    bool memory_freed = true;
};

// What end_frame() released: the blocks released since the previous end_frame() (pressure
// evictions during the frame, then the frame's requested releases and zombies). count ==
// released.size().
struct FrameEnd {
    std::uint32_t count = 0;
    std::vector<ReleasedBlock> released;
};

// Called on the stream's thread with every batch of releases (end_frame, pressure eviction).
using ReleaseCallback = std::function<void(std::span<const ReleasedBlock>)>;

struct Retrieval {
    bool hit = false;
    bool approximate = false;  // similarity hit at distance > 0
    std::uint32_t distance = 0;
    std::uint32_t frame = 0;   // frame of the entry found
    std::uint32_t stream = 0;  // device stream id of the entry (pool scope: may be another stream)
    Fingerprint fp;            // fingerprint of the entry found
    KvBlock block;             // valid when hit
    // Set in Query::candidates answers only: the entry is a host-tier entry (Stream::index_host_tier).
    bool host_tier = false;
    // A similarity query with Query::candidates = N: up to N entries within the radius, nearest first
    // (smallest distance, then the most recent frame); candidates[0] is the hit above. Each is a hit
    // (no nested candidates) and its block counts as used, as the nearest's does.
    std::vector<Retrieval> candidates;
};

enum class Scope { stream, pool };

// Which SHIE entries a similarity query may return: every tier, the device's own blocks, or the
// host tier (demoted copies, Stream::index_host_tier).
enum class Tier { any, device, host };

// Most answers one similarity query returns (Query::candidates; the kernel interface's cap).
inline constexpr std::uint32_t kMaxCandidates = 8;

// One lookup of a batch: temporal (offset -3..+2) or similarity (fp within radius).
struct VREX_API Query {
    enum class Kind { temporal, similar } kind = Kind::temporal;
    std::uint32_t region = 0;
    std::int32_t frame_offset = 0;  // temporal
    Fingerprint fp;                 // similar
    std::uint32_t radius = 20;      // similar, 0..31
    Scope scope = Scope::stream;    // similar
    bool past_only = false;         // similar: frames before the current one only
    Tier tier = Tier::any;          // similar: the entries it may return
    // similar: 0, the nearest entry only; 1..kMaxCandidates: also Retrieval::candidates, up to this
    // many, nearest first (EINVAL above the cap, or on a temporal query). A tier other than any, or
    // more than 1 candidate: hardware 1.1 (kHwVersion1_1; a 1.0 device refuses the batch, EOPNOTSUPP).
    std::uint32_t candidates = 0;

    static Query temporal(std::uint32_t region, std::int32_t offset);
    static Query similar(std::uint32_t region, const Fingerprint& fp, std::uint32_t radius,
                         Scope scope = Scope::stream, bool past_only = false);
    // This similarity query restricted to @t, returning up to @n candidates (see above).
    Query& in_tier(Tier t) noexcept;
    Query& nearest(std::uint32_t n) noexcept;
};

struct BankStats {
    std::uint64_t resident_blocks = 0;  // live KV blocks of this allocator in the bank
    std::uint64_t resident_bytes = 0;
    std::uint64_t slab_bytes = 0;      // device memory this allocator holds in the bank
    std::uint64_t segment_blocks = 0;  // of resident_blocks, those open segments hold
};

struct Stats {
    // This allocator's view (all its streams).
    std::uint64_t hits = 0;  // exact hits (temporal, or similarity at distance 0)
    std::uint64_t approx_hits = 0;
    std::uint64_t misses = 0;
    std::uint64_t evictions = 0;           // zombie blocks released at end_frame
    std::uint64_t pressure_evictions = 0;  // blocks evicted to make room (evict_under_pressure)
    std::uint64_t deferred_frees = 0;      // released blocks whose memory another reference kept
    std::uint64_t removed = 0;             // blocks released on request
    std::uint64_t allocations = 0;
    std::uint64_t fallback_allocations = 0;  // placed outside the frame's bank group (group full)
    std::uint64_t slabs_created = 0;         // slab BOs created / destroyed since the allocator was made
    std::uint64_t slabs_released = 0;
    std::uint64_t resident_blocks = 0;  // frame and segment blocks
    std::uint64_t resident_bytes = 0;
    // Segments (vrex/segment.hpp), apart from the frame counters above (allocations, fallbacks,
    // evictions count frame blocks only); segment blocks are part of resident_blocks/bytes.
    std::uint64_t segments_open = 0;
    std::uint64_t segment_blocks = 0;  // blocks open segments hold
    std::uint64_t segment_tokens = 0;  // positions open segments hold
    std::uint64_t segment_allocations = 0;
    std::uint64_t segment_releases = 0;  // blocks truncate/close (or a stream's end) released
    std::uint64_t segment_in_group = 0;  // placed in the stream's bank group: no room outside it
    std::vector<BankStats> banks;        // index = bank
    DeviceStats device;                  // the device's own counters (device-wide)
};

struct AllocatorOptions {
    // Device memory is taken in slabs of this many blocks (one BO each, one bank each). 0 (the
    // default): 16, or as many as fit in one bank when fewer do (large models: a 2 MiB Llama-3-8B
    // block gives 2 a slab on 4 MiB banks). An explicit value that does not fit a bank is EINVAL.
    std::uint32_t blocks_per_slab = 0;
    // Empty slabs kept (allocator-wide) when a slab's last block is freed; beyond these the slab's
    // BO is destroyed at once, so held memory follows the live blocks instead of every bank group's
    // high-water mark. One spare absorbs the free-then-refill pattern of consecutive frames.
    std::uint32_t spare_slabs = 1;
    // When device memory runs out during allocate(), evict instead of failing with ENOSPC: first the
    // stream's zombies (blocks already cold past zombie_frames), then its least recently used block
    // that is unpinned, referenced by no other stream and not allocated or used in the current
    // frame. Only the allocating stream's own blocks are evicted. Evictions are reported like any
    // release (callback, event fd, the next end_frame()) with ReleaseReason::pressure.
    bool evict_under_pressure = false;
    // Block stride rounded up to the page size: every KvBlock::offset is page-aligned, so mmap() of the
    // slab's dma-buf at KvBlock::offset maps exactly one block. KvAllocator::block_bytes() and the
    // views are then the stride (the tail past geometry().block_bytes() is padding). Without it, a
    // block is page-aligned only when its size is a page multiple (every real model geometry).
    bool page_aligned_blocks = false;
    // A fixed KV pool instead of slabs (docs/hal.md "Fixed KV pool"). 0 (the default): device memory
    // is taken in slabs on demand, as above. N > 0: create() reserves N blocks in one BO (one bank,
    // one dma-buf: KvAllocator::pool(), export_pool_dmabuf()); every block then lies at a stable
    // address in it (KvBlock::offset = pool index x block_bytes()), nothing is created or destroyed
    // while the allocator lives, and once the pool is full allocate() evicts (evict_under_pressure)
    // or fails with ENOSPC. blocks_per_slab and spare_slabs do not apply. EINVAL, naming the
    // largest N, when N blocks do not fit one bank.
    std::uint32_t fixed_pool_blocks = 0;
};

// The fixed KV pool of an allocator (AllocatorOptions::fixed_pool_blocks): one BO, @blocks blocks
// of @block_bytes at offsets i x block_bytes, i = 0..blocks-1.
struct KvPool {
    std::uint32_t handle = 0;  // BO of the pool (the same for every block)
    std::uint32_t bank = 0;
    std::uint32_t blocks = 0;
    std::uint64_t block_bytes = 0;
    std::uint64_t bytes = 0;  // blocks x block_bytes
};

struct StreamOptions {
    bool pooled = false;     // share bank groups and pool-scoped lookups with streams of @pool
    std::uint32_t pool = 0;  // must be 0 unless pooled
    // end_frame() publishes the blocks this stream allocated (or copied, or indexed) and has not
    // published yet, as Stream::publish() would: for engines that write a frame's KV before its
    // end_frame(). false: only Stream::publish() does, for engines that fill blocks later.
    bool publish_at_end_frame = true;
};

class KvAllocator;
class BlockTable;
struct BlockRec;
class ImportedMemory;  // vrex/imported_memory.hpp
class Segment;         // vrex/segment.hpp
enum class SegmentKind : std::uint32_t;
struct SegmentOps;

// ---- Stream ----------------------------------------------------------------------------------

class VREX_API Stream {
  public:
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    std::uint32_t id() const noexcept;
    bool in_frame() const noexcept;
    const FrameInfo& frame() const noexcept;

    // Copies the plane into the stream's staging BO, fingerprints it (FCC) and places the frame in
    // a bank group. EBUSY while a frame is open (end_frame() first).
    Result<FrameInfo> begin_frame(const LumaView& luma);

    // A new KV block for (current frame + @frame_offset, @region), in the frame's bank group,
    // indexed by the frame's fingerprint. allocate/reuse/release/end_frame need an open frame
    // (errc::not_in_frame); retrievals work between frames too.
    Result<KvBlock> allocate(std::uint32_t region, std::int32_t frame_offset = 0);
    Result<std::vector<KvBlock>> allocate_batch(std::span<const std::uint32_t> regions,
                                                std::int32_t frame_offset = 0);
    // Points (current frame + @frame_offset, @region) at an existing block (no new memory).
    Result<void> reuse(std::uint32_t region, const KvBlock& block, std::int32_t frame_offset = 0);

    Result<Retrieval> retrieve_temporal(std::uint32_t region, std::int32_t frame_offset);
    Result<Retrieval> retrieve_similar(std::uint32_t region, const Fingerprint& fp, std::uint32_t radius,
                                       Scope scope = Scope::stream, bool past_only = false);
    Result<std::vector<Retrieval>> retrieve_batch(std::span<const Query> queries);

    // A block this stream owns: released (with its SHIE entries) at the next end_frame(); needs an
    // open frame. A block another stream owns: this stream's reference is dropped now. A stale
    // handle: errc::stale_handle; a block this stream neither owns nor references: ENOENT.
    Result<void> release(const KvBlock& block);
    // release() of every block, all or nothing: every handle is checked first (stale, not this
    // stream's, owned outside a frame) and on any failure nothing is released.
    Result<void> release_batch(std::span<const KvBlock> blocks);

    // Commits blocks this stream owns once their KV is written (docs/hal.md "Concurrency and
    // publication"): until then no other stream sees them (their lookups miss them; reuse, pin,
    // copy_on_write and export_dmabuf of them fail with EPERM); from then on they are read-only for
    // every stream, the owner included (copy_on_write gives a writable copy), and other streams'
    // lookups may return them. Publishing a published block again does nothing. All or nothing:
    // EPERM for a block of another stream, errc::stale_handle for a released one, EINVAL for a
    // segment block, and nothing is published.
    Result<void> publish(const KvBlock& block);
    Result<void> publish_batch(std::span<const KvBlock> blocks);

    // Records the positions @block's KV holds (first token's position, tokens filled, at most
    // tokens_per_block); every later retrieval of the block returns them. The owner only
    // (EPERM otherwise), EINVAL for token_count > tokens_per_block, errc::stale_handle.
    Result<void> set_positions(const KvBlock& block, std::uint32_t first_token, std::uint32_t token_count);

    // Keeps @block's memory (and views) alive until unpin(), even after the device releases it,
    // and exempts it from pressure eviction. Pins nest. errc::stale_handle for a stale handle.
    Result<void> pin(const KvBlock& block);
    Result<void> unpin(const KvBlock& block);  // ENOENT when this stream has no pin on it

    // A writable block with @block's contents: @block itself when this stream is its sole owner and
    // has not published it, else a new block for (current frame + @frame_offset, @region) holding a
    // copy. EPERM for another stream's unpublished block.
    Result<KvBlock> copy_on_write(const KvBlock& block, std::uint32_t region, std::int32_t frame_offset = 0);

    // Ends the frame: requested releases, then zombies (cold for more than zombie_frames frames)
    // are released with their SHIE entries; their memory returns to the allocator once no other
    // stream references it. References this stream took during the frame are dropped. Returns
    // every block released since the previous end_frame().
    Result<FrameEnd> end_frame();

    // Release notification: @cb runs on this stream's thread for every batch of releases
    // (replaces the previous callback; an empty function removes it).
    void on_release(ReleaseCallback cb);
    // An eventfd (owned by the stream, EFD_NONBLOCK) whose counter grows by the number of blocks
    // released: poll it, or wait on it with asio::posix::stream_descriptor, for async users.
    Result<int> release_event_fd();

    // dma-buf of the BO holding @block (caller owns the fd); the block is at block.offset in it.
    Result<int> export_dmabuf(const KvBlock& block);

    // Indexes the block_bytes() at @offset of engine-owned @memory (vrex/imported_memory.hpp) for
    // (current frame + @frame_offset, @region) under the frame's fingerprint; no vrex memory is
    // taken. EINVAL (with context) for an offset not a multiple of ModelGeometry::kBlockAlign, a
    // block past the buffer's end, or memory imported by another allocator.
    Result<KvBlock> index_imported(const ImportedMemory& memory, std::uint64_t offset, std::uint32_t region,
                                   std::int32_t frame_offset = 0);
    // The host tier (docs/hal.md "Host-tier entries"): indexes the block_bytes() at @offset of
    // @memory -- the copy of a block demoted to host memory -- for (@frame, @region) under @fp (the
    // fingerprint the engine chooses: that of the frame which computed the block), so similarity
    // lookups keep finding it. @frame is any frame of the stream up to the current one. The device
    // never ages such a block (no zombie release): it stays until this stream indexes another
    // block at the same offset -- the old one is retired first, its entry gone before the new one
    // is inserted, so the tier holds at most memory.size() / block_bytes() entries -- or releases
    // it, or ends. EINVAL (with context) as index_imported, and for @frame past the current one;
    // EBUSY when a block that is not this stream's host-tier block sits at @offset; not_in_frame
    // outside a frame; EINVAL from a vrex.ko before uAPI 1.4.
    Result<KvBlock> index_host_tier(const ImportedMemory& memory, std::uint64_t offset, std::uint32_t region,
                                    std::uint32_t frame, const Fingerprint& fp);
    // A segment for non-visual tokens from position @first_position on (vrex/segment.hpp).
    Result<Segment> open_segment(SegmentKind kind, std::uint32_t first_position = 0);

    class Key {
        friend class KvAllocator;
        Key() = default;
    };
    Stream(Key, std::shared_ptr<KvAllocator> alloc, std::uint32_t id);

    // State and the device protocol: hal/src/stream_impl.hpp.
    struct Impl;

  private:
    friend class AsyncDevice;  // engine-level async (vrex/async.hpp) splits begin_frame in two
    friend class KvAllocator;
    friend struct SegmentOps;  // a segment belongs to the stream's incarnation
    std::unique_ptr<Impl> impl_;
};

// ---- KvAllocator -----------------------------------------------------------------------------

class VREX_API KvAllocator : public std::enable_shared_from_this<KvAllocator> {
  public:
    static Result<std::shared_ptr<KvAllocator>> create(std::shared_ptr<Device> device,
                                                       const ModelGeometry& geometry,
                                                       const AllocatorOptions& options = {});
    ~KvAllocator();
    KvAllocator(const KvAllocator&) = delete;
    KvAllocator& operator=(const KvAllocator&) = delete;

    Result<std::unique_ptr<Stream>> create_stream(const StreamOptions& options = {});

    std::uint64_t block_bytes() const noexcept { return block_bytes_; }
    const ModelGeometry& geometry() const noexcept { return geometry_; }
    // The options in effect (blocks_per_slab resolved).
    const AllocatorOptions& options() const noexcept { return options_; }
    Device& device() noexcept { return *device_; }
    Result<Stats> stats();

    // PRIME import of an engine's dma-buf (@dmabuf_fd stays the caller's; vrex keeps a reference
    // of its own). EBADF / EINVAL (not a dma-buf; the emulation takes any mmap-able fd of whole
    // pages), EINVAL for a dma-buf of this device's own vrex memory.
    Result<std::unique_ptr<ImportedMemory>> import_memory(int dmabuf_fd);

    // The fixed pool (AllocatorOptions::fixed_pool_blocks); ENOENT when this allocator uses slabs.
    Result<KvPool> pool();
    // A dma-buf of the whole pool (the caller owns the fd; every call hands out a dup of one
    // buffer): import it into the engine once, address block i at i x block_bytes(). ENOENT
    // without a pool.
    Result<int> export_pool_dmabuf();
    // The index of @block in the pool. ENOENT without a pool, EINVAL (with the block's BO and the
    // pool's) for a block outside it (a segment or imported block is still in the pool when its
    // memory is), errc::stale_handle for a released block.
    Result<std::uint32_t> pool_index(const KvBlock& block);

    class Key {
        friend class KvAllocator;
        Key() = default;
    };
    KvAllocator(Key, std::shared_ptr<Device> device, const ModelGeometry& geometry, std::uint64_t block_bytes,
                const AllocatorOptions& options);

  private:
    friend class Stream;
    friend struct Stream::Impl;
    friend struct SegmentOps;  // hal/src/segment_ops.hpp
    friend class ImportedMemory;
    struct Placement {
        std::uint32_t handle;
        std::uint64_t offset;
        std::uint32_t bank;
        std::span<std::byte> data;
    };

    // A free block slot in banks [first, first + count), else anywhere (counted as a fallback).
    VREX_LOCAL Result<Placement> take_slot(std::uint32_t bank_first, std::uint32_t bank_count);
    // Frees a slot; an empty slab beyond options_.spare_slabs is destroyed.
    VREX_LOCAL void give_slot(std::uint32_t handle, std::uint64_t offset);
    VREX_LOCAL void give_slot_locked(std::uint32_t handle, std::uint64_t offset);  // callers hold impl_->mu
    VREX_LOCAL Result<Placement> new_slab_slot(std::uint64_t bank_mask);           // callers hold impl_->mu
    VREX_LOCAL Result<void> reserve_pool();                 // create(): the fixed pool's BO
    VREX_LOCAL void release_empty_slab(std::size_t index);  // callers hold impl_->mu
    VREX_LOCAL std::optional<Placement> view_locked(std::uint32_t handle,
                                                    std::uint64_t offset);  // callers hold impl_->mu
    // Frees @r's slot and forgets it when nothing references it any more (@r is gone then).
    VREX_LOCAL bool free_if_unreferenced_locked(BlockRec& r);  // callers hold impl_->mu
    VREX_LOCAL void count_lookup(bool hit, bool approximate);

    std::shared_ptr<Device> device_;
    ModelGeometry geometry_;
    std::uint64_t block_bytes_;
    AllocatorOptions options_;
    // Lock, slabs, statistics and the block table (generations, references): hal/src/kv_allocator_impl.hpp.
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace vrex
