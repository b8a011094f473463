// The C ABI of segments (vrex_hal.h "Segments"): vrex_hal_segment wraps a vrex::Segment. Every
// entry point catches everything; a C caller sees a status code and vrex_hal_last_error() says why.
#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "c_api_internal.hpp"
#include "vrex/segment.hpp"
#include "vrex/vrex_hal.h"

struct vrex_hal_segment {
    vrex::Segment seg;
};

namespace {

using vrex::capi::invalid;

// Writes @ours into the caller's size-prefixed out struct: the bytes both know, zeroes beyond.
template <class T>
std::string write_sized(const T& ours, T* theirs) {
    const std::size_t size = theirs->struct_size;
    if (size < sizeof(std::uint32_t)) return "struct_size " + std::to_string(size) + " is below 4";
    auto* bytes =
        reinterpret_cast<unsigned char*>(theirs);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
    if (size > sizeof(T)) std::memset(bytes + sizeof(T), 0, size - sizeof(T));
    std::memcpy(theirs, &ours, std::min(size, sizeof(T)));
    theirs->struct_size = static_cast<std::uint32_t>(std::min(size, sizeof(T)));
    return {};
}

// Checks a block list (NULL, struct_size, block_size, a larger caller's tail zero).
std::string check_list(const vrex_hal_block_list* l) {
    const std::size_t size = l->struct_size;
    if (size < sizeof(vrex_hal_block_list))  // 0.4, the first version with segments
        return "block list: struct_size " + std::to_string(size) + " is below the " +
               std::to_string(sizeof(vrex_hal_block_list)) + " of version 0.4";
    const auto* bytes = reinterpret_cast<const unsigned char*>(l);  // NOLINT
    for (std::size_t i = sizeof(vrex_hal_block_list); i < size; i++)
        if (bytes[i])
            return "block list: byte " + std::to_string(i) + " past the " +
                   std::to_string(sizeof(vrex_hal_block_list)) + " this library knows is not zero";
    if (l->block_size < sizeof(vrex_hal_block))
        return "block list: block_size " + std::to_string(l->block_size) +
               " is below sizeof(struct vrex_hal_block) " + std::to_string(sizeof(vrex_hal_block));
    if (l->capacity && !l->blocks)
        return "block list: capacity " + std::to_string(l->capacity) + " but blocks is NULL";
    return {};
}

// The first min(capacity, size) blocks into @l, count = size.
void fill_list(const std::vector<vrex::KvBlock>& v, vrex_hal_block_list* l) {
    l->count = static_cast<std::uint32_t>(v.size());
    const std::size_t n = std::min<std::size_t>(l->capacity, v.size());
    for (std::size_t i = 0; i < n; i++) {
        auto* b = reinterpret_cast<vrex_hal_block*>(  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
            reinterpret_cast<unsigned char*>(l->blocks) + i * l->block_size);
        std::memset(b, 0, l->block_size);  // bytes of a newer block struct stay zero
        vrex::capi::block_to_c(v[i], b);
    }
}

}  // namespace

