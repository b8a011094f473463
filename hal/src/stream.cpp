#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <string>
#include <tuple>

#include "device_impl.hpp"
#include "kv_allocator_impl.hpp"
#include "lookup_answer.hpp"
#include "stream_impl.hpp"

namespace vrex {
namespace {

std::error_code item_error(std::int32_t result) {
    return {-result, std::generic_category()};
}

// Segment blocks (segment.cpp) have no SHIE entry and their positions follow the segment.
constexpr const char* kSegmentBlock = "is a segment block (Segment::truncate or close releases it)";
// Another stream's block before its owner published it (docs/hal.md "Concurrency and publication").
constexpr const char* kUnpublished = "is another stream's block and not published yet";

}  // namespace

struct Stream::Impl::State {
    std::vector<std::uint32_t> pending_release;             // owned device ids to remove at end_frame
    std::unordered_set<std::uint64_t> holds;                // others' blocks referenced this frame
    std::unordered_map<std::uint64_t, std::uint32_t> pins;  // block key -> pins of this stream
    std::vector<ReleasedBlock> released;                    // since the previous end_frame
    ReleaseCallback callback;
    int event_fd = -1;

    State() = default;
    State(const State&) = delete;
    State& operator=(const State&) = delete;
    ~State() {
        if (event_fd >= 0) close(event_fd);
    }
};

Stream::Impl::Impl(std::shared_ptr<KvAllocator> alloc, std::uint32_t id)
    : alloc_(std::move(alloc)),
      id_(id),
      token_([this] {
          std::lock_guard lock(alloc_->impl_->mu);
          return ++alloc_->impl_->next_stream_token;
      }()),
      st_(std::make_unique<State>()) {}

Stream::Impl::~Impl() {
    Backend& be = backend_of(alloc_->device());
    // Closing the stream releases its blocks on the device. Their memory returns to the allocator
    // unless another stream still references it; this stream's own references go now.
    //
    // The device first: once it dropped the entries, no lookup can find these blocks, and only then
    // may their slots go back. From that moment the device may give id_ to a stream created on
    // another thread, so what follows names this stream by its incarnation (token_), never by id_:
    // the new stream's blocks and segments are not this stream's.
    (void)be.stream_destroy(id_);
    {
        std::lock_guard lock(alloc_->impl_->mu);
        BlockTable& t = *alloc_->impl_->blocks;
        SegmentOps::close_stream_locked(*alloc_, token_);
        std::vector<std::uint64_t> touched = t.owned_live_keys(token_);
        for (std::uint64_t k : touched)
            if (BlockRec* r = t.find(k)) t.set_dead(*r);
        for (std::uint64_t k : st_->holds)
            if (BlockRec* r = t.find(k)) {
                r->holds--;
                touched.push_back(k);
            }
        for (const auto& [k, n] : st_->pins)
            if (BlockRec* r = t.find(k)) {
                r->pins -= n;
                if (r->owner_token != token_) r->foreign_pins -= n;
                touched.push_back(k);
            }
        for (std::uint64_t k : touched)
            if (BlockRec* r = t.find(k)) (void)alloc_->free_if_unreferenced_locked(*r);
    }
    if (staging_handle_) (void)be.bo_destroy(staging_handle_);
}

std::error_code Stream::Impl::local_error(std::error_code ec) {
    return lost_or(alloc_->device(), ec);
}

Result<drm_vrex_frame_submit> Stream::Impl::stage_frame(const LumaView& luma) {
    if (in_frame_)
        return Error{local_error(std::make_error_code(std::errc::device_or_resource_busy)),
                     "frame " + std::to_string(frame_.frame) + " is still open (end_frame first)"};
    if (!luma.data || luma.stride < luma.width || !luma.width || !luma.height)
        return Error{local_error(std::make_error_code(std::errc::invalid_argument)),
                     "luma plane " + std::to_string(luma.width) + "x" + std::to_string(luma.height) +
                         ", stride " + std::to_string(luma.stride) + (luma.data ? "" : ", no data")};
    Backend& be = backend_of(alloc_->device());

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
        if (auto ec = be.bo_create(a)) return ec;
        staging_handle_ = a.handle;
        staging_size_ = bytes;
    }
    auto map = be.bo_map(staging_handle_);
    if (!map) return map.error();
    for (std::uint32_t y = 0; y < luma.height; y++)
        std::memcpy(map->data() + std::uint64_t{y} * luma.width, luma.data + std::uint64_t{y} * luma.stride,
                    luma.width);

