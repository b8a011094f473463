// Engine-owned KV memory (vrex/imported_memory.hpp): PRIME import of an engine's dma-buf, and KV
// blocks indexed at offsets inside it. The memory is never the allocator's: no slot, no slab, no
// bank; the block records are flagged imported so a release reports memory_freed = false and the
// record's end drops its use of the import (kv_allocator.cpp free_if_unreferenced_locked()).
#include "vrex/imported_memory.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>

#include "device_impl.hpp"
#include "kv_allocator_impl.hpp"
#include "stream_impl.hpp"
#include "vrex/vrex_hal.h"

namespace vrex {

static_assert(kNoBank == DRM_VREX_BANK_NONE && VREX_HAL_BANK_NONE == DRM_VREX_BANK_NONE);

ImportedMemory::ImportedMemory(Key, std::shared_ptr<KvAllocator> alloc, std::uint32_t handle,
                               std::uint64_t size, std::span<std::byte> map)
    : alloc_(std::move(alloc)), handle_(handle), size_(size), map_(map) {}

ImportedMemory::~ImportedMemory() {
    std::lock_guard lock(alloc_->impl_->mu);
    if (KvAllocator::Impl::Import* i = alloc_->impl_->find_import(handle_)) {
        i->users--;
        // Blocks indexed into the buffer keep it (and their views) until they are gone.
        alloc_->impl_->drop_import_if_unused_locked(backend_of(alloc_->device()), handle_);
    }
}

std::uint32_t ImportedMemory::blocks() const {
    std::lock_guard lock(alloc_->impl_->mu);
    const KvAllocator::Impl::Import* i = alloc_->impl_->find_import(handle_);
    return i ? i->blocks : 0;
}

Result<std::unique_ptr<ImportedMemory>> KvAllocator::import_memory(int dmabuf_fd) {
    const std::string what = "import memory (fd " + std::to_string(dmabuf_fd) + ")";
    Backend& be = backend_of(*device_);
    auto bo = be.bo_import_dmabuf(dmabuf_fd);
    if (!bo) return bo.error_info().within(what + ": PRIME import");
    if (bo->own)
        return Error{std::make_error_code(std::errc::invalid_argument),
                     what + ": the dma-buf is vrex memory of this device (BO " + std::to_string(bo->handle) +
                         "): index its blocks where they are"};
    std::lock_guard lock(impl_->mu);
    if (Impl::Import* i = impl_->find_import(bo->handle)) {
        // The same buffer again (the file's PRIME cache gave the same handle): one record, one
        // Backend reference; the one this import took goes back.
        (void)be.bo_destroy(bo->handle);
        i->users++;
        return std::make_unique<ImportedMemory>(ImportedMemory::Key{}, shared_from_this(), i->handle, i->size,
                                                i->map);
    }
    auto undo = [&](Error e) -> Error {
        (void)be.bo_destroy(bo->handle);
        return e;
    };
    auto map = be.bo_map(bo->handle);
    if (!map) return undo(map.error_info().within(what + ": map the buffer"));
    const int dup = ::fcntl(dmabuf_fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) return undo(Error{std::error_code(errno, std::generic_category()), what + ": dup"});
    Impl::Import rec;
    rec.handle = bo->handle;
    rec.size = bo->size;
    rec.map = *map;
    rec.dmabuf = dup;
    rec.users = 1;
    impl_->imports.push_back(rec);
    return std::make_unique<ImportedMemory>(ImportedMemory::Key{}, shared_from_this(), rec.handle, rec.size,
                                            rec.map);
}

Result<KvBlock> Stream::index_imported(const ImportedMemory& memory, std::uint64_t offset,
                                       std::uint32_t region, std::int32_t frame_offset) {
    return impl_->index_imported(memory, offset, region, frame_offset);
}

Result<KvBlock> Stream::index_host_tier(const ImportedMemory& memory, std::uint64_t offset,
                                        std::uint32_t region, std::uint32_t frame, const Fingerprint& fp) {
    return impl_->index_host_tier(memory, offset, region, frame, fp);
}

Result<KvBlock> Stream::Impl::index_imported(const ImportedMemory& memory, std::uint64_t offset,
                                             std::uint32_t region, std::int32_t frame_offset) {
    const std::string what = "index imported block at offset " + std::to_string(offset) + " of BO " +
                             std::to_string(memory.handle());
    if (!in_frame_) return Error{local_error(errc::not_in_frame), "no open frame"}.within(where(what));
    return insert_imported(memory, offset, region, frame_offset, frame_.fp, 0, what);
}

namespace {
std::uint64_t host_slot_key(std::uint32_t handle, std::uint64_t offset) {
    return (std::uint64_t{handle} << 40) ^ offset;  // offsets of one import stay below 2^40 bytes
}
}  // namespace

Result<KvBlock> Stream::Impl::index_host_tier(const ImportedMemory& memory, std::uint64_t offset,
                                              std::uint32_t region, std::uint32_t frame,
                                              const Fingerprint& fp) {
    const std::string what = "index host-tier block of frame " + std::to_string(frame) + ", region " +
                             std::to_string(region) + " at offset " + std::to_string(offset) + " of BO " +
                             std::to_string(memory.handle());
    auto fail = [&](std::error_code ec, const std::string& why) -> Error {
        return Error{local_error(ec), why}.within(where(what));
    };
    if (!in_frame_) return fail(errc::not_in_frame, "no open frame");
    const auto einval = std::make_error_code(std::errc::invalid_argument);
    if (frame > frame_.frame)
        return fail(einval, "frame " + std::to_string(frame) + " is past the current frame " +
                                std::to_string(frame_.frame));
    if (memory.alloc_ != alloc_) return fail(einval, "the memory was imported by another allocator");
    if (offset >= (std::uint64_t{1} << 40))
        return fail(einval, "offset is past the 1 TiB a host tier may span");
    // Slot reuse: the block indexed here before is retired now, so no lookup can find it once its
    // bytes are overwritten (the caller writes the new block's bytes before this call).
    const std::uint64_t slot = host_slot_key(memory.handle(), offset);
    std::optional<std::uint32_t> old;
    {
        std::lock_guard lock(alloc_->impl_->mu);
        if (auto it = host_slots_.find(slot); it != host_slots_.end()) {
            if (const BlockRec* r = alloc_->impl_->blocks->find(it->second); r && r->device_live)
                old = r->id;
            else
                host_slots_.erase(it);
        }
        if (!old && alloc_->impl_->blocks->slot_taken(memory.handle(), offset))
            return fail(std::make_error_code(std::errc::device_or_resource_busy),
                        "a block that is not this stream's host-tier block is indexed there");
    }
    if (old) {
        const std::uint32_t ids[1] = {*old};
        auto recs = retire(ids);
        if (!recs) return recs.error_info().within(where(what + ": retire the slot's previous block"));
        apply_releases(*recs, false);
        host_slots_.erase(slot);
    }
    const auto off = static_cast<std::int32_t>(static_cast<std::int64_t>(frame) - frame_.frame);
    auto b = insert_imported(memory, offset, region, off, fp, DRM_VREX_INSERT_HOST_TIER, what);
    if (!b) return b;
    host_slots_[slot] = BlockTable::key(b->id, b->generation);
    return b;
}

Result<KvBlock> Stream::Impl::insert_imported(const ImportedMemory& memory, std::uint64_t offset,
                                              std::uint32_t region, std::int32_t frame_offset,
                                              const Fingerprint& fp, std::uint32_t flags,
                                              const std::string& what) {
    const std::uint64_t bytes = alloc_->block_bytes();
    auto fail = [&](std::error_code ec, const std::string& why) -> Error {
        return Error{ec, why}.within(where(what));
    };
    const auto einval = std::make_error_code(std::errc::invalid_argument);
    if (memory.alloc_ != alloc_)
        return fail(local_error(einval), "the memory was imported by another allocator");
    if (offset % ModelGeometry::kBlockAlign)
        return fail(local_error(einval),
                    "offset is not a multiple of " + std::to_string(ModelGeometry::kBlockAlign) + " bytes");
    if (offset > memory.size() || bytes > memory.size() - offset)
        return fail(local_error(einval), "a block of " + std::to_string(bytes) +
                                             " bytes there ends past the " + std::to_string(memory.size()) +
                                             "-byte buffer");

    drm_vrex_shie_insert_item it{};
    it.fp[0] = fp.w[0];
    it.fp[1] = fp.w[1];
    it.handle = memory.handle();
    it.flags = flags;
    it.offset = offset;
    it.length = bytes;
    it.region = region;
    it.frame_offset = frame_offset;
    if (auto ec = backend_of(alloc_->device()).shie_insert(id_, std::span(&it, 1)))
        return fail(ec, (flags & DRM_VREX_INSERT_HOST_TIER) ? "SHIE insert (host tier: needs vrex uAPI 1.4)"
                                                            : "SHIE insert");
    if (it.result)
        return fail(std::error_code(-it.result, std::generic_category()),
                    "SHIE insert (frame offset " + std::to_string(frame_offset) + ", region " +
                        std::to_string(region) + ")");

    const auto frame = static_cast<std::uint32_t>(static_cast<std::int64_t>(frame_.frame) + frame_offset);
    std::lock_guard lock(alloc_->impl_->mu);
    KvAllocator::Impl::Import* im = alloc_->impl_->find_import(memory.handle());  // @memory keeps it
    BlockRec& r =
        alloc_->impl_->blocks->add(it.block, memory.handle(), offset, DRM_VREX_BANK_NONE, id_, token_);
    r.imported = true;
    r.device_gen = it.block_gen;
    r.bo_gen = it.bo_gen;
    im->blocks++;
    alloc_->impl_->blocks->touch(r, token_, frame_.frame);
    unpublished_.push_back(BlockTable::key(r.id, r.gen));
    KvBlock b;
    b.id = r.id;
    b.generation = r.gen;
    b.view = im->map.subspan(offset, bytes);
    b.shared = !r.writable_by(token_);
    if (!b.shared) b.data = im->map.subspan(offset, bytes);
    b.bank = DRM_VREX_BANK_NONE;
    b.handle = r.handle;
    b.offset = offset;
    b.frame = frame;
    b.region = region;
    return b;
}

}  // namespace vrex
