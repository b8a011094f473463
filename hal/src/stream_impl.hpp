// Stream's private implementation (pimpl): the device protocol of a stream (staging, SHIE inserts
// and lookups, retirement, release records) and its per-stream state. vrex/hal.hpp keeps only the
// public API; AsyncDevice (async_stream.cpp) drives stage_frame()/enter_frame() directly.
#pragma once

#include <drm/vrex_accel.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "vrex/hal.hpp"

namespace vrex {

struct VREX_LOCAL Stream::Impl {
    Impl(std::shared_ptr<KvAllocator> alloc, std::uint32_t id);
    ~Impl();
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;

    // The public calls without their error context (stream_context.cpp adds it).
    Result<FrameInfo> do_begin_frame(const LumaView& luma);
    Result<std::vector<KvBlock>> do_allocate_batch(std::span<const std::uint32_t> regions,
                                                   std::int32_t frame_offset);
    Result<void> do_reuse(std::uint32_t region, const KvBlock& block, std::int32_t frame_offset);
    Result<std::vector<Retrieval>> do_retrieve_batch(std::span<const Query> queries);
    Error hw_1_0_refusal(std::span<const Query> queries, std::size_t start, std::size_t n,
                         std::error_code ec) const;
    Result<void> do_release(std::span<const KvBlock> blocks);
    Result<void> do_publish(std::span<const KvBlock> blocks);
    Result<void> do_set_positions(const KvBlock& block, std::uint32_t first_token, std::uint32_t token_count);
    Result<void> do_pin(const KvBlock& block);
    Result<void> do_unpin(const KvBlock& block);
    Result<KvBlock> do_copy_on_write(const KvBlock& block, std::uint32_t region, std::int32_t frame_offset);
    Result<FrameEnd> do_end_frame();
    Result<int> do_export_dmabuf(const KvBlock& block);
    Result<KvBlock> index_imported(const ImportedMemory& memory, std::uint64_t offset, std::uint32_t region,
                                   std::int32_t frame_offset);
    Result<KvBlock> index_host_tier(const ImportedMemory& memory, std::uint64_t offset, std::uint32_t region,
                                    std::uint32_t frame, const Fingerprint& fp);
    // The SHIE insert of a block at @offset of @memory, and its record (imported, unpublished).
    Result<KvBlock> insert_imported(const ImportedMemory& memory, std::uint64_t offset, std::uint32_t region,
                                    std::int32_t frame_offset, const Fingerprint& fp, std::uint32_t flags,
                                    const std::string& what);
    void on_release(ReleaseCallback cb);
    Result<int> release_event_fd();
    // "<what> (stream S, frame F)": the context every error of this stream starts with.
    std::string where(std::string_view what) const;

    // begin_frame() up to the submit: checks, plane staged; the returned request is not submitted.
    Result<drm_vrex_frame_submit> stage_frame(const LumaView& luma);
    // begin_frame() after a successful submit (@f carries the ioctl's out fields).
    FrameInfo enter_frame(const drm_vrex_frame_submit& f);
    // A failure decided without the device: device_lost instead when the device is gone.
    std::error_code local_error(std::error_code ec);
    // The block a lookup hit, with a reference when another stream owns it; nullopt (a miss) when
    // the incarnation the device found is not one the table knew before the lookup started
    // (@births: BlockTable::births() read before it), when it went between the lookup and the
    // reference (a concurrent release on its owner's thread), or when it is another stream's and
    // not published.
    std::optional<KvBlock> block_from_lookup(const drm_vrex_shie_candidate& it, std::uint32_t region,
                                             std::uint64_t births);
    // DRM_VREX_SHIE_RETIRE of @remove (plus the stream's zombies); the device's release records.
    Result<std::vector<drm_vrex_released_block>> retire(std::span<const std::uint32_t> remove);
    // Applies device release records: references dropped, memory freed, released_ extended,
    // callback and event fd notified. Records of blocks in @rolled_back only free their slot.
    void apply_releases(std::span<const drm_vrex_released_block> recs, bool pressure,
                        std::span<const std::uint32_t> rolled_back = {});
    // Makes room under memory pressure (zombies, then LRU); false when nothing could be evicted.
    Result<bool> evict_one();
    void notify(std::span<const ReleasedBlock> released);

    std::shared_ptr<KvAllocator> alloc_;
    std::uint32_t id_;
    // This stream's incarnation: unique for the allocator's lifetime, unlike the device's stream id,
    // which a stream created after this one's destruction may get.
    std::uint64_t token_;
    bool publish_at_end_frame_ = true;  // StreamOptions::publish_at_end_frame
    // Blocks this stream made and has not published (BlockTable keys): end_frame() publishes them
    // with publish_at_end_frame_.
    std::vector<std::uint64_t> unpublished_;
    // Host-tier blocks of this stream by (import handle, offset): the slot's current block, retired
    // before another block is indexed there (index_host_tier).
    std::unordered_map<std::uint64_t, std::uint64_t> host_slots_;
    bool in_frame_ = false;
    FrameInfo frame_;
    std::uint32_t staging_handle_ = 0;
    std::uint64_t staging_size_ = 0;
    struct State;  // references, pending releases, notification (stream.cpp)
    std::unique_ptr<State> st_;
};

}  // namespace vrex