    drm_vrex_frame_submit f{};
    f.stream = id_;
    f.handle = staging_handle_;
    f.width = luma.width;
    f.height = luma.height;
    f.stride = luma.width;
    // A vrex.ko before uAPI 1.5 handles only the first 96 bytes and the DRM core copies the rest back
    // as sent: the region motion then reads "unknown" (a motion gate refuses every region).
    std::fill(std::begin(f.region_motion), std::end(f.region_motion), kRegionMotionUnknown);
    return f;
}

FrameInfo Stream::Impl::enter_frame(const drm_vrex_frame_submit& f) {
    frame_.fp.w[0] = f.fp[0];
    frame_.fp.w[1] = f.fp[1];
    frame_.frame = f.frame;
    frame_.group = f.group;
    frame_.bank_first = f.bank_first;
    frame_.bank_count = f.bank_count;
    frame_.opened_group = f.result_flags & DRM_VREX_FRAME_OPENED_GROUP;
    frame_.conflict = f.result_flags & DRM_VREX_FRAME_CONFLICT;
    static_assert(sizeof(f.region_motion) == std::tuple_size_v<decltype(frame_.region_motion)>);
    std::copy(std::begin(f.region_motion), std::end(f.region_motion), frame_.region_motion.begin());
    in_frame_ = true;
    return frame_;
}

Result<FrameInfo> Stream::Impl::do_begin_frame(const LumaView& luma) {
    auto f = stage_frame(luma);
    if (!f) return f.error_info();
    if (auto ec = backend_of(alloc_->device()).frame_submit(*f))
        return Error{ec,
                     "submit " + std::to_string(luma.width) + "x" + std::to_string(luma.height) + " frame"};
    return enter_frame(*f);
}

namespace {

KvBlock make_block(const BlockRec& r, std::span<std::byte> mem, std::uint64_t stream, std::uint32_t frame,
                   std::uint32_t region) {
    KvBlock b;
    b.id = r.id;
    b.generation = r.gen;
    b.view = mem;
    b.shared = !r.writable_by(stream);
    if (!b.shared) b.data = mem;
    b.bank = r.bank;
    b.handle = r.handle;
    b.offset = r.offset;
    b.frame = frame;
    b.region = region;
    b.first_token = r.first_token;
    b.token_count = r.token_count;
    return b;
}

}  // namespace

Result<std::vector<drm_vrex_released_block>> Stream::Impl::retire(std::span<const std::uint32_t> remove) {
    Backend& be = backend_of(alloc_->device());
    std::size_t room;
    {
        std::lock_guard lock(alloc_->impl_->mu);
        room = alloc_->impl_->blocks->owned_live(token_) + 16;
    }
    const std::size_t max_batch = std::max<std::uint32_t>(1, alloc_->device().info().max_batch);
    std::vector<drm_vrex_released_block> out;
    std::size_t start = 0;
    do {
        const auto chunk = remove.subspan(start, std::min(max_batch, remove.size() - start));
        std::vector<drm_vrex_released_block> recs(room);
        std::uint32_t count = 0;
        auto ec = be.shie_retire(id_, chunk, recs, count);
        if (ec == std::errc::no_space_on_device) {
            // Blocks of a batch in flight are not in the table yet: the device says how many.
            recs.resize(count);
            ec = be.shie_retire(id_, chunk, recs, count);
        }
        if (ec) {
            // What the device released before failing is applied by the caller: keep it.
            if (!out.empty()) apply_releases(out, false);
            return ec;
        }
        out.insert(out.end(), recs.begin(), recs.begin() + count);
        start += chunk.size();
    } while (start < remove.size());
    return out;
}

