#include <algorithm>
#include <cstring>

#include "vrex/hal.hpp"

namespace vrex {
namespace {

std::error_code item_error(std::int32_t result) { return {-result, std::generic_category()}; }

}  // namespace

Stream::Stream(Key, std::shared_ptr<KvAllocator> alloc, std::uint32_t id) : alloc_(std::move(alloc)), id_(id) {}

Stream::~Stream()
{
    Backend& be = alloc_->device().backend();
    // Closing the stream releases its blocks on the device; their slots return to the allocator.
    (void)be.stream_destroy(id_);
    for (const auto& [block, o] : owned_)
        alloc_->give_slot(o.handle, o.offset);
    if (staging_handle_)
        (void)be.bo_destroy(staging_handle_);
}

std::error_code Stream::local_error(std::error_code ec) { return alloc_->device().lost_or(ec); }

Result<drm_vrex_frame_submit> Stream::stage_frame(const LumaView& luma)
{
    if (in_frame_)
        return local_error(std::make_error_code(std::errc::device_or_resource_busy));
    if (!luma.data || luma.stride < luma.width || !luma.width || !luma.height)
        return local_error(std::make_error_code(std::errc::invalid_argument));
    Backend& be = alloc_->device().backend();

    // The FCC reads the plane from device memory: stage it, packed (stride = width).
    const std::uint64_t bytes = std::uint64_t{luma.width} * luma.height;
    if (bytes > staging_size_) {
        if (staging_handle_) {
            (void)be.bo_destroy(staging_handle_);
            staging_handle_ = 0;
            staging_size_ = 0;
        }
        const std::uint32_t nbanks = alloc_->device().info().bank_count;
        drm_vrex_bo_create a{};
        a.size = bytes;
        a.bank_mask = nbanks >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << nbanks) - 1;
        a.flags = DRM_VREX_BO_STAGING;
        if (auto ec = be.bo_create(a))
            return ec;
        staging_handle_ = a.handle;
        staging_size_ = bytes;
    }
    auto map = be.bo_map(staging_handle_);
    if (!map)
        return map.error();
    for (std::uint32_t y = 0; y < luma.height; y++)
        std::memcpy(map->data() + std::uint64_t{y} * luma.width, luma.data + std::uint64_t{y} * luma.stride,
                    luma.width);

    drm_vrex_frame_submit f{};
    f.stream = id_;
    f.handle = staging_handle_;
    f.width = luma.width;
    f.height = luma.height;
    f.stride = luma.width;
    return f;
}

FrameInfo Stream::enter_frame(const drm_vrex_frame_submit& f)
{
    frame_.fp.w[0] = f.fp[0];
    frame_.fp.w[1] = f.fp[1];
    frame_.frame = f.frame;
    frame_.group = f.group;
    frame_.bank_first = f.bank_first;
    frame_.bank_count = f.bank_count;
    frame_.opened_group = f.result_flags & DRM_VREX_FRAME_OPENED_GROUP;
    frame_.conflict = f.result_flags & DRM_VREX_FRAME_CONFLICT;
    in_frame_ = true;
    return frame_;
}

Result<FrameInfo> Stream::begin_frame(const LumaView& luma)
{
    auto f = stage_frame(luma);
    if (!f)
        return f.error();
    if (auto ec = alloc_->device().backend().frame_submit(*f))
        return ec;
    return enter_frame(*f);
}

