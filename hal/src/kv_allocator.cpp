// KV-block placement policy: device memory is taken in slabs (one BO in one bank, blocks_per_slab
// blocks each) and carved into fixed-size blocks. A frame's blocks go to a slab in the frame's bank
// group. When the group's slabs are full, a free slot elsewhere is taken (a fallback) rather than a
// new slab once the allocator holds at least a slab's worth of free slots outside the group; a new
// slab goes to the group if it has room, else to any bank (a fallback). A slab whose last block is
// freed is destroyed unless it is one of the spare_slabs empty slabs kept against churn.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "device_impl.hpp"
#include "kv_allocator_impl.hpp"
#include "stream_impl.hpp"

namespace vrex {
namespace {

constexpr std::uint64_t kDefaultBlocksPerSlab = 16;

}  // namespace

KvAllocator::KvAllocator(Key, std::shared_ptr<Device> device, const ModelGeometry& geometry,
                         std::uint64_t block_bytes, const AllocatorOptions& options)
    : device_(std::move(device)),
      geometry_(geometry),
      block_bytes_(block_bytes),
      options_(options),
      impl_(std::make_unique<Impl>()) {
    impl_->blocks = std::make_unique<BlockTable>();
    impl_->stats.banks.resize(device_->info().bank_count);
}

Result<std::shared_ptr<KvAllocator>> KvAllocator::create(std::shared_ptr<Device> device,
                                                         const ModelGeometry& geometry,
                                                         const AllocatorOptions& options) {
    if (!device) return Error{std::errc::invalid_argument, "create KV allocator: no device"};
    auto bytes = geometry.block_bytes();
    if (!bytes)
        return Error{lost_or(*device, bytes.error()),
                     "create KV allocator: geometry (layers " + std::to_string(geometry.layers) +
                         ", kv_heads " + std::to_string(geometry.kv_heads) + ", head_dim " +
                         std::to_string(geometry.head_dim) + ", dtype " +
                         std::to_string(static_cast<std::uint32_t>(geometry.dtype)) + ", tokens_per_block " +
                         std::to_string(geometry.tokens_per_block) + ", scales " +
                         std::to_string(static_cast<std::uint32_t>(geometry.scales)) +
                         "): " + bytes.error_info().context()};
    if (options.page_aligned_blocks) {  // the stride: every block offset a page multiple
        const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
        *bytes = (*bytes + page - 1) / page * page;
    }
    AllocatorOptions opts = options;
    const std::uint64_t bank = device->info().bank_size;
    const std::uint64_t fit = bank / *bytes;
    if (fit == 0)
        return Error{lost_or(*device, errc::bad_geometry),
                     "create KV allocator: a block of " + std::to_string(*bytes) +
                         " bytes does not fit a bank of " + std::to_string(bank) +
                         " bytes (valid: blocks up to the bank size; fewer " +
                         "tokens_per_block, or a device with larger banks, e.g. emu_bank_size)"};
    if (opts.fixed_pool_blocks) {
        if (opts.fixed_pool_blocks > fit)
            return Error{lost_or(*device, std::make_error_code(std::errc::invalid_argument)),
                         "create KV allocator: fixed_pool_blocks " + std::to_string(opts.fixed_pool_blocks) +
                             " blocks of " + std::to_string(*bytes) + " bytes do not fit one bank of " +
                             std::to_string(bank) + " bytes (1.." + std::to_string(fit) +
                             ")"};
        // The pool is the only "slab": its size, so placement and statistics treat it as one.
        opts.blocks_per_slab = opts.fixed_pool_blocks;
        opts.spare_slabs = 1;
    }
    if (opts.blocks_per_slab == 0)
        opts.blocks_per_slab =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(kDefaultBlocksPerSlab, fit));
    if (opts.blocks_per_slab > fit)
        return Error{lost_or(*device, std::make_error_code(std::errc::invalid_argument)),
                     "create KV allocator: blocks_per_slab " + std::to_string(opts.blocks_per_slab) +
                         " blocks of " + std::to_string(*bytes) + " bytes do not fit a bank of " +
                         std::to_string(bank) + " bytes (valid: 0 for the default, 1.." +
                         std::to_string(fit) + ")"};
    // Nothing else here reaches the device: an allocator on a lost device is refused now, not later.
    if (auto ec = lost_or(*device, {})) return ec;
    auto a = std::make_shared<KvAllocator>(Key{}, std::move(device), geometry, *bytes, opts);
    if (opts.fixed_pool_blocks)
        if (auto r = a->reserve_pool(); !r) return r.error_info().within("create KV allocator");
    return a;
}