void Stream::Impl::apply_releases(std::span<const drm_vrex_released_block> recs, bool pressure,
                                  std::span<const std::uint32_t> rolled_back) {
    std::vector<ReleasedBlock> out;
    {
        std::lock_guard lock(alloc_->impl_->mu);
        BlockTable& t = *alloc_->impl_->blocks;
        // Is the slot at (handle, offset) free already, or does a block of the table sit there?
        // (The slab's own free list, then the table's slot index: no scan of all records.)
        auto slot_accounted_locked = [&](std::uint32_t handle, std::uint64_t offset) {
            if (const auto* slab = alloc_->impl_->find_slab(handle)) {
                const auto slot = static_cast<std::uint32_t>(offset / alloc_->block_bytes());
                if (std::find(slab->free_slots.begin(), slab->free_slots.end(), slot) !=
                    slab->free_slots.end())
                    return true;
            }
            return t.slot_taken(handle, offset);
        };
        for (const drm_vrex_released_block& d : recs) {
            auto& pend = st_->pending_release;
            pend.erase(std::remove(pend.begin(), pend.end(), d.block), pend.end());
            if (std::find(rolled_back.begin(), rolled_back.end(), d.block) != rolled_back.end()) {
                // Never handed out: the slot goes back as if the allocation had not happened.
                alloc_->give_slot_locked(d.handle, d.offset);
                alloc_->impl_->stats.allocations--;
                continue;
            }
            ReleasedBlock rb;
            rb.id = d.block;
            rb.reason = d.reason == DRM_VREX_RELEASE_ZOMBIE ? ReleaseReason::zombie
                        : pressure                          ? ReleaseReason::pressure
                                                            : ReleaseReason::removed;
            // This stream's incarnation of the block at that memory: a record of another stream
            // with the same (recycled) id is never the one released here.
            BlockRec* r = t.on_device(d.block, d.handle, d.offset, d.block_gen, d.bo_gen);
            if (r && r->owner_token != token_) r = nullptr;
            if (r) {
                t.set_dead(*r);
                rb.generation = r->gen;
                rb.bank = r->bank;
                const bool imported = r->imported;  // engine-owned memory: never freed by vrex
                const bool gone = alloc_->free_if_unreferenced_locked(*r);
                rb.memory_freed = gone && !imported;
                alloc_->impl_->stats.deferred_frees += !gone;
            } else if (alloc_->impl_->find_import(d.handle)) {
                rb.bank = DRM_VREX_BANK_NONE;
                rb.memory_freed = false;
            } else {
                if (auto p = alloc_->view_locked(d.handle, d.offset)) rb.bank = p->bank;
                // Only a slot nobody accounts for goes back (a block inserted on the device that
                // the table never recorded). A record can also name a block whose memory already
                // went back (its owner closed or released it; the kernel may deliver that record
                // later, through another stream of the file), or memory that still backs a block
                // another stream references: giving that slot again would hand one slot to two
                // blocks.
                // A stale record (an earlier block's, its BO generation not the live block's there)
                // frees nothing: memory_freed says so.
                rb.memory_freed = !slot_accounted_locked(d.handle, d.offset);
                if (rb.memory_freed) alloc_->give_slot_locked(d.handle, d.offset);
            }
            switch (rb.reason) {
                case ReleaseReason::zombie:
                    alloc_->impl_->stats.evictions++;
                    break;
                case ReleaseReason::removed:
                    alloc_->impl_->stats.removed++;
                    break;
                case ReleaseReason::pressure:
                    alloc_->impl_->stats.pressure_evictions++;
                    break;
            }
            out.push_back(rb);
        }
    }
    st_->released.insert(st_->released.end(), out.begin(), out.end());
    notify(out);
}

void Stream::Impl::notify(std::span<const ReleasedBlock> released) {
    if (released.empty()) return;
    if (st_->callback) st_->callback(released);
    if (st_->event_fd >= 0) {
        const std::uint64_t n = released.size();
        // EAGAIN only when the counter would overflow: the fd stays readable then.
        (void)!write(st_->event_fd, &n, sizeof(n));
    }
}

void Stream::Impl::on_release(ReleaseCallback cb) {
    st_->callback = std::move(cb);
}

Result<int> Stream::Impl::release_event_fd() {
    if (st_->event_fd < 0) {
        st_->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (st_->event_fd < 0) return std::error_code(errno, std::generic_category());
    }
    return st_->event_fd;
}

Result<bool> Stream::Impl::evict_one() {
    // Zombies first: blocks already past the aging rule cost nothing to drop.
    auto recs = retire({});
    if (!recs) return recs.error();
    if (!recs->empty()) {
        apply_releases(*recs, true);
        return true;
    }
    std::optional<std::uint32_t> victim;
    {
        std::lock_guard lock(alloc_->impl_->mu);
        victim = alloc_->impl_->blocks->lru_victim(token_, frame_.frame);
    }
    if (!victim) return false;
    const std::uint32_t v[1] = {*victim};
    recs = retire(v);
    if (!recs) return recs.error();
    apply_releases(*recs, true);
    return true;
}

