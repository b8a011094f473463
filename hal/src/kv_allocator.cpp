// KV-block placement policy: device memory is taken in slabs (one BO in one bank, blocks_per_slab
// blocks each) and carved into fixed-size blocks. A frame's blocks go to a slab in the frame's bank
// group. When the group's slabs are full, a free slot elsewhere is taken (a fallback) rather than a
// new slab once the allocator holds at least a slab's worth of free slots outside the group; a new
// slab goes to the group if it has room, else to any bank (a fallback). A slab whose last block is
// freed is destroyed unless it is one of the spare_slabs empty slabs kept against churn.
#include <algorithm>

#include "block_table.hpp"
#include "vrex/hal.hpp"

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
      blocks_(std::make_unique<BlockTable>()) {
    stats_.banks.resize(device_->info().bank_count);
}

Result<std::shared_ptr<KvAllocator>> KvAllocator::create(std::shared_ptr<Device> device,
                                                         const ModelGeometry& geometry,
                                                         const AllocatorOptions& options) {
    if (!device) return std::make_error_code(std::errc::invalid_argument);
    auto bytes = geometry.block_bytes();
    if (!bytes) return device->lost_or(bytes.error());
    AllocatorOptions opts = options;
    const std::uint64_t fit = device->info().bank_size / *bytes;
    if (opts.blocks_per_slab == 0)
        opts.blocks_per_slab =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(kDefaultBlocksPerSlab, fit));
    if (opts.blocks_per_slab == 0 || opts.blocks_per_slab > fit)
        return device->lost_or(std::make_error_code(std::errc::invalid_argument));
    // Nothing else here reaches the device: an allocator on a lost device is refused now, not later.
    if (auto ec = device->lost_or({})) return ec;
    return std::make_shared<KvAllocator>(Key{}, std::move(device), geometry, *bytes, opts);
}

KvAllocator::~KvAllocator() {
    // Streams hold a reference to the allocator, so every block is released by now.
    for (const Slab& s : slabs_) (void)device_->backend().bo_destroy(s.handle);
}

Result<std::unique_ptr<Stream>> KvAllocator::create_stream(const StreamOptions& options) {
    drm_vrex_stream_create a{};
    a.flags = options.pooled ? DRM_VREX_STREAM_POOLED : 0u;
    a.pool = options.pool;
    if (auto ec = device_->backend().stream_create(a)) return ec;
    return std::make_unique<Stream>(Stream::Key{}, shared_from_this(), a.stream);
}

Result<KvAllocator::Placement> KvAllocator::new_slab_slot(std::uint64_t bank_mask) {
    Backend& be = device_->backend();
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
    Slab s;
    s.handle = a.handle;
    s.bank = a.bank;
    s.map = *map;
    // Popped from the back: the lowest slot first, so placement is deterministic.
    for (std::uint32_t i = options_.blocks_per_slab; i-- > 1;) s.free_slots.push_back(i);
    slabs_.push_back(std::move(s));
    stats_.banks[a.bank].slab_bytes += a.size;
    stats_.slabs_created++;
    return Placement{a.handle, 0, a.bank, map->subspan(0, block_bytes_)};
}

void KvAllocator::release_empty_slab(std::size_t index) {
    const Slab& s = slabs_[index];
    // Only a slab without live blocks gets here, so the device holds no address into it; should the
    // backend refuse anyway (EBUSY, device lost), the slab stays and is reused or destroyed later.
    if (device_->backend().bo_destroy(s.handle)) return;
    stats_.banks[s.bank].slab_bytes -= block_bytes_ * options_.blocks_per_slab;
    stats_.slabs_released++;
    slabs_.erase(slabs_.begin() + static_cast<std::ptrdiff_t>(index));
}

