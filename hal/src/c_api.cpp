// The C ABI over the C++ engine API. Every entry point catches everything: a C caller only ever
// sees a status code.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <string>

#include "c_api_internal.hpp"
#include "vrex/hal.hpp"
#include "vrex/segment.hpp"
#include "vrex/vrex_hal.h"

struct vrex_hal_device {
    std::shared_ptr<vrex::Device> dev;
    std::string backend;
};
struct vrex_hal_allocator {
    std::shared_ptr<vrex::KvAllocator> alloc;
};
struct vrex_hal_stream {
    std::unique_ptr<vrex::Stream> stream;
    std::vector<vrex_hal_released> last_released;  // of the last end_frame
    mutable std::string last_error;                // vrex_hal_stream_last_error()
};

using vrex::capi::guarded;

namespace {

vrex_hal_status to_status(std::error_code ec) {
    if (!ec) return VREX_HAL_OK;
    if (ec.category() == vrex::hal_category()) {
        switch (static_cast<vrex::errc>(ec.value())) {
            case vrex::errc::device_lost:
                return VREX_HAL_ERR_DEVICE_LOST;
            case vrex::errc::no_device:
            case vrex::errc::not_vrex_device:
                return VREX_HAL_ERR_NO_DEVICE;
            case vrex::errc::unknown_backend:
                return VREX_HAL_ERR_UNKNOWN_BACKEND;
            case vrex::errc::bad_geometry:
                return VREX_HAL_ERR_BAD_GEOMETRY;
            case vrex::errc::not_in_frame:
                return VREX_HAL_ERR_NOT_IN_FRAME;
            case vrex::errc::stale_handle:
                return VREX_HAL_ERR_STALE;
        }
        return VREX_HAL_ERR_IO;
    }
    if (ec == std::errc::invalid_argument) return VREX_HAL_ERR_INVALID;
    if (ec == std::errc::no_such_file_or_directory) return VREX_HAL_ERR_NOENT;
    if (ec == std::errc::no_space_on_device) return VREX_HAL_ERR_NOSPC;
    if (ec == std::errc::result_out_of_range) return VREX_HAL_ERR_RANGE;
    if (ec == std::errc::file_exists) return VREX_HAL_ERR_EXIST;
    if (ec == std::errc::device_or_resource_busy) return VREX_HAL_ERR_BUSY;
    if (ec == std::errc::not_enough_memory) return VREX_HAL_ERR_NOMEM;
    if (ec == std::errc::operation_not_permitted) return VREX_HAL_ERR_PERM;
    if (ec == std::errc::no_such_device) return VREX_HAL_ERR_DEVICE_LOST;
    return VREX_HAL_ERR_IO;
}

thread_local std::string t_last_error;  // vrex_hal_last_error()

vrex::Error ok() {
    return {};
}

using vrex::capi::invalid;
using vrex::capi::known_flags;
using vrex::capi::non_null;
using vrex::capi::sized_out;

void to_c(const vrex::KvBlock& b, vrex_hal_block* out) {
    *out = vrex_hal_block{};
    out->data = b.data.data();
    out->size = b.data.size();
    out->offset = b.offset;
    out->id = b.id;
    out->bank = b.bank;
    out->handle = b.handle;
    out->frame = b.frame;
    out->region = b.region;
    out->generation = b.generation;
    out->first_token = b.first_token;
    out->token_count = b.token_count;
    out->flags =
        (b.shared ? VREX_HAL_BLOCK_SHARED : 0u) | (vrex::is_segment_block(b) ? VREX_HAL_BLOCK_SEGMENT : 0u);
    // C has no read-only pointer type to offer: the flag states the contract.
    out->data = const_cast<std::byte*>(b.view.data());  // NOLINT(cppcoreguidelines-pro-type-const-cast)
    out->size = b.view.size();
}

vrex_hal_released to_c(const vrex::ReleasedBlock& r) {
    vrex_hal_released o{};
    o.id = r.id;
    o.generation = r.generation;
    o.reason = static_cast<uint32_t>(r.reason);
    o.bank = r.bank;
    o.memory_freed = r.memory_freed;
    return o;
}

vrex::KvBlock from_c(const vrex_hal_block& b) {
    vrex::KvBlock k;
    k.id = b.id;
    k.bank = b.bank;
    k.handle = b.handle;
    k.offset = b.offset;
    k.frame = b.frame;
    k.region = b.region;
    k.generation = b.generation;
    k.shared = b.flags & VREX_HAL_BLOCK_SHARED;
    k.view = std::span(static_cast<const std::byte*>(b.data), b.size);
    if (!k.shared) k.data = std::span(static_cast<std::byte*>(b.data), b.size);
    return k;
}

void to_c(const vrex::Retrieval& r, vrex_hal_retrieval* out) {
    *out = vrex_hal_retrieval{};
    out->hit = r.hit;
    out->approximate = r.approximate;
    out->distance = r.distance;
    out->frame = r.frame;
    out->stream = r.stream;
    out->fp[0] = r.fp.w[0];
    out->fp[1] = r.fp.w[1];
    if (r.hit) to_c(r.block, &out->block);
}

vrex::Error retrieval_out(const vrex::Result<vrex::Retrieval>& r, vrex_hal_retrieval* out) {
    if (!r) return r.error_info();
    to_c(*r, out);
    return {};
}

vrex::Tier tier_of(uint32_t flags) {
    switch (flags & (VREX_HAL_TIER_DEVICE | VREX_HAL_TIER_HOST)) {
        case VREX_HAL_TIER_DEVICE:
            return vrex::Tier::device;
        case VREX_HAL_TIER_HOST:
            return vrex::Tier::host;
        default:
            return vrex::Tier::any;
    }
}

vrex::ModelGeometry geometry_of(const vrex_hal_geometry& g) {
    return vrex::ModelGeometry{g.layers,           g.kv_heads,
                               g.head_dim,         static_cast<vrex::DType>(g.dtype),
                               g.tokens_per_block, static_cast<vrex::ScaleLayout>(g.scales)};
}

vrex::Error open_device(const char* backend, const vrex_hal_device_options* opts, vrex_hal_device** out) {
    if (auto e = non_null({{"out", out}})) return e;
    vrex::DeviceOptions o;
    auto choice = vrex::parse_backend_choice(backend ? backend : "auto");
    if (!choice)
        return choice.error_info().within("backend \"" + std::string(backend) +
                                          "\" (valid: NULL, \"auto\", \"kernel\", \"emulated\")");
    o.backend = *choice;
    if (opts) {
        auto known = vrex::capi::sized_in(opts, "device options", 8);
        if (!known) return known.error_info();
        if (auto e = known_flags("device options: flags", known->flags, 0, "0")) return e;
        if (known->pad)
            return invalid("device options: pad is " + std::to_string(known->pad) + " (valid: 0)");
        if (known->node) o.backend_options.node = known->node;
        o.backend_options.emu_banks = known->emu_banks;
        o.backend_options.emu_bank_size = known->emu_bank_size;
        o.backend_options.emu_group_banks = known->emu_group_banks;
        o.backend_options.emu_zombie_frames = known->emu_zombie_frames;
    }
    auto dev = vrex::Device::open(o);
    if (!dev) return dev.error_info();
    auto h = std::make_unique<vrex_hal_device>();
    h->backend = std::string((*dev)->backend_name());
    h->dev = std::move(*dev);
    *out = h.release();
    return {};
}

constexpr uint32_t kAllocFlags =
    VREX_HAL_ALLOC_EVICT_UNDER_PRESSURE | VREX_HAL_ALLOC_SPARE_SLABS | VREX_HAL_ALLOC_PAGE_ALIGNED;

vrex::Error create_allocator(vrex_hal_device* dev, const vrex_hal_geometry* g,
                             const vrex_hal_allocator_options* opts, vrex_hal_allocator** out) {
    if (auto e = non_null({{"dev", dev}, {"geom", g}, {"out", out}})) return e;
    vrex::AllocatorOptions o;
    if (opts) {
        auto known = vrex::capi::sized_in(opts, "allocator options", 4);
        if (!known) return known.error_info();
        if (auto e = known_flags("allocator options: flags", known->flags, kAllocFlags,
                                 "VREX_HAL_ALLOC_EVICT_UNDER_PRESSURE | VREX_HAL_ALLOC_SPARE_SLABS | "
                                 "VREX_HAL_ALLOC_PAGE_ALIGNED"))
            return e;
        o.blocks_per_slab = known->blocks_per_slab;
        if (known->flags & VREX_HAL_ALLOC_SPARE_SLABS) o.spare_slabs = known->spare_slabs;
        o.evict_under_pressure = known->flags & VREX_HAL_ALLOC_EVICT_UNDER_PRESSURE;
        o.page_aligned_blocks = known->flags & VREX_HAL_ALLOC_PAGE_ALIGNED;
    }
    auto a = vrex::KvAllocator::create(dev->dev, geometry_of(*g), o);
    if (!a) return a.error_info();
    auto h = std::make_unique<vrex_hal_allocator>();
    h->alloc = std::move(*a);
    *out = h.release();
    return {};
}

}  // namespace