Result<std::vector<KvBlock>> Stream::Impl::do_allocate_batch(std::span<const std::uint32_t> regions,
                                                             std::int32_t frame_offset) {
    if (!in_frame_) return local_error(errc::not_in_frame);
    if (regions.empty()) {
        if (auto ec = local_error({})) return ec;
        return std::vector<KvBlock>{};
    }
    const std::uint32_t max_batch = std::max<std::uint32_t>(1, alloc_->device().info().max_batch);
    std::vector<drm_vrex_shie_insert_item> done;  // inserted, not yet handed out
    std::vector<KvAllocator::Placement> done_places;
    auto undo_slot = [&](const KvAllocator::Placement& p) {
        std::lock_guard lock(alloc_->impl_->mu);
        alloc_->give_slot_locked(p.handle, p.offset);
        alloc_->impl_->stats.allocations--;
    };
    // All or nothing: on any failure the blocks this call inserted are removed again.
    const auto target = static_cast<std::int64_t>(frame_.frame) + frame_offset;
    auto item = [&](std::size_t i) {
        return "block for frame " + std::to_string(target) + ", region " + std::to_string(regions[i]);
    };
    auto fail = [&](Error ec) -> Error {
        if (done.empty()) return ec;
        std::vector<std::uint32_t> ids;
        ids.reserve(done.size());
        for (const auto& it : done) ids.push_back(it.block);
        auto recs = retire(ids);
        if (recs) apply_releases(*recs, false, ids);
        return ec;
    };
    for (std::size_t start = 0; start < regions.size(); start += max_batch) {
        const std::size_t n = std::min<std::size_t>(max_batch, regions.size() - start);
        std::vector<KvAllocator::Placement> places;
        std::vector<drm_vrex_shie_insert_item> items(n);
        for (std::size_t i = 0; i < n; i++) {
            auto p = alloc_->take_slot(frame_.bank_first, frame_.bank_count);
            while (!p && p.error() == std::errc::no_space_on_device &&
                   alloc_->options_.evict_under_pressure) {
                auto ev = evict_one();
                if (!ev || !*ev) break;
                p = alloc_->take_slot(frame_.bank_first, frame_.bank_count);
            }
            if (!p) {
                for (const auto& q : places) undo_slot(q);
                return fail(p.error_info().within(item(start + i)));
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
        auto ec = backend_of(alloc_->device()).shie_insert(id_, items);
        Error first_error{ec, ec ? "SHIE insert of " + std::to_string(n) + " blocks" : std::string{}};
        // ETIMEDOUT/EIO: the kernel stopped the batch at a failed command; items before it were
        // applied (result 0) and their blocks exist. Any other error applied nothing.
        const bool per_item = !ec || ec == std::errc::timed_out || ec == std::errc::io_error;
        for (std::size_t i = 0; i < n; i++) {
            if (!per_item || items[i].result) {
                undo_slot(places[i]);
                if (!first_error)
                    first_error = Error{item_error(items[i].result), item(start + i) + ": SHIE insert"};
                continue;
            }
            done.push_back(items[i]);
            done_places.push_back(places[i]);
        }
        if (first_error) return fail(first_error);
    }
    std::vector<KvBlock> out;
    out.reserve(done.size());
    const auto frame = static_cast<std::uint32_t>(static_cast<std::int64_t>(frame_.frame) + frame_offset);
    std::lock_guard lock(alloc_->impl_->mu);
    for (std::size_t i = 0; i < done.size(); i++) {
        const auto& p = done_places[i];
        BlockRec& r = alloc_->impl_->blocks->add(done[i].block, p.handle, p.offset, p.bank, id_, token_);
        r.device_gen = done[i].block_gen;
        r.bo_gen = done[i].bo_gen;
        alloc_->impl_->blocks->touch(r, token_, frame_.frame);
        unpublished_.push_back(BlockTable::key(r.id, r.gen));
        out.push_back(make_block(r, p.data, token_, frame, done[i].region));
    }
    return out;
}

Result<void> Stream::Impl::do_reuse(std::uint32_t region, const KvBlock& block, std::int32_t frame_offset) {
    if (!in_frame_) return local_error(errc::not_in_frame);
    std::uint64_t device_gen = 0;
    {
        std::lock_guard lock(alloc_->impl_->mu);
        const BlockRec* r = alloc_->impl_->blocks->find(block.id, block.generation);
        if (r && r->segment) return Error{std::errc::invalid_argument, kSegmentBlock};
        if (!r || !r->device_live) return errc::stale_handle;
        if (!r->visible_to(token_))
            return Error{local_error(std::make_error_code(std::errc::operation_not_permitted)), kUnpublished};
        device_gen = r->device_gen;
    }
    // The lock is not held across the insert: the owner (another thread) may release the block and
    // the device give its id to a new block meanwhile. The device generation names this very
    // incarnation, so the device then refuses the alias (ENOENT) instead of pointing at the successor.
    drm_vrex_shie_insert_item it{};
    it.fp[0] = frame_.fp.w[0];
    it.fp[1] = frame_.fp.w[1];
    it.flags = DRM_VREX_INSERT_ALIAS;
    it.region = region;
    it.frame_offset = frame_offset;
    it.block = block.id;
    it.block_gen = device_gen;
    if (auto ec = backend_of(alloc_->device()).shie_insert(id_, std::span(&it, 1))) {
        if (ec == std::errc::no_such_file_or_directory && device_gen)
            return Error{errc::stale_handle, "SHIE insert (alias of block " + std::to_string(block.id) +
                                                 ", generation " + std::to_string(block.generation) +
                                                 "): its owner released it meanwhile"};
        return Error{ec, "SHIE insert (alias)"};
    }
    if (it.result)
        return Error{item_error(it.result), "SHIE insert (alias of block " + std::to_string(block.id) +
                                                " at frame offset " + std::to_string(frame_offset) +
                                                ", region " + std::to_string(region) + ")"};
    std::lock_guard lock(alloc_->impl_->mu);
    const std::uint64_t key = BlockTable::key(block.id, block.generation);
    if (BlockRec* r = alloc_->impl_->blocks->find(key)) {
        alloc_->impl_->blocks->touch(*r, token_, frame_.frame);
        if (r->owner_token != token_ && st_->holds.insert(key).second) r->holds++;
    }
    return {};
}

std::optional<KvBlock> Stream::Impl::block_from_lookup(const drm_vrex_shie_candidate& it,
                                                       std::uint32_t region, std::uint64_t births) {
    std::lock_guard lock(alloc_->impl_->mu);
    BlockRec* r = alloc_->impl_->blocks->on_device(it.block, it.handle, it.offset, it.block_gen);
    // Born after the lookup started: possibly a new incarnation of the id at the memory the found
    // one had (released and reallocated meanwhile). A miss is always safe; another block never is.
    if (!r || r->born > births || !r->visible_to(token_)) return std::nullopt;
    auto p = alloc_->view_locked(r->handle, r->offset);
    if (!p) return std::nullopt;
    alloc_->impl_->blocks->touch(*r, token_, frame_.frame);
    if (r->owner_token != token_ && st_->holds.insert(BlockTable::key(r->id, r->gen)).second) r->holds++;
    return make_block(*r, p->data, token_, it.frame, region);
}

namespace {

Retrieval retrieval_of(const drm_vrex_shie_candidate& c, const KvBlock& block) {
    Retrieval r;
    r.hit = true;
    r.approximate = c.hit_flags & DRM_VREX_HIT_APPROX;
    r.host_tier = c.hit_flags & DRM_VREX_HIT_HOST_TIER;
    r.distance = c.distance;
    r.frame = c.frame;
    r.stream = c.stream;
    r.fp.w[0] = c.found_fp[0];
    r.fp.w[1] = c.found_fp[1];
    r.block = block;
    return r;
}

std::uint32_t tier_flags(Tier t) {
    switch (t) {
        case Tier::device:
            return DRM_VREX_LOOKUP_TIER_DEVICE;
        case Tier::host:
            return DRM_VREX_LOOKUP_TIER_HOST;
        default:
            return 0;
    }
}

}  // namespace

// A device before hardware 1.1 refuses a batch holding a query by tier or with more than one
// candidate (EOPNOTSUPP, nothing ran): the error names the first such query and the revision.
Error Stream::Impl::hw_1_0_refusal(std::span<const Query> queries, std::size_t start, std::size_t n,
                                   std::error_code ec) const {
    const std::uint32_t v = alloc_->device().info().hw_version;
    std::string what = "a lookup the device refuses";
    for (std::size_t i = start; i < start + n; i++) {
        const Query& q = queries[i];
        if (q.kind != Query::Kind::similar || (q.tier == Tier::any && q.candidates <= 1)) continue;
        what = "query " + std::to_string(i) + " (" +
               (q.tier == Tier::any      ? std::string("any tier")
                : q.tier == Tier::device ? "device tier"
                                         : "host tier") +
               ", " + std::to_string(q.candidates) + " candidates)";
        break;
    }
    return Error{ec, what + ": the device is hardware " + std::to_string(v >> 16) + "." +
                         std::to_string(v & 0xffff) +
                         ", which has no lookups by tier or with candidates (hardware 1.1); ask Tier::any "
                         "and at most 1 candidate there"};
}

Result<std::vector<Retrieval>> Stream::Impl::do_retrieve_batch(std::span<const Query> queries) {
    if (queries.empty()) {
        if (auto ec = local_error({})) return ec;
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
                if (q.candidates || q.tier != Tier::any)
                    return Error{std::errc::invalid_argument,
                                 "query " + std::to_string(start + i) +
                                     ": a temporal lookup has no tier and no candidates"};
                it.kind = DRM_VREX_LOOKUP_TEMPORAL;
                it.frame_offset = q.frame_offset;
            } else {
                if (q.candidates > kMaxCandidates)
                    return Error{std::errc::invalid_argument,
                                 "query " + std::to_string(start + i) + " asks for " +
                                     std::to_string(q.candidates) + " candidates (at most " +
                                     std::to_string(kMaxCandidates) + ")"};
                it.kind = DRM_VREX_LOOKUP_SIMILAR;
                it.fp[0] = q.fp.w[0];
                it.fp[1] = q.fp.w[1];
                it.radius = q.radius;
                it.flags = (q.scope == Scope::pool ? DRM_VREX_LOOKUP_SCOPE_POOL : 0u) |
                           (q.past_only ? DRM_VREX_LOOKUP_PAST_ONLY : 0u) | tier_flags(q.tier);
                it.max_candidates = q.candidates;
            }
        }
        std::uint64_t births;
        {
            std::lock_guard lock(alloc_->impl_->mu);
            births = alloc_->impl_->blocks->births();
        }
        if (auto ec = backend_of(alloc_->device()).shie_lookup(id_, items)) {
            if (ec == std::errc::operation_not_supported) return hw_1_0_refusal(queries, start, n, ec);
            return ec;
        }
        for (drm_vrex_shie_lookup_item& it : items) {
            Retrieval r;
            if (it.max_candidates) {
                // The candidates this stream may see, nearest first; the first of them is the hit.
                const std::uint32_t n = std::min(it.candidate_count, it.max_candidates);
                for (std::uint32_t c = 0; c < n; c++)
                    if (auto blk = block_from_lookup(it.candidates[c], it.region, births))
                        r.candidates.push_back(retrieval_of(it.candidates[c], *blk));
                if (!r.candidates.empty()) {
                    const Retrieval& first = r.candidates.front();
                    r.hit = true;
                    r.approximate = first.approximate;
                    r.host_tier = first.host_tier;
                    r.distance = first.distance;
                    r.frame = first.frame;
                    r.stream = first.stream;
                    r.fp = first.fp;
                    r.block = first.block;
                }
            } else if (it.hit_flags & DRM_VREX_HIT) {
                // not (or no longer) a block this stream may see: a miss
                if (auto blk = block_from_lookup(nearest_of(it), it.region, births))
                    r = retrieval_of(nearest_of(it), *blk);
            }
            alloc_->count_lookup(r.hit, r.approximate);
            out.push_back(std::move(r));
        }
    }
    return out;
}