Result<std::vector<KvBlock>> Stream::allocate_batch(std::span<const std::uint32_t> regions, std::int32_t frame_offset)
{
    if (!in_frame_)
        return local_error(errc::not_in_frame);
    if (regions.empty()) {
        if (auto ec = local_error({}))
            return ec;
        return std::vector<KvBlock>{};
    }
    const std::uint32_t max_batch = std::max<std::uint32_t>(1, alloc_->device().info().max_batch);
    std::vector<KvBlock> out;
    out.reserve(regions.size());
    for (std::size_t start = 0; start < regions.size(); start += max_batch) {
        const std::size_t n = std::min<std::size_t>(max_batch, regions.size() - start);
        std::vector<KvAllocator::Placement> places;
        std::vector<drm_vrex_shie_insert_item> items(n);
        for (std::size_t i = 0; i < n; i++) {
            auto p = alloc_->take_slot(frame_.bank_first, frame_.bank_count);
            if (!p) {
                for (const auto& q : places)
                    alloc_->give_slot(q.handle, q.offset);
                return p.error();
            }
            places.push_back(*p);
            drm_vrex_shie_insert_item& it = items[i];
            it.fp[0] = frame_.fp.w[0];
            it.fp[1] = frame_.fp.w[1];
            it.handle = p->handle;
            it.offset = p->offset;
            it.length = alloc_->block_bytes();
            it.region = regions[start + i];
            it.frame_offset = frame_offset;
        }
        auto ec = alloc_->device().backend().shie_insert(id_, items);
        std::error_code first_error = ec;
        // ETIMEDOUT/EIO: the kernel stopped the batch at a failed command; items before it were
        // applied (result 0) and their blocks exist. Any other error applied nothing.
        const bool per_item = !ec || ec == std::errc::timed_out || ec == std::errc::io_error;
        for (std::size_t i = 0; i < n; i++) {
            if (!per_item || items[i].result) {
                alloc_->give_slot(places[i].handle, places[i].offset);
                if (!first_error)
                    first_error = item_error(items[i].result);
                continue;
            }
            owned_[items[i].block] = Owned{places[i].handle, places[i].offset};
            KvBlock b;
            b.id = items[i].block;
            b.data = places[i].data;
            b.bank = places[i].bank;
            b.handle = places[i].handle;
            b.offset = places[i].offset;
            b.frame = static_cast<std::uint32_t>(static_cast<std::int64_t>(frame_.frame) + frame_offset);
            b.region = items[i].region;
            out.push_back(b);
        }
        // A partial batch leaves the inserted blocks in place (they are owned and will age out);
        // the caller learns about the first failure.
        if (first_error)
            return first_error;
    }
    return out;
}

Result<KvBlock> Stream::allocate(std::uint32_t region, std::int32_t frame_offset)
{
    const std::uint32_t r[1] = {region};
    auto v = allocate_batch(r, frame_offset);
    if (!v)
        return v.error();
    return v->front();
}

Result<void> Stream::reuse(std::uint32_t region, const KvBlock& block, std::int32_t frame_offset)
{
    if (!in_frame_)
        return local_error(errc::not_in_frame);
    drm_vrex_shie_insert_item it{};
    it.fp[0] = frame_.fp.w[0];
    it.fp[1] = frame_.fp.w[1];
    it.flags = DRM_VREX_INSERT_ALIAS;
    it.region = region;
    it.frame_offset = frame_offset;
    it.block = block.id;
    if (auto ec = alloc_->device().backend().shie_insert(id_, std::span(&it, 1)))
        return ec;
    if (it.result)
        return item_error(it.result);
    return {};
}

KvBlock Stream::block_from_lookup(const drm_vrex_shie_lookup_item& it)
{
    KvBlock b;
    b.id = it.block;
    b.handle = it.handle;
    b.offset = it.offset;
    b.frame = it.frame;
    b.region = it.region;
    if (auto p = alloc_->view(it.handle, it.offset)) {
        b.data = p->data;
        b.bank = p->bank;
    }
    return b;
}

