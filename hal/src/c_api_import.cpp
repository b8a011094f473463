// C ABI of engine-owned KV memory (vrex_hal.h "Engine-owned KV memory"; C++:
// vrex/imported_memory.hpp). Every entry point catches everything and records its failure like
// the rest of the C ABI (c_api.cpp).
#include <cstring>
#include <new>
#include <string>

#include "c_api_internal.hpp"
#include "vrex/imported_memory.hpp"

struct vrex_hal_imported {
    std::unique_ptr<vrex::ImportedMemory> mem;
};

namespace {

using vrex::capi::guarded;

using vrex::capi::invalid;

// Bytes [from, to) of a caller's struct are all zero (a newer caller's fields we do not know).
bool zero_tail(const void* p, std::size_t from, std::size_t to) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = from; i < to; i++)
        if (b[i]) return false;
    return true;
}

}  // namespace

extern "C" {

vrex_hal_status vrex_hal_import_memory(vrex_hal_allocator* alloc, int dmabuf_fd, vrex_hal_imported** out) {
    return guarded(__func__, nullptr, [&]() -> vrex::Error {
        auto a = vrex::capi::allocator_of(alloc);
        if (auto e = vrex::capi::non_null({{"alloc", a.get()}, {"out", out}})) return e;
        *out = nullptr;
        auto m = a->import_memory(dmabuf_fd);
        if (!m) return m.error_info();
        *out = new vrex_hal_imported{std::move(*m)};
        return {};
    });
}

void vrex_hal_imported_destroy(vrex_hal_imported* mem) {
    delete mem;  // ~ImportedMemory does not throw
}

vrex_hal_status vrex_hal_imported_get_info(const vrex_hal_imported* mem, vrex_hal_imported_info* info) {
    return guarded(__func__, nullptr, [&]() -> vrex::Error {
        if (auto e = vrex::capi::non_null({{"mem", mem}, {"info", info}})) return e;
        const std::size_t size = info->struct_size;
        if (size < sizeof(info->struct_size))
            return invalid("imported info: struct_size " + std::to_string(size) +
                           " is below 4 (valid: 4 and up)");
        vrex_hal_imported_info v{};
        v.struct_size = static_cast<std::uint32_t>(std::min(size, sizeof(v)));
        v.handle = mem->mem->handle();
        v.size = mem->mem->size();
        v.data = mem->mem->host_view().data();
        v.blocks = mem->mem->blocks();
        // An older caller gets the fields it has room for; a newer one's unknown bytes are zeroed.
        if (size > sizeof(v))
            std::memset(reinterpret_cast<unsigned char*>(info) + sizeof(v), 0, size - sizeof(v));
        std::memcpy(info, &v, std::min(size, sizeof(v)));
        return {};
    });
}

vrex_hal_status vrex_hal_index_imported(vrex_hal_stream* s, const vrex_hal_imported* mem,
                                        const vrex_hal_index_request* req, vrex_hal_block* block) {
    return guarded(__func__, s, [&]() -> vrex::Error {
        vrex::Stream* st = vrex::capi::stream_of(s);
        if (auto e = vrex::capi::non_null({{"stream", st}, {"mem", mem}, {"req", req}, {"block", block}}))
            return e;
        const std::size_t size = req->struct_size;
        if (size < sizeof(vrex_hal_index_request))
            return invalid("index request: struct_size " + std::to_string(size) + " is below the " +
                           std::to_string(sizeof(vrex_hal_index_request)) + " bytes of this ABI");
        if (!zero_tail(req, sizeof(vrex_hal_index_request), size))
            return invalid("index request: bytes past the known struct are not zero (valid: zero)");
        if (req->block_size < sizeof(vrex_hal_block))
            return invalid("index request: block_size " + std::to_string(req->block_size) + " is below the " +
                           std::to_string(sizeof(vrex_hal_block)) + " bytes of this ABI");
        if (req->flags || req->pad)
            return invalid("index request: flags " + std::to_string(req->flags) + ", pad " +
                           std::to_string(req->pad) + " (valid: 0 and 0)");
        auto b = st->index_imported(*mem->mem, req->offset, req->region, req->frame_offset);
        if (!b) return b.error_info();
        std::memset(block, 0, req->block_size);
        vrex::capi::block_to_c(*b, block);
        return {};
    });
}

vrex_hal_status vrex_hal_index_host_tier(vrex_hal_stream* s, const vrex_hal_imported* mem,
                                         const vrex_hal_host_tier_request* req, vrex_hal_block* block) {
    return guarded(__func__, s, [&]() -> vrex::Error {
        vrex::Stream* st = vrex::capi::stream_of(s);
        if (auto e = vrex::capi::non_null({{"stream", st}, {"mem", mem}, {"req", req}, {"block", block}}))
            return e;
        const std::size_t size = req->struct_size;
        if (size < sizeof(vrex_hal_host_tier_request))
            return invalid("host-tier request: struct_size " + std::to_string(size) + " is below the " +
                           std::to_string(sizeof(vrex_hal_host_tier_request)) + " bytes of this ABI");
        if (!zero_tail(req, sizeof(vrex_hal_host_tier_request), size))
            return invalid("host-tier request: bytes past the known struct are not zero (valid: zero)");
        if (req->block_size < sizeof(vrex_hal_block))
            return invalid("host-tier request: block_size " + std::to_string(req->block_size) +
                           " is below the " + std::to_string(sizeof(vrex_hal_block)) + " bytes of this ABI");
        if (req->flags || req->pad)
            return invalid("host-tier request: flags " + std::to_string(req->flags) + ", pad " +
                           std::to_string(req->pad) + " (valid: 0 and 0)");
        vrex::Fingerprint fp;
        fp.w[0] = req->fp[0];
        fp.w[1] = req->fp[1];
        auto b = st->index_host_tier(*mem->mem, req->offset, req->region, req->frame, fp);
        if (!b) return b.error_info();
        std::memset(block, 0, req->block_size);
        vrex::capi::block_to_c(*b, block);
        return {};
    });
}

}  // extern "C"