extern "C" {

const char* vrex_hal_strerror(vrex_hal_status s) {
    switch (s) {
        case VREX_HAL_OK:
            return "success";
        case VREX_HAL_ERR_INVALID:
            return "invalid argument";
        case VREX_HAL_ERR_NOENT:
            return "no such stream, block or buffer";
        case VREX_HAL_ERR_NOSPC:
            return "device memory, index or stream slots exhausted";
        case VREX_HAL_ERR_RANGE:
            return "offset or range out of bounds";
        case VREX_HAL_ERR_EXIST:
            return "this frame and region already have a block";
        case VREX_HAL_ERR_BUSY:
            return "busy (frame already open or buffer in use)";
        case VREX_HAL_ERR_NOMEM:
            return "out of host memory";
        case VREX_HAL_ERR_DEVICE_LOST:
            return "vrex device lost; reopen the device";
        case VREX_HAL_ERR_NO_DEVICE:
            return "no vrex device found";
        case VREX_HAL_ERR_UNKNOWN_BACKEND:
            return "unknown backend (expected auto, kernel or emulated)";
        case VREX_HAL_ERR_BAD_GEOMETRY:
            return "invalid model geometry (vrex_hal_last_error() names the field and its valid range)";
        case VREX_HAL_ERR_NOT_IN_FRAME:
            return "no open frame (call vrex_hal_begin_frame first)";
        case VREX_HAL_ERR_IO:
            return "device or system error";
        case VREX_HAL_ERR_PERM:
            return "not permitted (the stream does not own the block)";
        case VREX_HAL_ERR_STALE:
            return "stale block handle (the block was released; its id may belong to another block now)";
    }
    return "unknown status";
}

vrex_hal_status vrex_hal_device_open(const char* backend, vrex_hal_device** out) {
    return guarded(__func__, nullptr, [&] { return open_device(backend, nullptr, out); });
}

vrex_hal_status vrex_hal_device_open_with(const char* backend, const vrex_hal_device_options* options,
                                          vrex_hal_device** out) {
    return guarded(__func__, nullptr, [&] { return open_device(backend, options, out); });
}

void vrex_hal_device_close(vrex_hal_device* dev) {
    std::unique_ptr<vrex_hal_device>{dev};
}

const char* vrex_hal_device_backend(const vrex_hal_device* dev) {
    return dev ? dev->backend.c_str() : "";
}

uint32_t vrex_hal_version(void) {
    return VREX_HAL_VERSION;
}

vrex_hal_status vrex_hal_allocator_create_with(vrex_hal_device* dev, const vrex_hal_geometry* g,
                                               const vrex_hal_allocator_options* opts,
                                               vrex_hal_allocator** out) {
    return guarded(__func__, nullptr, [&] { return create_allocator(dev, g, opts, out); });
}

vrex_hal_status vrex_hal_allocator_create(vrex_hal_device* dev, const vrex_hal_geometry* g,
                                          vrex_hal_allocator** out) {
    return guarded(__func__, nullptr, [&] { return create_allocator(dev, g, nullptr, out); });
}

vrex_hal_status vrex_hal_geometry_layout(const vrex_hal_geometry* g, vrex_hal_block_layout* out) {
    return guarded(__func__, nullptr, [&] {
        if (auto e = non_null({{"geom", g}, {"layout", out}})) return e;
        const vrex::ModelGeometry geom = geometry_of(*g);
        auto bytes = geom.block_bytes();
        if (!bytes) return bytes.error_info().within("geometry");
        vrex_hal_block_layout l{};
        l.element_size = vrex::dtype_size(geom.dtype);
        l.block_bytes = *bytes;
        l.kv_bytes = geom.kv_bytes();
        l.scales_offset = l.kv_bytes;
        l.scale_count = static_cast<uint32_t>(geom.scale_count());
        l.scales_bytes = std::uint64_t{l.scale_count} * sizeof(float);
        return sized_out(l, out, "layout", 8);
    });
}

void vrex_hal_allocator_destroy(vrex_hal_allocator* a) {
    std::unique_ptr<vrex_hal_allocator>{a};
}

uint64_t vrex_hal_allocator_block_bytes(const vrex_hal_allocator* a) {
    return a ? a->alloc->block_bytes() : 0;
}

vrex_hal_status vrex_hal_stream_create(vrex_hal_allocator* a, int pooled, uint32_t pool,
                                       vrex_hal_stream** out) {
    return guarded(__func__, nullptr, [&] {
        if (auto e = non_null({{"alloc", a}, {"out", out}})) return e;
        auto s = a->alloc->create_stream(vrex::StreamOptions{pooled != 0, pool});
        if (!s) return s.error_info();
        auto h = std::make_unique<vrex_hal_stream>();
        h->stream = std::move(*s);
        *out = h.release();
        return ok();
    });
}

void vrex_hal_stream_destroy(vrex_hal_stream* s) {
    std::unique_ptr<vrex_hal_stream>{s};
}

uint32_t vrex_hal_stream_id(const vrex_hal_stream* s) {
    return s ? s->stream->id() : 0;
}

vrex_hal_status vrex_hal_begin_frame(vrex_hal_stream* s, const uint8_t* luma, uint32_t width, uint32_t height,
                                     uint32_t stride, vrex_hal_frame_info* info) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}})) return e;
        auto f = s->stream->begin_frame(vrex::LumaView{luma, width, height, stride});
        if (!f) return f.error_info();
        if (info) {
            *info = vrex_hal_frame_info{};
            info->fp[0] = f->fp.w[0];
            info->fp[1] = f->fp.w[1];
            info->frame = f->frame;
            info->group = f->group;
            info->bank_first = f->bank_first;
            info->bank_count = f->bank_count;
            info->flags = (f->opened_group ? VREX_HAL_FRAME_OPENED_GROUP : 0u) |
                          (f->conflict ? VREX_HAL_FRAME_CONFLICT : 0u);
        }
        return ok();
    });
}