Result<void> KvAllocator::reserve_pool() {
    std::lock_guard lock(impl_->mu);
    const std::uint32_t nbanks = device_->info().bank_count;
    auto p = new_slab_slot(nbanks >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << nbanks) - 1);
    if (!p)
        return Error{p.error(), "reserve fixed KV pool of " + std::to_string(options_.fixed_pool_blocks) +
                                    " blocks (" + std::to_string(block_bytes_ * options_.fixed_pool_blocks) +
                                    " bytes)"};
    // new_slab_slot() handed out slot 0: the pool starts empty.
    Impl::Slab& s = impl_->slabs.back();
    s.free_slots.push_back(0);
    s.fixed = true;
    impl_->fixed_pool = true;
    return {};
}

Result<KvPool> KvAllocator::pool() {
    std::lock_guard lock(impl_->mu);
    if (!impl_->fixed_pool)
        return Error{std::make_error_code(std::errc::no_such_file_or_directory),
                     "KV pool: this allocator takes memory in slabs (AllocatorOptions::fixed_pool_blocks 0)"};
    const Impl::Slab& s = impl_->slabs.front();
    return KvPool{s.handle, s.bank, options_.fixed_pool_blocks, block_bytes_,
                  block_bytes_ * options_.fixed_pool_blocks};
}

Result<int> KvAllocator::export_pool_dmabuf() {
    std::lock_guard lock(impl_->mu);
    if (!impl_->fixed_pool)
        return Error{
            lost_or(*device_, std::make_error_code(std::errc::no_such_file_or_directory)),
            "export KV pool: this allocator takes memory in slabs (AllocatorOptions::fixed_pool_blocks 0)"};
    Impl::Slab& s = impl_->slabs.front();
    if (s.dmabuf < 0) {
        auto fd = backend_of(*device_).bo_export_dmabuf(s.handle);
        if (!fd)
            return Error{fd.error(), "PRIME export of the KV pool (BO " + std::to_string(s.handle) + ")"};
        s.dmabuf = *fd;
    }
    const int dup = ::fcntl(s.dmabuf, F_DUPFD_CLOEXEC, 0);
    if (dup < 0)
        return Error{std::error_code(errno, std::generic_category()), "dup of the KV pool's dma-buf"};
    return dup;
}

Result<std::uint32_t> KvAllocator::pool_index(const KvBlock& block) {
    std::lock_guard lock(impl_->mu);
    if (!impl_->fixed_pool)
        return Error{
            std::make_error_code(std::errc::no_such_file_or_directory),
            "pool index: this allocator takes memory in slabs (AllocatorOptions::fixed_pool_blocks 0)"};
    const BlockRec* r = impl_->blocks->find(block.id, block.generation);
    if (!r)
        return Error{errc::stale_handle, "pool index of block (id " + std::to_string(block.id) +
                                             ", generation " + std::to_string(block.generation) + ")"};
    const Impl::Slab& s = impl_->slabs.front();
    if (r->handle != s.handle)
        return Error{std::make_error_code(std::errc::invalid_argument),
                     "pool index: block (id " + std::to_string(block.id) + ") is in BO " +
                         std::to_string(r->handle) + ", the pool is BO " + std::to_string(s.handle)};
    return static_cast<std::uint32_t>(r->offset / block_bytes_);
}

KvAllocator::~KvAllocator() {
    // Streams hold a reference to the allocator, so every block is released by now.
    for (const Impl::Slab& s : impl_->slabs) {
        if (s.dmabuf >= 0) ::close(s.dmabuf);
        (void)backend_of(*device_).bo_destroy(s.handle);
    }
    // ImportedMemory objects hold the allocator and streams are gone: nothing uses these any more.
    for (const Impl::Import& i : impl_->imports) {
        if (i.dmabuf >= 0) ::close(i.dmabuf);
        (void)backend_of(*device_).bo_destroy(i.handle);
    }
}

Result<std::unique_ptr<Stream>> KvAllocator::create_stream(const StreamOptions& options) {
    drm_vrex_stream_create a{};
    a.flags = options.pooled ? DRM_VREX_STREAM_POOLED : 0u;
    a.pool = options.pool;
    if (auto ec = backend_of(*device_).stream_create(a))
        return Error{ec, options.pooled ? "create stream (pool " + std::to_string(options.pool) + ")"
                                        : "create stream"};
    auto s = std::make_unique<Stream>(Stream::Key{}, shared_from_this(), a.stream);
    s->impl_->publish_at_end_frame_ = options.publish_at_end_frame;
    return s;
}