Result<void> Stream::Impl::do_release(std::span<const KvBlock> blocks) {
    auto which = [&](std::size_t i) {
        const KvBlock& b = blocks[i];
        return (blocks.size() > 1 ? "block " + std::to_string(i) + " " : std::string("block ")) + "(id " +
               std::to_string(b.id) + ", generation " + std::to_string(b.generation) + ")";
    };
    // All or nothing: every handle is checked before anything changes.
    std::vector<std::uint64_t> foreign;  // others' blocks whose reference this stream drops
    std::vector<std::uint32_t> owned;    // own blocks to remove at end_frame()
    {
        std::lock_guard lock(alloc_->impl_->mu);
        for (std::size_t i = 0; i < blocks.size(); i++) {
            const std::uint64_t key = BlockTable::key(blocks[i].id, blocks[i].generation);
            const BlockRec* r = alloc_->impl_->blocks->find(key);
            if (r && r->segment)
                return Error{local_error(std::make_error_code(std::errc::invalid_argument)),
                             which(i) + " " + kSegmentBlock};
            if (!r || (r->owner_token == token_ && !r->device_live))
                return Error{local_error(errc::stale_handle), which(i)};
            if (r->owner_token == token_) {
                if (!in_frame_)
                    return Error{local_error(errc::not_in_frame), which(i) + " is owned by this stream"};
                owned.push_back(blocks[i].id);
            } else if (st_->holds.contains(key) &&
                       std::find(foreign.begin(), foreign.end(), key) == foreign.end()) {
                foreign.push_back(key);
            } else {
                return Error{local_error(std::make_error_code(std::errc::no_such_file_or_directory)),
                             which(i) + " is neither owned nor referenced by this stream"};
            }
        }
    }
    // Nothing reaches the device before end_frame(): ask it, so a lost device is reported here.
    if (auto ec = local_error({})) return ec;
    {
        std::lock_guard lock(alloc_->impl_->mu);
        for (std::uint64_t key : foreign) {
            st_->holds.erase(key);
            if (BlockRec* r = alloc_->impl_->blocks->find(key)) {
                r->holds--;
                (void)alloc_->free_if_unreferenced_locked(*r);
            }
        }
    }
    auto& pend = st_->pending_release;
    for (std::uint32_t id : owned)
        if (std::find(pend.begin(), pend.end(), id) == pend.end()) pend.push_back(id);
    return {};
}