Result<KvAllocator::Placement> KvAllocator::take_slot(std::uint32_t bank_first, std::uint32_t bank_count) {
    std::lock_guard lock(mu_);
    const std::uint32_t nbanks = device_->info().bank_count;
    auto in_group = [&](std::uint32_t bank) { return bank >= bank_first && bank < bank_first + bank_count; };
    // The fullest slab with a free slot (lowest index on a tie): packing blocks lets the emptier
    // slabs drain and be released.
    auto fullest = [&](bool group) -> Slab* {
        Slab* best = nullptr;
        for (Slab& s : slabs_)
            if (in_group(s.bank) == group && !s.free_slots.empty() &&
                (!best || s.free_slots.size() < best->free_slots.size()))
                best = &s;
        return best;
    };
    auto from_slab = [&](Slab& s) {
        const std::uint32_t slot = s.free_slots.back();
        s.free_slots.pop_back();
        const std::uint64_t off = std::uint64_t{slot} * block_bytes_;
        return Placement{s.handle, off, s.bank, s.map.subspan(off, block_bytes_)};
    };
    auto account = [&](const Placement& p, bool fallback) {
        stats_.allocations++;
        stats_.fallback_allocations += fallback;
        stats_.banks[p.bank].resident_blocks++;
        stats_.banks[p.bank].resident_bytes += block_bytes_;
        return p;
    };

    if (Slab* s = fullest(true)) return account(from_slab(*s), false);
    // The group is full. Free slots stranded in other groups are taken before a new slab once they
    // add up to a slab: the memory held beyond the live blocks stays below about two slabs, and
    // placement stays in the group while the idle memory is smaller than that.
    Slab* other = fullest(false);
    std::uint64_t idle_outside = 0;
    for (const Slab& s : slabs_) idle_outside += in_group(s.bank) ? 0 : s.free_slots.size();
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
    if (!fresh) return fresh.error();
    return account(*fresh, true);
}

void KvAllocator::give_slot(std::uint32_t handle, std::uint64_t offset) {
    std::lock_guard lock(mu_);
    give_slot_locked(handle, offset);
}

void KvAllocator::give_slot_locked(std::uint32_t handle, std::uint64_t offset) {
    for (std::size_t i = 0; i < slabs_.size(); i++) {
        Slab& s = slabs_[i];
        if (s.handle != handle) continue;
        s.free_slots.push_back(static_cast<std::uint32_t>(offset / block_bytes_));
        // Keep the lowest slot on top so reuse is deterministic across backends.
        std::sort(s.free_slots.begin(), s.free_slots.end(), std::greater<>());
        stats_.banks[s.bank].resident_blocks--;
        stats_.banks[s.bank].resident_bytes -= block_bytes_;
        if (s.free_slots.size() < options_.blocks_per_slab) return;
        const auto empty = std::count_if(slabs_.begin(), slabs_.end(), [&](const Slab& e) {
            return e.free_slots.size() == options_.blocks_per_slab;
        });
        if (static_cast<std::uint64_t>(empty) > options_.spare_slabs) release_empty_slab(i);
        return;
    }
}

std::optional<KvAllocator::Placement> KvAllocator::view_locked(std::uint32_t handle, std::uint64_t offset) {
    for (const Slab& s : slabs_)
        if (s.handle == handle && offset + block_bytes_ <= s.map.size())
            return Placement{s.handle, offset, s.bank, s.map.subspan(offset, block_bytes_)};
    return std::nullopt;
}

bool KvAllocator::free_if_unreferenced_locked(BlockRec& r) {
    if (r.refs()) return false;
    give_slot_locked(r.handle, r.offset);
    blocks_->erase(r);
    return true;
}

void KvAllocator::count_lookup(const drm_vrex_shie_lookup_item& it) {
    std::lock_guard lock(mu_);
    if (!(it.hit_flags & DRM_VREX_HIT))
        stats_.misses++;
    else if (it.hit_flags & DRM_VREX_HIT_APPROX)
        stats_.approx_hits++;
    else
        stats_.hits++;
}

Result<Stats> KvAllocator::stats() {
    auto dev = device_->backend().stats();
    if (!dev) return dev.error();
    std::lock_guard lock(mu_);
    Stats s = stats_;
    s.device = *dev;
    s.resident_blocks = 0;
    s.resident_bytes = 0;
    for (const BankStats& b : s.banks) {
        s.resident_blocks += b.resident_blocks;
        s.resident_bytes += b.resident_bytes;
    }
    return s;
}

}  // namespace vrex