extern "C" {

vrex_hal_status vrex_hal_segment_open(vrex_hal_stream* stream, uint32_t kind, uint32_t first_position,
                                      vrex_hal_segment** out) {
    const char* fn = __func__;
    return vrex::capi::guarded(fn, nullptr, [&] {
        vrex::Stream* s = vrex::capi::stream_of(stream);
        if (auto e = vrex::capi::non_null({{"stream", s}, {"out", out}})) return e;
        if (kind != VREX_HAL_SEGMENT_PROMPT && kind != VREX_HAL_SEGMENT_GENERATED)
            return invalid("unknown segment kind " + std::to_string(kind) +
                           " (VREX_HAL_SEGMENT_PROMPT or _GENERATED)");
        auto seg = s->open_segment(static_cast<vrex::SegmentKind>(kind), first_position);
        if (!seg) return seg.error_info();
        *out = new vrex_hal_segment{std::move(*seg)};
        return vrex::Error{};
    });
}

void vrex_hal_segment_close(vrex_hal_segment* seg) {
    delete seg;
}

vrex_hal_status vrex_hal_segment_get_info(const vrex_hal_segment* seg, vrex_hal_segment_info* info) {
    const char* fn = __func__;
    return vrex::capi::guarded(fn, nullptr, [&] {
        if (auto e = vrex::capi::non_null({{"seg", seg}, {"info", info}})) return e;
        auto blocks = seg->seg.blocks();
        vrex_hal_segment_info o{};
        o.kind = static_cast<std::uint32_t>(seg->seg.kind());
        o.first_position = seg->seg.first_position();
        o.tokens = seg->seg.tokens();
        o.blocks = blocks ? static_cast<std::uint32_t>(blocks->size()) : 0u;
        o.flags = seg->seg.is_open() ? VREX_HAL_SEGMENT_OPEN : 0u;
        o.stream = seg->seg.stream_id();
        if (auto e = write_sized(o, info); !e.empty()) return invalid("segment info: " + e);
        return vrex::Error{};
    });
}

vrex_hal_status vrex_hal_segment_append(vrex_hal_segment* seg, uint32_t tokens, vrex_hal_block_list* out) {
    const char* fn = __func__;
    return vrex::capi::guarded(fn, nullptr, [&] {
        if (!seg) return invalid("seg is NULL");
        if (out) {
            if (auto e = check_list(out); !e.empty()) return invalid(e);
            // All or nothing: a list too small for the answer is refused before anything changes.
            const std::uint64_t need = seg->seg.blocks_touched(tokens);
            if (seg->seg.is_open() && need > out->capacity) {
                out->count = static_cast<std::uint32_t>(need);
                return vrex::Error{std::errc::result_out_of_range,
                                   "appending " + std::to_string(tokens) + " tokens touches " +
                                       std::to_string(need) + " blocks, the list has room for " +
                                       std::to_string(out->capacity)};
            }
        }
        auto v = seg->seg.append(tokens);
        if (!v) return v.error_info();
        if (out) fill_list(*v, out);
        return vrex::Error{};
    });
}

vrex_hal_status vrex_hal_segment_truncate(vrex_hal_segment* seg, uint32_t position, uint32_t* released) {
    const char* fn = __func__;
    return vrex::capi::guarded(fn, nullptr, [&] {
        if (!seg) return invalid("seg is NULL");
        auto r = seg->seg.truncate(position);
        if (!r) return r.error_info();
        if (released) *released = static_cast<std::uint32_t>(r->size());
        return vrex::Error{};
    });
}

vrex_hal_status vrex_hal_segment_blocks(const vrex_hal_segment* seg, vrex_hal_block_list* out) {
    const char* fn = __func__;
    return vrex::capi::guarded(fn, nullptr, [&] {
        if (auto e = vrex::capi::non_null({{"seg", seg}, {"out", out}})) return e;
        if (auto e = check_list(out); !e.empty()) return invalid(e);
        auto v = seg->seg.blocks();
        if (!v) return v.error_info();
        fill_list(*v, out);
        return vrex::Error{};
    });
}

vrex_hal_status vrex_hal_get_segment_stats(vrex_hal_allocator* alloc, vrex_hal_segment_stats* stats) {
    const char* fn = __func__;
    return vrex::capi::guarded(fn, nullptr, [&] {
        auto a = vrex::capi::allocator_of(alloc);
        if (auto e = vrex::capi::non_null({{"alloc", a.get()}, {"stats", stats}})) return e;
        if (stats->struct_size < sizeof(std::uint32_t))
            return invalid("segment stats: struct_size " + std::to_string(stats->struct_size) +
                           " is below 4");
        auto st = a->stats();
        if (!st) return st.error_info();
        vrex_hal_segment_stats o{};
        o.bank_count =
            static_cast<std::uint32_t>(std::min<std::size_t>(st->banks.size(), VREX_HAL_MAX_BANKS));
        o.segments_open = st->segments_open;
        o.blocks = st->segment_blocks;
        o.tokens = st->segment_tokens;
        o.allocations = st->segment_allocations;
        o.releases = st->segment_releases;
        o.in_group = st->segment_in_group;
        for (std::uint32_t b = 0; b < o.bank_count; b++) o.bank_blocks[b] = st->banks[b].segment_blocks;
        (void)write_sized(o, stats);
        return vrex::Error{};
    });
}

}  // extern "C"
