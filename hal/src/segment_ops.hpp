// Segments' private state and the allocator-side operations (vrex/segment.hpp, docs/hal.md
// "Segments"). The state of a segment is shared between its Segment object and the allocator's
// registry, so that destroying the stream can close it while the Segment object lives on.
// Everything here is guarded by KvAllocator::Impl::mu.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vrex/hal.hpp"
#include "vrex/segment.hpp"

namespace vrex {

struct SegmentState {
    std::uint32_t serial = 0;  // allocator-wide number, for messages
    std::uint32_t stream = 0;  // device id of the stream it belongs to
    std::uint64_t token = 0;   // that stream's incarnation (Stream::Impl::token_)
    // The stream, for its current bank group (placement); nullptr once the stream is gone.
    const Stream* owner = nullptr;
    SegmentKind kind = SegmentKind::prompt;
    std::uint32_t first_position = 0;
    std::uint32_t tokens = 0;
    std::vector<std::uint64_t> blocks;  // BlockTable keys, in position order
    bool open = true;
    const char* closed_by = "";  // why it is closed (messages)
};

struct SegmentRegistry {
    std::vector<std::shared_ptr<SegmentState>> open;
    // Segment block ids (kSegmentBlockIdBit set), recycled lowest first like the device's ids, so
    // a stale handle meets a live block with the same id and another generation.
    std::vector<std::uint32_t> free_ids;
    std::uint32_t next_id = kSegmentBlockIdBit | 1u;
    std::uint32_t next_serial = 1;
};

struct Segment::Impl {
    std::shared_ptr<KvAllocator> alloc;
    std::shared_ptr<SegmentState> st;
};

// The allocator side (a friend of KvAllocator). *_locked: the caller holds Impl::mu.
struct SegmentOps {
    static Result<Segment> open(const std::shared_ptr<KvAllocator>& a, const Stream& s, SegmentKind kind,
                                std::uint32_t first_position);
    static Result<std::vector<KvBlock>> append(KvAllocator& a, SegmentState& st, std::uint32_t n);
    static Result<std::vector<ReleasedBlock>> truncate(KvAllocator& a, SegmentState& st,
                                                       std::uint32_t position);
    static Result<std::vector<KvBlock>> blocks(KvAllocator& a, const SegmentState& st);
    static void close(KvAllocator& a, SegmentState& st, const char* why);
    // A stream's destruction: closes its segments.
    static void close_stream_locked(KvAllocator& a, std::uint64_t token);

  private:
    // Drops the segment's reference of blocks [from, end); the released blocks are appended to @out.
    static void release_tail_locked(KvAllocator& a, SegmentState& st, std::size_t from,
                                    std::vector<ReleasedBlock>* out);
    static void close_locked(KvAllocator& a, SegmentState& st, const char* why);
    static Result<KvAllocator::Placement> take_slot_locked(KvAllocator& a, const Stream* s);
    static KvBlock block_locked(KvAllocator& a, const BlockRec& r);
};

}  // namespace vrex