vrex_hal_status vrex_hal_frame_region_motion(vrex_hal_stream* s, uint8_t* motion) {
    return guarded(__func__, s, [&]() -> vrex::Error {
        if (auto e = non_null({{"stream", s}, {"motion", motion}})) return e;
        if (!s->stream->in_frame())
            return vrex::Error{vrex::errc::not_in_frame, "region motion of the open frame"};
        const auto& m = s->stream->frame().region_motion;
        std::copy(m.begin(), m.end(), motion);
        return ok();
    });
}

vrex_hal_status vrex_hal_allocate(vrex_hal_stream* s, uint32_t region, int32_t frame_offset,
                                  vrex_hal_block* block) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}, {"block", block}})) return e;
        auto b = s->stream->allocate(region, frame_offset);
        if (!b) return b.error_info();
        to_c(*b, block);
        return ok();
    });
}

vrex_hal_status vrex_hal_reuse(vrex_hal_stream* s, uint32_t region, const vrex_hal_block* block,
                               int32_t frame_offset) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}, {"block", block}})) return e;
        return vrex::Result<void>(s->stream->reuse(region, from_c(*block), frame_offset)).error_info();
    });
}

vrex_hal_status vrex_hal_retrieve_temporal(vrex_hal_stream* s, uint32_t region, int32_t frame_offset,
                                           vrex_hal_retrieval* out) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}, {"out", out}})) return e;
        return retrieval_out(s->stream->retrieve_temporal(region, frame_offset), out);
    });
}