Result<KvAllocator::Placement> KvAllocator::new_slab_slot(std::uint64_t bank_mask) {
    // The fixed pool is all the memory there is: full means full.
    if (impl_->fixed_pool)
        return Error{std::make_error_code(std::errc::no_space_on_device),
                     "fixed KV pool of " + std::to_string(options_.fixed_pool_blocks) + " blocks full"};
    Backend& be = backend_of(*device_);
    drm_vrex_bo_create a{};
    a.size = block_bytes_ * options_.blocks_per_slab;
    a.bank_mask = bank_mask;
    a.flags = DRM_VREX_BO_KV;
    if (auto ec = be.bo_create(a)) return ec;
    auto map = be.bo_map(a.handle);
    if (!map) {
        (void)be.bo_destroy(a.handle);
        return map.error();
    }
    Impl::Slab s;
    s.handle = a.handle;
    s.bank = a.bank;
    s.map = *map;
    // Popped from the back: the lowest slot first, so placement is deterministic.
    for (std::uint32_t i = options_.blocks_per_slab; i-- > 1;) s.free_slots.push_back(i);
    impl_->slabs.push_back(std::move(s));
    impl_->stats.banks[a.bank].slab_bytes += a.size;
    impl_->stats.slabs_created++;
    return Placement{a.handle, 0, a.bank, map->subspan(0, block_bytes_)};
}

void KvAllocator::release_empty_slab(std::size_t index) {
    Impl::Slab& s = impl_->slabs[index];
    if (s.dmabuf >= 0) {  // exporters hold their own dups; this one only served later exports
        ::close(s.dmabuf);
        s.dmabuf = -1;
    }
    // Only a slab without live blocks gets here, so the device holds no address into it; should the
    // backend refuse anyway (EBUSY, device lost), the slab stays and is reused or destroyed later.
    if (backend_of(*device_).bo_destroy(s.handle)) return;
    impl_->stats.banks[s.bank].slab_bytes -= block_bytes_ * options_.blocks_per_slab;
    impl_->stats.slabs_released++;
    impl_->slabs.erase(impl_->slabs.begin() + static_cast<std::ptrdiff_t>(index));
}

Result<KvAllocator::Placement> KvAllocator::take_slot(std::uint32_t bank_first, std::uint32_t bank_count) {
    std::lock_guard lock(impl_->mu);
    const std::uint32_t nbanks = device_->info().bank_count;
    auto in_group = [&](std::uint32_t bank) { return bank >= bank_first && bank < bank_first + bank_count; };
    // The fullest slab with a free slot (lowest index on a tie): packing blocks lets the emptier
    // slabs drain and be released.
    auto fullest = [&](bool group) -> Impl::Slab* {
        Impl::Slab* best = nullptr;
        for (Impl::Slab& s : impl_->slabs)
            if (in_group(s.bank) == group && !s.free_slots.empty() &&
                (!best || s.free_slots.size() < best->free_slots.size()))
                best = &s;
        return best;
    };
    auto from_slab = [&](Impl::Slab& s) {
        const std::uint32_t slot = s.free_slots.back();
        s.free_slots.pop_back();
        const std::uint64_t off = std::uint64_t{slot} * block_bytes_;
        return Placement{s.handle, off, s.bank, s.map.subspan(off, block_bytes_)};
    };
    auto account = [&](const Placement& p, bool fallback) {
        impl_->stats.allocations++;
        impl_->stats.fallback_allocations += fallback;
        impl_->stats.banks[p.bank].resident_blocks++;
        impl_->stats.banks[p.bank].resident_bytes += block_bytes_;
        return p;
    };

    if (impl_->fixed_pool) {  // one bank: no group to prefer, and no fallback to count
        Impl::Slab& pool = impl_->slabs.front();
        if (!pool.free_slots.empty()) return account(from_slab(pool), false);
        return Error{std::make_error_code(std::errc::no_space_on_device),
                     "fixed KV pool of " + std::to_string(options_.fixed_pool_blocks) + " blocks full"};
    }
    if (Impl::Slab* s = fullest(true)) return account(from_slab(*s), false);
    // The group is full. Free slots stranded in other groups are taken before a new slab once they
    // add up to a slab: the memory held beyond the live blocks stays below about two slabs, and
    // placement stays in the group while the idle memory is smaller than that.
    Impl::Slab* other = fullest(false);
    std::uint64_t idle_outside = 0;
    for (const Impl::Slab& s : impl_->slabs) idle_outside += in_group(s.bank) ? 0 : s.free_slots.size();
    if (other && idle_outside >= options_.blocks_per_slab) return account(from_slab(*other), true);

    std::uint64_t group_mask = 0;
    for (std::uint32_t b = bank_first; b < bank_first + bank_count && b < nbanks; b++)
        group_mask |= std::uint64_t{1} << b;
    auto fresh = new_slab_slot(group_mask);
    if (fresh) return account(*fresh, false);
    if (fresh.error() != std::errc::no_space_on_device) return fresh.error();

    // No room for a slab in the group: any bank, preferring memory already held.
    if (other) return account(from_slab(*other), true);
    const std::uint64_t all = nbanks >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << nbanks) - 1;
    fresh = new_slab_slot(all);
    if (!fresh) {
        const std::string group = "bank group (banks " + std::to_string(bank_first) + ".." +
                                  std::to_string(bank_first + bank_count - 1) + ")";
        if (fresh.error() == std::errc::no_space_on_device)
            return Error{fresh.error(), group + " full and no device memory left for a slab of " +
                                            std::to_string(block_bytes_ * options_.blocks_per_slab) +
                                            " bytes"};
        return Error{fresh.error(), group + ": create slab"};
    }
    return account(*fresh, true);
}