Result<void> Stream::Impl::do_publish(std::span<const KvBlock> blocks) {
    auto which = [&](std::size_t i) {
        const KvBlock& b = blocks[i];
        return (blocks.size() > 1 ? "block " + std::to_string(i) + " " : std::string("block ")) + "(id " +
               std::to_string(b.id) + ", generation " + std::to_string(b.generation) + ")";
    };
    std::lock_guard lock(alloc_->impl_->mu);
    BlockTable& t = *alloc_->impl_->blocks;
    // All or nothing: every handle is checked before any block becomes visible.
    for (std::size_t i = 0; i < blocks.size(); i++) {
        const BlockRec* r = t.find(blocks[i].id, blocks[i].generation);
        if (r && r->segment)
            return Error{local_error(std::make_error_code(std::errc::invalid_argument)),
                         which(i) + " " + kSegmentBlock};
        if (!r || (!r->device_live && !r->published)) return Error{local_error(errc::stale_handle), which(i)};
        if (r->owner_token != token_)
            return Error{local_error(std::make_error_code(std::errc::operation_not_permitted)),
                         which(i) + " is owned by stream " + std::to_string(r->owner) + ", not this one"};
    }
    if (auto ec = local_error({})) return ec;
    // The lock orders the owner's writes before every reader's view: readers take it to find the
    // block (block_from_lookup) and see the flag set.
    for (const KvBlock& b : blocks) t.find(b.id, b.generation)->published = true;
    if (unpublished_.size() > 64) {  // explicit publishing only: forget what is published or gone
        std::erase_if(unpublished_, [&](std::uint64_t k) {
            const BlockRec* r = t.find(k);
            return !r || r->published || !r->device_live;
        });
    }
    return {};
}