Result<std::vector<Retrieval>> Stream::retrieve_batch(std::span<const Query> queries)
{
    if (queries.empty()) {
        if (auto ec = local_error({}))
            return ec;
        return std::vector<Retrieval>{};
    }
    std::vector<Retrieval> out;
    out.reserve(queries.size());
    const std::uint32_t max_batch = std::max<std::uint32_t>(1, alloc_->device().info().max_batch);
    for (std::size_t start = 0; start < queries.size(); start += max_batch) {
        const std::size_t n = std::min<std::size_t>(max_batch, queries.size() - start);
        std::vector<drm_vrex_shie_lookup_item> items(n);
        for (std::size_t i = 0; i < n; i++) {
            const Query& q = queries[start + i];
            drm_vrex_shie_lookup_item& it = items[i];
            it.region = q.region;
            if (q.kind == Query::Kind::temporal) {
                it.kind = DRM_VREX_LOOKUP_TEMPORAL;
                it.frame_offset = q.frame_offset;
            } else {
                it.kind = DRM_VREX_LOOKUP_SIMILAR;
                it.fp[0] = q.fp.w[0];
                it.fp[1] = q.fp.w[1];
                it.radius = q.radius;
                it.flags = (q.scope == Scope::pool ? DRM_VREX_LOOKUP_SCOPE_POOL : 0u) |
                           (q.past_only ? DRM_VREX_LOOKUP_PAST_ONLY : 0u);
            }
        }
        if (auto ec = alloc_->device().backend().shie_lookup(id_, items))
            return ec;
        for (const drm_vrex_shie_lookup_item& it : items) {
            alloc_->count_lookup(it);
            Retrieval r;
            r.hit = it.hit_flags & DRM_VREX_HIT;
            if (r.hit) {
                r.approximate = it.hit_flags & DRM_VREX_HIT_APPROX;
                r.distance = it.distance;
                r.frame = it.frame;
                r.stream = it.stream;
                r.fp.w[0] = it.found_fp[0];
                r.fp.w[1] = it.found_fp[1];
                r.block = block_from_lookup(it);
            }
            out.push_back(r);
        }
    }
    return out;
}

Result<Retrieval> Stream::retrieve_temporal(std::uint32_t region, std::int32_t frame_offset)
{
    const Query q[1] = {Query::temporal(region, frame_offset)};
    auto v = retrieve_batch(q);
    if (!v)
        return v.error();
    return v->front();
}

Result<Retrieval> Stream::retrieve_similar(std::uint32_t region, const Fingerprint& fp, std::uint32_t radius,
                                           Scope scope, bool past_only)
{
    const Query q[1] = {Query::similar(region, fp, radius, scope, past_only)};
    auto v = retrieve_batch(q);
    if (!v)
        return v.error();
    return v->front();
}

Result<void> Stream::release(const KvBlock& block)
{
    if (!in_frame_)
        return local_error(errc::not_in_frame);
    if (!owned_.count(block.id))
        return local_error(std::make_error_code(std::errc::no_such_file_or_directory));
    // Nothing reaches the device before end_frame(): ask it, so a lost device is reported here.
    if (auto ec = local_error({}))
        return ec;
    if (std::find(pending_release_.begin(), pending_release_.end(), block.id) == pending_release_.end())
        pending_release_.push_back(block.id);
    return {};
}

Result<std::uint32_t> Stream::end_frame()
{
    if (!in_frame_)
        return local_error(errc::not_in_frame);
    Backend& be = alloc_->device().backend();
    std::vector<drm_vrex_released_block> released(owned_.size());
    std::uint32_t count = 0;
    auto ec = be.shie_retire(id_, pending_release_, released, count);
    if (ec == std::errc::no_space_on_device) {
        // owned_ mirrors the stream's live blocks; should they ever differ, the device says how many.
        released.resize(count);
        ec = be.shie_retire(id_, pending_release_, released, count);
    }
    if (ec)
        return ec;
    pending_release_.clear();
    in_frame_ = false;
    std::uint64_t zombies = 0;
    std::uint64_t removed = 0;
    for (std::uint32_t i = 0; i < count; i++) {
        const drm_vrex_released_block& r = released[i];
        owned_.erase(r.block);
        alloc_->give_slot(r.handle, r.offset);
        (r.reason == DRM_VREX_RELEASE_ZOMBIE ? zombies : removed)++;
    }
    {
        std::lock_guard lock(alloc_->mu_);
        alloc_->stats_.evictions += zombies;
        alloc_->stats_.removed += removed;
    }
    return count;
}

Result<int> Stream::export_dmabuf(const KvBlock& block)
{
    return alloc_->device().backend().bo_export_dmabuf(block.handle);
}

}  // namespace vrex