vrex_hal_status vrex_hal_retrieve_similar(vrex_hal_stream* s, uint32_t region, const uint64_t fp[2],
                                          uint32_t radius, uint32_t flags, vrex_hal_retrieval* out) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}, {"fp", fp}, {"out", out}})) return e;
        if (auto e = known_flags(
                "flags", flags,
                VREX_HAL_SCOPE_POOL | VREX_HAL_PAST_ONLY | VREX_HAL_TIER_DEVICE | VREX_HAL_TIER_HOST,
                "VREX_HAL_SCOPE_POOL | VREX_HAL_PAST_ONLY | VREX_HAL_TIER_DEVICE | VREX_HAL_TIER_HOST"))
            return e;
        vrex::Fingerprint q;
        q.w[0] = fp[0];
        q.w[1] = fp[1];
        vrex::Query query = vrex::Query::similar(
            region, q, radius, (flags & VREX_HAL_SCOPE_POOL) ? vrex::Scope::pool : vrex::Scope::stream,
            flags & VREX_HAL_PAST_ONLY);
        query.in_tier(tier_of(flags));
        auto got = s->stream->retrieve_batch(std::span(&query, 1));
        if (!got) return got.error_info();
        to_c(got->front(), out);
        return ok();
    });
}

vrex_hal_status vrex_hal_retrieve_candidates(vrex_hal_stream* s, uint32_t region, const uint64_t fp[2],
                                             uint32_t radius, uint32_t flags, uint32_t max,
                                             vrex_hal_candidate* out, uint32_t* count) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}, {"fp", fp}, {"out", out}, {"count", count}})) return e;
        if (auto e = known_flags(
                "flags", flags,
                VREX_HAL_SCOPE_POOL | VREX_HAL_PAST_ONLY | VREX_HAL_TIER_DEVICE | VREX_HAL_TIER_HOST,
                "VREX_HAL_SCOPE_POOL | VREX_HAL_PAST_ONLY | VREX_HAL_TIER_DEVICE | VREX_HAL_TIER_HOST"))
            return e;
        if (max == 0 || max > VREX_HAL_MAX_CANDIDATES)
            return vrex::Error{std::errc::invalid_argument, "max " + std::to_string(max) + " is not in 1.." +
                                                                std::to_string(VREX_HAL_MAX_CANDIDATES)};
        vrex::Fingerprint q;
        q.w[0] = fp[0];
        q.w[1] = fp[1];
        vrex::Query query = vrex::Query::similar(
            region, q, radius, (flags & VREX_HAL_SCOPE_POOL) ? vrex::Scope::pool : vrex::Scope::stream,
            flags & VREX_HAL_PAST_ONLY);
        query.in_tier(tier_of(flags)).nearest(max);
        auto got = s->stream->retrieve_batch(std::span(&query, 1));
        if (!got) return got.error_info();
        const std::vector<vrex::Retrieval>& c = got->front().candidates;
        for (std::size_t i = 0; i < c.size(); i++) {
            out[i] = vrex_hal_candidate{};
            to_c(c[i], &out[i].retrieval);
            out[i].host_tier = c[i].host_tier;
        }
        *count = static_cast<uint32_t>(c.size());
        return ok();
    });
}