Result<void> Stream::Impl::do_set_positions(const KvBlock& block, std::uint32_t first_token,
                                            std::uint32_t token_count) {
    std::lock_guard lock(alloc_->impl_->mu);
    BlockRec* r = alloc_->impl_->blocks->find(block.id, block.generation);
    if (!r) return errc::stale_handle;
    if (r->segment) return Error{std::errc::invalid_argument, kSegmentBlock};
    if (r->owner_token != token_) return std::make_error_code(std::errc::operation_not_permitted);
    if (token_count > alloc_->geometry_.tokens_per_block)
        return std::make_error_code(std::errc::invalid_argument);
    r->first_token = first_token;
    r->token_count = token_count;
    return {};
}

Result<void> Stream::Impl::do_pin(const KvBlock& block) {
    const std::uint64_t key = BlockTable::key(block.id, block.generation);
    std::lock_guard lock(alloc_->impl_->mu);
    BlockRec* r = alloc_->impl_->blocks->find(key);
    if (!r) return errc::stale_handle;
    if (!r->visible_to(token_))
        return Error{local_error(std::make_error_code(std::errc::operation_not_permitted)), kUnpublished};
    r->pins++;
    r->foreign_pins += r->owner_token != token_;
    st_->pins[key]++;
    return {};
}

Result<void> Stream::Impl::do_unpin(const KvBlock& block) {
    const std::uint64_t key = BlockTable::key(block.id, block.generation);
    std::lock_guard lock(alloc_->impl_->mu);
    auto p = st_->pins.find(key);
    if (p == st_->pins.end()) return std::make_error_code(std::errc::no_such_file_or_directory);
    if (--p->second == 0) st_->pins.erase(p);
    BlockRec* r = alloc_->impl_->blocks->find(key);
    if (r) {  // always: a pin keeps the record
        r->pins--;
        r->foreign_pins -= r->owner_token != token_;
        (void)alloc_->free_if_unreferenced_locked(*r);
    }
    return {};
}