void KvAllocator::give_slot(std::uint32_t handle, std::uint64_t offset) {
    std::lock_guard lock(impl_->mu);
    give_slot_locked(handle, offset);
}

void KvAllocator::give_slot_locked(std::uint32_t handle, std::uint64_t offset) {
    for (std::size_t i = 0; i < impl_->slabs.size(); i++) {
        Impl::Slab& s = impl_->slabs[i];
        if (s.handle != handle) continue;
        s.free_slots.push_back(static_cast<std::uint32_t>(offset / block_bytes_));
        // Keep the lowest slot on top so reuse is deterministic across backends.
        std::sort(s.free_slots.begin(), s.free_slots.end(), std::greater<>());
        impl_->stats.banks[s.bank].resident_blocks--;
        impl_->stats.banks[s.bank].resident_bytes -= block_bytes_;
        if (s.fixed || s.free_slots.size() < options_.blocks_per_slab) return;
        const auto empty = std::count_if(impl_->slabs.begin(), impl_->slabs.end(), [&](const Impl::Slab& e) {
            return e.free_slots.size() == options_.blocks_per_slab;
        });
        if (static_cast<std::uint64_t>(empty) > options_.spare_slabs) release_empty_slab(i);
        return;
    }
}

std::optional<KvAllocator::Placement> KvAllocator::view_locked(std::uint32_t handle, std::uint64_t offset) {
    for (const Impl::Slab& s : impl_->slabs)
        if (s.handle == handle && offset + block_bytes_ <= s.map.size())
            return Placement{s.handle, offset, s.bank, s.map.subspan(offset, block_bytes_)};
    if (const Impl::Import* i = impl_->find_import(handle); i && offset + block_bytes_ <= i->map.size())
        return Placement{handle, offset, DRM_VREX_BANK_NONE, i->map.subspan(offset, block_bytes_)};
    return std::nullopt;
}

bool KvAllocator::free_if_unreferenced_locked(BlockRec& r) {
    if (r.refs()) return false;
    if (r.imported) {
        // Engine-owned memory is never given out: the record goes, and with its last block and
        // ImportedMemory object the import itself.
        const std::uint32_t handle = r.handle;
        impl_->blocks->erase(r);
        if (Impl::Import* i = impl_->find_import(handle)) {
            i->blocks--;
            impl_->drop_import_if_unused_locked(backend_of(*device_), handle);
        }
        return true;
    }
    give_slot_locked(r.handle, r.offset);
    impl_->blocks->erase(r);
    return true;
}

void KvAllocator::count_lookup(bool hit, bool approximate) {
    std::lock_guard lock(impl_->mu);
    if (!hit)
        impl_->stats.misses++;
    else if (approximate)
        impl_->stats.approx_hits++;
    else
        impl_->stats.hits++;
}

Result<Stats> KvAllocator::stats() {
    auto dev = backend_of(*device_).stats();
    if (!dev) return dev.error();
    std::lock_guard lock(impl_->mu);
    Stats s = impl_->stats;
    s.device = to_device_stats(*dev);
    s.resident_blocks = 0;
    s.resident_bytes = 0;
    for (const BankStats& b : s.banks) {
        s.resident_blocks += b.resident_blocks;
        s.resident_bytes += b.resident_bytes;
    }
    return s;
}

}  // namespace vrex