vrex_hal_status vrex_hal_release(vrex_hal_stream* s, const vrex_hal_block* block) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}, {"block", block}})) return e;
        return vrex::Result<void>(s->stream->release(from_c(*block))).error_info();
    });
}

vrex_hal_status vrex_hal_end_frame(vrex_hal_stream* s, uint32_t* released) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}})) return e;
        auto n = s->stream->end_frame();
        if (!n) return n.error_info();
        s->last_released.clear();
        for (const vrex::ReleasedBlock& r : n->released) s->last_released.push_back(to_c(r));
        if (released) *released = n->count;
        return ok();
    });
}

vrex_hal_status vrex_hal_released_blocks(const vrex_hal_stream* s, vrex_hal_released* out, uint32_t capacity,
                                         uint32_t* count) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}, {"count", count}})) return e;
        if (capacity && !out)
            return invalid("out is NULL with capacity " + std::to_string(capacity) +
                           " (valid: NULL only with capacity 0)");
        *count = static_cast<uint32_t>(s->last_released.size());
        std::copy_n(s->last_released.begin(), std::min<std::size_t>(capacity, s->last_released.size()), out);
        return ok();
    });
}

vrex_hal_status vrex_hal_stream_on_release(vrex_hal_stream* s, vrex_hal_release_fn fn, void* user) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}})) return e;
        if (!fn) {
            s->stream->on_release({});
            return ok();
        }
        s->stream->on_release([fn, user](std::span<const vrex::ReleasedBlock> rel) {
            std::vector<vrex_hal_released> c;
            c.reserve(rel.size());
            for (const vrex::ReleasedBlock& r : rel) c.push_back(to_c(r));
            fn(user, c.data(), static_cast<uint32_t>(c.size()));
        });
        return ok();
    });
}

vrex_hal_status vrex_hal_stream_release_fd(vrex_hal_stream* s, int* fd) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}, {"fd", fd}})) return e;
        auto r = s->stream->release_event_fd();
        if (!r) return r.error_info();
        *fd = *r;
        return ok();
    });
}

