// The C ABI of publication and the fixed KV pool (vrex/vrex_hal.h, the block after the segments):
// thin wrappers over Stream::publish*, StreamOptions::publish_at_end_frame and
// AllocatorOptions::fixed_pool_blocks / KvAllocator::pool*.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "c_api_internal.hpp"

using vrex::capi::guarded;
using vrex::capi::invalid;

namespace {

vrex::Error ok() {
    return {};
}

// Only the handle matters to these calls: (id, generation).
vrex::KvBlock handle_of(const vrex_hal_block& b) {
    vrex::KvBlock k;
    k.id = b.id;
    k.generation = b.generation;
    k.handle = b.handle;
    k.offset = b.offset;
    return k;
}

}  // namespace

extern "C" {

vrex_hal_status vrex_hal_publish(vrex_hal_stream* s, const vrex_hal_block* block) {
    return guarded(__func__, s, [&]() -> vrex::Error {
        vrex::Stream* st = vrex::capi::stream_of(s);
        if (!st) return invalid("stream is NULL");
        if (!block) return invalid("block is NULL");
        return vrex::Result<void>(st->publish(handle_of(*block))).error_info();
    });
}

vrex_hal_status vrex_hal_publish_batch(vrex_hal_stream* s, const vrex_hal_block* blocks, uint32_t count,
                                       uint32_t block_size) {
    return guarded(__func__, s, [&]() -> vrex::Error {
        vrex::Stream* st = vrex::capi::stream_of(s);
        if (!st) return invalid("stream is NULL");
        if (count && !blocks) return invalid("blocks is NULL with count " + std::to_string(count));
        if (block_size < sizeof(vrex_hal_block))
            return invalid("block_size " + std::to_string(block_size) +
                           " is below sizeof(struct vrex_hal_block) " +
                           std::to_string(sizeof(vrex_hal_block)));
        std::vector<vrex::KvBlock> v;
        v.reserve(count);
        const auto* base = reinterpret_cast<const unsigned char*>(blocks);
        for (uint32_t i = 0; i < count; i++) {
            vrex_hal_block b;
            std::memcpy(&b, base + std::size_t{i} * block_size, sizeof b);
            v.push_back(handle_of(b));
        }
        return vrex::Result<void>(st->publish_batch(v)).error_info();
    });
}

vrex_hal_status vrex_hal_stream_create_flags(vrex_hal_allocator* a, uint32_t flags, uint32_t pool,
                                             vrex_hal_stream** out) {
    return guarded(__func__, nullptr, [&]() -> vrex::Error {
        auto alloc = vrex::capi::allocator_of(a);
        if (!alloc) return invalid("allocator is NULL");
        if (!out) return invalid("out is NULL");
        constexpr uint32_t known = VREX_HAL_STREAM_POOLED | VREX_HAL_STREAM_EXPLICIT_PUBLISH;
        if (flags & ~known)
            return invalid("flags " + std::to_string(flags) + ": unknown bits " +
                           std::to_string(flags & ~known) +
                           " (valid: VREX_HAL_STREAM_POOLED | VREX_HAL_STREAM_EXPLICIT_PUBLISH)");
        vrex::StreamOptions o;
        o.pooled = flags & VREX_HAL_STREAM_POOLED;
        o.pool = pool;
        o.publish_at_end_frame = !(flags & VREX_HAL_STREAM_EXPLICIT_PUBLISH);
        auto st = alloc->create_stream(o);
        if (!st) return st.error_info();
        *out = vrex::capi::adopt_stream(std::move(*st));
        return ok();
    });
}

vrex_hal_status vrex_hal_allocator_create_pool(vrex_hal_device* dev, const vrex_hal_geometry* g,
                                               uint32_t pool_blocks, uint32_t flags,
                                               vrex_hal_allocator** out) {
    return guarded(__func__, nullptr, [&]() -> vrex::Error {
        auto d = vrex::capi::device_of(dev);
        if (!d) return invalid("device is NULL");
        if (!g) return invalid("geometry is NULL");
        if (!out) return invalid("out is NULL");
        if (!pool_blocks) return invalid("pool_blocks is 0 (at least 1)");
        if (flags & ~VREX_HAL_ALLOC_EVICT_UNDER_PRESSURE)
            return invalid("flags " + std::to_string(flags) +
                           ": only VREX_HAL_ALLOC_EVICT_UNDER_PRESSURE is valid");
        vrex::AllocatorOptions o;
        o.fixed_pool_blocks = pool_blocks;
        o.evict_under_pressure = flags & VREX_HAL_ALLOC_EVICT_UNDER_PRESSURE;
        // Scale layout and dtype are checked by KvAllocator::create (ModelGeometry::block_bytes).
        const vrex::ModelGeometry geom{g->layers,           g->kv_heads,
                                       g->head_dim,         static_cast<vrex::DType>(g->dtype),
                                       g->tokens_per_block, static_cast<vrex::ScaleLayout>(g->scales)};
        auto a = vrex::KvAllocator::create(std::move(d), geom, o);
        if (!a) return a.error_info();
        *out = vrex::capi::adopt_allocator(std::move(*a));
        return ok();
    });
}

vrex_hal_status vrex_hal_pool_info(vrex_hal_allocator* a, vrex_hal_pool* out) {
    return guarded(__func__, nullptr, [&]() -> vrex::Error {
        auto alloc = vrex::capi::allocator_of(a);
        if (!alloc) return invalid("allocator is NULL");
        if (!out) return invalid("out is NULL");
        const std::size_t size = out->struct_size;
        if (size < sizeof(uint32_t))
            return invalid("pool: struct_size " + std::to_string(size) + " is below 4");
        auto p = alloc->pool();
        if (!p) return p.error_info();
        vrex_hal_pool c{};
        c.struct_size = static_cast<uint32_t>(std::min(size, sizeof c));
        c.handle = p->handle;
        c.bank = p->bank;
        c.blocks = p->blocks;
        c.block_bytes = p->block_bytes;
        c.bytes = p->bytes;
        std::memcpy(out, &c, c.struct_size);
        return ok();
    });
}

vrex_hal_status vrex_hal_pool_export_dmabuf(vrex_hal_allocator* a, int* fd) {
    return guarded(__func__, nullptr, [&]() -> vrex::Error {
        auto alloc = vrex::capi::allocator_of(a);
        if (!alloc) return invalid("allocator is NULL");
        if (!fd) return invalid("fd is NULL");
        auto f = alloc->export_pool_dmabuf();
        if (!f) return f.error_info();
        *fd = *f;
        return ok();
    });
}

vrex_hal_status vrex_hal_pool_index(vrex_hal_allocator* a, const vrex_hal_block* block, uint32_t* index) {
    return guarded(__func__, nullptr, [&]() -> vrex::Error {
        auto alloc = vrex::capi::allocator_of(a);
        if (!alloc) return invalid("allocator is NULL");
        if (!block) return invalid("block is NULL");
        if (!index) return invalid("index is NULL");
        auto i = alloc->pool_index(handle_of(*block));
        if (!i) return i.error_info();
        *index = *i;
        return ok();
    });
}

}  // extern "C"