Result<KvBlock> Stream::Impl::do_copy_on_write(const KvBlock& block, std::uint32_t region,
                                               std::int32_t frame_offset) {
    const std::uint64_t key = BlockTable::key(block.id, block.generation);
    std::span<const std::byte> src;
    {
        std::lock_guard lock(alloc_->impl_->mu);
        BlockRec* r = alloc_->impl_->blocks->find(key);
        if (!r) return local_error(errc::stale_handle);
        if (r->segment)
            return Error{local_error(std::make_error_code(std::errc::invalid_argument)), kSegmentBlock};
        if (!r->visible_to(token_))
            return Error{local_error(std::make_error_code(std::errc::operation_not_permitted)), kUnpublished};
        auto p = alloc_->view_locked(r->handle, r->offset);
        if (!p) return local_error(errc::stale_handle);
        if (r->writable_by(token_)) return make_block(*r, p->data, token_, block.frame, block.region);
        // Another stream's block, or a published one: read-only, so the copy reads stable bytes.
        src = p->data;
        // The source must outlive the copy even if its owner releases it meanwhile.
        r->pins++;
        r->foreign_pins += r->owner_token != token_;
    }
    const std::uint32_t regions[1] = {region};
    auto batch = do_allocate_batch(regions, frame_offset);
    Result<KvBlock> copy = batch ? Result<KvBlock>(batch->front()) : Result<KvBlock>(batch.error_info());
    if (copy) std::memcpy(copy->data.data(), src.data(), std::min(src.size(), copy->data.size()));
    std::lock_guard lock(alloc_->impl_->mu);
    if (BlockRec* r = alloc_->impl_->blocks->find(key)) {
        r->pins--;
        r->foreign_pins -= r->owner_token != token_;
        (void)alloc_->free_if_unreferenced_locked(*r);
    }
    return copy;
}

Result<FrameEnd> Stream::Impl::do_end_frame() {
    if (!in_frame_) return local_error(errc::not_in_frame);
    const std::vector<std::uint32_t> remove = st_->pending_release;
    auto recs = retire(remove);
    if (!recs) return recs.error();
    st_->pending_release.clear();
    in_frame_ = false;
    apply_releases(*recs, false);
    {
        std::lock_guard lock(alloc_->impl_->mu);
        if (publish_at_end_frame_) {
            // The engine wrote the frame's KV by now (StreamOptions::publish_at_end_frame).
            for (std::uint64_t k : unpublished_)
                if (BlockRec* r = alloc_->impl_->blocks->find(k); r && r->device_live) r->published = true;
            unpublished_.clear();
        } else {  // what was published or released meanwhile
            std::erase_if(unpublished_, [&](std::uint64_t k) {
                const BlockRec* r = alloc_->impl_->blocks->find(k);
                return !r || r->published || !r->device_live;
            });
        }
        // The references this stream took on other streams' blocks during the frame end here.
        for (std::uint64_t k : st_->holds)
            if (BlockRec* r = alloc_->impl_->blocks->find(k)) {
                r->holds--;
                (void)alloc_->free_if_unreferenced_locked(*r);
            }
        st_->holds.clear();
    }
    FrameEnd fe;
    fe.released = std::move(st_->released);
    st_->released.clear();
    fe.count = static_cast<std::uint32_t>(fe.released.size());
    return fe;
}

Result<int> Stream::Impl::do_export_dmabuf(const KvBlock& block) {
    // One dma-buf per slab, exported once and cached: every block of the slab (at block.offset) and
    // every repeated export share the same buffer (and open file description); the caller gets a dup.
    std::lock_guard lock(alloc_->impl_->mu);
    const BlockRec* r = alloc_->impl_->blocks->find(block.id, block.generation);
    if (!r) return local_error(errc::stale_handle);
    if (!r->visible_to(token_))
        return Error{local_error(std::make_error_code(std::errc::operation_not_permitted)), kUnpublished};
    if (const auto* im = alloc_->impl_->find_import(r->handle)) {  // the engine's own buffer
        const int dup = ::fcntl(im->dmabuf, F_DUPFD_CLOEXEC, 0);
        if (dup < 0)
            return Error{std::error_code(errno, std::generic_category()), "dup of the imported dma-buf"};
        return dup;
    }
    auto* slab = alloc_->impl_->find_slab(r->handle);
    if (!slab) return local_error(errc::stale_handle);
    if (slab->dmabuf < 0) {
        auto fd = backend_of(alloc_->device()).bo_export_dmabuf(slab->handle);
        if (!fd) return Error{fd.error(), "PRIME export of slab " + std::to_string(slab->handle)};
        slab->dmabuf = *fd;
    }
    const int dup = ::fcntl(slab->dmabuf, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) return Error{std::error_code(errno, std::generic_category()), "dup of the slab's dma-buf"};
    return dup;
}

}  // namespace vrex

namespace vrex {

Stream::Stream(Key, std::shared_ptr<KvAllocator> alloc, std::uint32_t id)
    : impl_(std::make_unique<Impl>(std::move(alloc), id)) {}

Stream::~Stream() = default;

std::uint32_t Stream::id() const noexcept {
    return impl_->id_;
}
bool Stream::in_frame() const noexcept {
    return impl_->in_frame_;
}
const FrameInfo& Stream::frame() const noexcept {
    return impl_->frame_;
}
void Stream::on_release(ReleaseCallback cb) {
    impl_->on_release(std::move(cb));
}
Result<int> Stream::release_event_fd() {
    return impl_->release_event_fd();
}

}  // namespace vrex