vrex_hal_status vrex_hal_set_positions(vrex_hal_stream* s, const vrex_hal_block* block, uint32_t first_token,
                                       uint32_t token_count) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}, {"block", block}})) return e;
        return vrex::Result<void>(s->stream->set_positions(from_c(*block), first_token, token_count))
            .error_info();
    });
}

vrex_hal_status vrex_hal_pin(vrex_hal_stream* s, const vrex_hal_block* block) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}, {"block", block}})) return e;
        return vrex::Result<void>(s->stream->pin(from_c(*block))).error_info();
    });
}

vrex_hal_status vrex_hal_unpin(vrex_hal_stream* s, const vrex_hal_block* block) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}, {"block", block}})) return e;
        return vrex::Result<void>(s->stream->unpin(from_c(*block))).error_info();
    });
}

vrex_hal_status vrex_hal_copy_on_write(vrex_hal_stream* s, const vrex_hal_block* block, uint32_t region,
                                       int32_t frame_offset, vrex_hal_block* out) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}, {"block", block}, {"out", out}})) return e;
        auto b = s->stream->copy_on_write(from_c(*block), region, frame_offset);
        if (!b) return b.error_info();
        to_c(*b, out);
        return ok();
    });
}

vrex_hal_status vrex_hal_export_dmabuf(vrex_hal_stream* s, const vrex_hal_block* block, int* fd) {
    return guarded(__func__, s, [&] {
        if (auto e = non_null({{"stream", s}, {"block", block}, {"fd", fd}})) return e;
        auto r = s->stream->export_dmabuf(from_c(*block));
        if (!r) return r.error_info();
        *fd = *r;
        return ok();
    });
}

vrex_hal_status vrex_hal_get_stats(vrex_hal_allocator* a, vrex_hal_stats* out) {
    return guarded(__func__, nullptr, [&] {
        if (auto e = non_null({{"alloc", a}, {"stats", out}})) return e;
        if (out->struct_size < 8) return sized_out(vrex_hal_stats{}, out, "stats", 8);  // names the range
        auto st = a->alloc->stats();
        if (!st) return st.error_info();
        vrex_hal_stats o{};
        o.hits = st->hits;
        o.approx_hits = st->approx_hits;
        o.misses = st->misses;
        o.evictions = st->evictions;
        o.pressure_evictions = st->pressure_evictions;
        o.deferred_frees = st->deferred_frees;
        o.removed = st->removed;
        o.allocations = st->allocations;
        o.fallback_allocations = st->fallback_allocations;
        o.resident_blocks = st->resident_blocks;
        o.resident_bytes = st->resident_bytes;
        o.slabs_created = st->slabs_created;
        o.slabs_released = st->slabs_released;
        o.slabs = st->slabs_created - st->slabs_released;
        o.bank_count = static_cast<uint32_t>(std::min<std::size_t>(st->banks.size(), VREX_HAL_MAX_BANKS));
        for (uint32_t b = 0; b < o.bank_count; b++) {
            o.bank_resident_blocks[b] = st->banks[b].resident_blocks;
            o.bank_resident_bytes[b] = st->banks[b].resident_bytes;
            o.bank_slab_bytes[b] = st->banks[b].slab_bytes;
            o.slab_bytes += st->banks[b].slab_bytes;
        }
        return sized_out(o, out, "stats", 8);
    });
}

const char* vrex_hal_last_error(void) {
    return t_last_error.c_str();
}

const char* vrex_hal_stream_last_error(const vrex_hal_stream* s) {
    return s ? s->last_error.c_str() : "";
}

}  // extern "C"

namespace {

// Checks a size-prefixed batch: NULL checks, struct_size and block_size, trailing bytes zero.
vrex::Error check_batch(const vrex_hal_batch* b, bool allocate) {
    if (!b) return invalid("batch is NULL");
    const std::size_t size = b->struct_size;
    if (size < sizeof(vrex_hal_batch))  // 0.3, the first version with batches
        return invalid("batch: struct_size " + std::to_string(size) + " is below the " +
                       std::to_string(sizeof(vrex_hal_batch)) +
                       " of version 0.3 (valid: " + std::to_string(sizeof(vrex_hal_batch)) + " and up)");
    const auto* bytes = reinterpret_cast<const unsigned char*>(b);
    for (std::size_t i = sizeof(vrex_hal_batch); i < size; i++)
        if (bytes[i])
            return invalid("batch: byte " + std::to_string(i) + " past the " +
                           std::to_string(sizeof(vrex_hal_batch)) +
                           " this library knows is not zero (valid: zero)");
    if (b->flags) return invalid("batch: flags " + vrex::capi::hex(b->flags) + " (valid: 0)");
    if (b->pad) return invalid("batch: pad " + std::to_string(b->pad) + " (valid: 0)");
    if (b->block_size < sizeof(vrex_hal_block))
        return invalid("batch: block_size " + std::to_string(b->block_size) +
                       " is below sizeof(struct vrex_hal_block) " + std::to_string(sizeof(vrex_hal_block)) +
                       " (valid: " + std::to_string(sizeof(vrex_hal_block)) + " and up)");
    if (b->count && (!b->blocks || (allocate && !b->regions)))
        return invalid("batch: " + std::string(b->blocks ? "regions" : "blocks") + " is NULL with count " +
                       std::to_string(b->count) + " (valid: NULL only with count 0)");
    return {};
}

vrex_hal_block* batch_block(const vrex_hal_batch* b, std::size_t i) {
    return reinterpret_cast<vrex_hal_block*>(reinterpret_cast<unsigned char*>(b->blocks) + i * b->block_size);
}

}  // namespace

extern "C" {

vrex_hal_status vrex_hal_allocate_batch(vrex_hal_stream* s, const vrex_hal_batch* b) {
    return guarded(__func__, s, [&] {
        if (!s) return invalid("stream is NULL");
        if (auto e = check_batch(b, true)) return e;
        auto v = s->stream->allocate_batch(std::span(b->regions, b->count), b->frame_offset);
        if (!v) return v.error_info();
        for (std::size_t i = 0; i < v->size(); i++) {
            // Bytes of a larger (newer) block struct this library does not know stay zero.
            std::memset(batch_block(b, i), 0, b->block_size);
            to_c((*v)[i], batch_block(b, i));
        }
        return ok();
    });
}

vrex_hal_status vrex_hal_release_batch(vrex_hal_stream* s, const vrex_hal_batch* b) {
    return guarded(__func__, s, [&] {
        if (!s) return invalid("stream is NULL");
        if (auto e = check_batch(b, false)) return e;
        std::vector<vrex::KvBlock> blocks;
        blocks.reserve(b->count);
        for (std::size_t i = 0; i < b->count; i++) blocks.push_back(from_c(*batch_block(b, i)));
        return vrex::Result<void>(s->stream->release_batch(blocks)).error_info();
    });
}

}  // extern "C"

// For the other C ABI files (c_api_internal.hpp).
namespace vrex::capi {

std::shared_ptr<Device> device_of(vrex_hal_device* dev) {
    return dev ? dev->dev : nullptr;
}
vrex_hal_status status_of(std::error_code ec) {
    return to_status(ec);
}
vrex_hal_status record(const char* fn, const vrex_hal_stream* s, const Error& e, StatusMapper map) noexcept {
    const vrex_hal_status st = e ? map(e.code()) : VREX_HAL_OK;
    if (!e) return st;
    try {
        std::string msg = std::string(fn) + ": " + e.message();
        if (s) s->last_error = msg;
        t_last_error = std::move(msg);
    } catch (...) {  // no room for the message: the status still says what happened
    }
    return st;
}
Stream* stream_of(vrex_hal_stream* s) {
    return s ? s->stream.get() : nullptr;
}
std::shared_ptr<KvAllocator> allocator_of(vrex_hal_allocator* a) {
    return a ? a->alloc : nullptr;
}
vrex_hal_allocator* adopt_allocator(std::shared_ptr<KvAllocator> a) {
    auto h = std::make_unique<vrex_hal_allocator>();
    h->alloc = std::move(a);
    return h.release();
}
vrex_hal_stream* adopt_stream(std::unique_ptr<Stream> s) {
    auto h = std::make_unique<vrex_hal_stream>();
    h->stream = std::move(s);
    return h.release();
}
void block_to_c(const KvBlock& b, vrex_hal_block* out) {
    to_c(b, out);
}
void note_error(const char* fn, const std::string& message) noexcept {
    try {
        t_last_error = std::string(fn) + ": " + message;
    } catch (...) {  // no room for the message: the status still says what happened
    }
}

}  // namespace vrex::capi
