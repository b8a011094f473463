// Segments (vrex/segment.hpp): append-only token sequences in fixed-size blocks for the tokens that
// have no frame (prompt, generated). Their blocks live in the allocator's slabs and block table
// like frame blocks, with the segment's reference where a frame block has the device's: no SHIE
// entry, no aging, no pressure eviction.
//
// Placement (docs/hal.md "Segments"): a segment block outlives every frame of its stream, so it is
// kept away from the stream's current bank group (the group the next frames' blocks go to, which
// would otherwise lose room and fall back) and packed with other segment blocks (a slab holding
// one cannot be released until the segment goes). In order: a free slot of a slab outside the
// group that already holds segment blocks, any free slot outside the group (fullest slab first),
// a new slab in the bank outside the group with the most free device memory; only then the group.
#include <algorithm>
#include <limits>
#include <string>

#include "device_impl.hpp"
#include "kv_allocator_impl.hpp"
#include "stream_impl.hpp"

namespace vrex {
namespace {

const char* kind_name(SegmentKind k) {
    switch (k) {
        case SegmentKind::prompt:
            return "prompt";
        case SegmentKind::generated:
            return "generated";
    }
    return "unknown";
}

std::string describe(const SegmentState& st) {
    return "segment " + std::to_string(st.serial) + " (" + kind_name(st.kind) + ", stream " +
           std::to_string(st.stream) + ", positions " + std::to_string(st.first_position) + ".." +
           std::to_string(std::uint64_t{st.first_position} + st.tokens) + ")";
}

Error closed_error(const SegmentState& st) {
    return Error{errc::stale_handle, describe(st) + " is closed (" + st.closed_by + ")"};
}

}  // namespace

// ---- allocator side ------------------------------------------------------------------------------

KvBlock SegmentOps::block_locked(KvAllocator& a, const BlockRec& r) {
    KvBlock b;
    b.id = r.id;
    b.generation = r.gen;
    if (auto p = a.view_locked(r.handle, r.offset)) {
        b.view = p->data;
        b.shared = !r.writable_by(r.owner_token);
        if (!b.shared) b.data = p->data;
    }
    b.bank = r.bank;
    b.handle = r.handle;
    b.offset = r.offset;
    b.first_token = r.first_token;
    b.token_count = r.token_count;
    return b;
}

Result<KvAllocator::Placement> SegmentOps::take_slot_locked(KvAllocator& a, const Stream* s) {
    KvAllocator::Impl& im = *a.impl_;
    std::uint32_t first = 0, count = 0;  // the stream's current bank group (none before a frame)
    if (s && s->frame().bank_count) {
        first = s->frame().bank_first;
        count = s->frame().bank_count;
    }
    auto in_group = [&](std::uint32_t bank) { return bank >= first && bank < first + count; };
    auto fullest = [&](bool group, bool with_segments) -> KvAllocator::Impl::Slab* {
        KvAllocator::Impl::Slab* best = nullptr;
        for (auto& sl : im.slabs)
            if (in_group(sl.bank) == group && !sl.free_slots.empty() &&
                (!with_segments || sl.segment_blocks) &&
                (!best || sl.free_slots.size() < best->free_slots.size()))
                best = &sl;
        return best;
    };
    // Resident counts as for a frame block (give_slot_locked() takes them back).
    auto account = [&](const KvAllocator::Placement& p, bool group) {
        im.stats.segment_in_group += group;
        im.stats.banks[p.bank].resident_blocks++;
        im.stats.banks[p.bank].resident_bytes += a.block_bytes_;
        return p;
    };
    auto taken = [&](KvAllocator::Impl::Slab& sl, bool group) {
        const std::uint32_t slot = sl.free_slots.back();
        sl.free_slots.pop_back();
        sl.segment_blocks++;
        const std::uint64_t off = std::uint64_t{slot} * a.block_bytes_;
        return account(KvAllocator::Placement{sl.handle, off, sl.bank, sl.map.subspan(off, a.block_bytes_)},
                       group);
    };
    auto fresh = [&](std::uint64_t mask, bool group) -> Result<KvAllocator::Placement> {
        auto p = a.new_slab_slot(mask);
        if (!p) return p;
        im.slabs.back().segment_blocks++;
        return account(*p, group);
    };

    if (auto* sl = fullest(false, true)) return taken(*sl, false);
    if (auto* sl = fullest(false, false)) return taken(*sl, false);
    // A new slab: the bank outside the group with the most free device memory (all files).
    auto banks = backend_of(*a.device_).bank_info();
    if (!banks) return Error{banks.error(), "bank occupancy query"};
    const std::uint32_t nbanks = std::min(banks->bank_count, a.device_->info().bank_count);
    const std::uint64_t bank_size = a.device_->info().bank_size;
    const std::uint64_t slab = a.block_bytes_ * a.options_.blocks_per_slab;
    std::vector<std::uint32_t> order;
    for (std::uint32_t b = 0; b < nbanks; b++)
        if (!in_group(b) && banks->bo_bytes[b] + slab <= bank_size) order.push_back(b);
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) {
        return banks->bo_bytes[x] < banks->bo_bytes[y];
    });
    for (std::uint32_t b : order) {
        auto p = fresh(std::uint64_t{1} << b, false);
        if (p || p.error() != std::errc::no_space_on_device) return p;  // ENOSPC: fragmented, next bank
    }
    // No room outside the group: its free slots, then a new slab in it.
    if (auto* sl = fullest(true, false)) return taken(*sl, true);
    std::uint64_t mask = 0;
    for (std::uint32_t b = first; b < first + count && b < nbanks; b++) mask |= std::uint64_t{1} << b;
    if (mask) {
        auto p = fresh(mask, true);
        if (p || p.error() != std::errc::no_space_on_device) return p;
    }
    return Error{std::errc::no_space_on_device,
                 "no free block slot and no device memory left for a slab of " + std::to_string(slab) +
                     " bytes in any bank"};
}

Result<Segment> SegmentOps::open(const std::shared_ptr<KvAllocator>& a, const Stream& s, SegmentKind kind,
                                 std::uint32_t first_position) {
    if (kind != SegmentKind::prompt && kind != SegmentKind::generated)
        return Error{lost_or(a->device(), std::make_error_code(std::errc::invalid_argument)),
                     "unknown segment kind " + std::to_string(static_cast<std::uint32_t>(kind))};
    // Nothing here reaches the device: a lost device is reported now, not at the first append.
    if (auto ec = lost_or(a->device(), {})) return ec;
    auto st = std::make_shared<SegmentState>();
    st->stream = s.id();
    st->token = s.impl_->token_;
    st->owner = &s;
    st->kind = kind;
    st->first_position = first_position;
    {
        std::lock_guard lock(a->impl_->mu);
        st->serial = a->impl_->segments.next_serial++;
        a->impl_->segments.open.push_back(st);
        a->impl_->stats.segments_open++;
    }
    auto impl = std::make_unique<Segment::Impl>();
    impl->alloc = a;
    impl->st = std::move(st);
    return Segment(std::move(impl));
}

Result<std::vector<KvBlock>> SegmentOps::append(KvAllocator& a, SegmentState& st, std::uint32_t n) {
    if (auto ec = lost_or(a.device(), {})) return ec;
    KvAllocator::Impl& im = *a.impl_;
    std::lock_guard lock(im.mu);
    if (!st.open) return closed_error(st);
    std::vector<KvBlock> out;
    if (n == 0) return out;
    const std::uint64_t end = std::uint64_t{st.first_position} + st.tokens + n;
    if (end > std::numeric_limits<std::uint32_t>::max())
        return Error{std::errc::invalid_argument, std::to_string(n) + " tokens would end at position " +
                                                      std::to_string(end) + ", past 2^32 - 1"};
    const std::uint32_t per = a.geometry_.tokens_per_block;
    const std::uint32_t fill = st.tokens % per;
    const std::uint32_t into_last = fill ? std::min(n, per - fill) : 0;
    const std::uint64_t fresh = (std::uint64_t{n} - into_last + per - 1) / per;

    // Every slot first: all or nothing.
    std::vector<KvAllocator::Placement> places;
    std::vector<bool> in_group;
    for (std::uint64_t i = 0; i < fresh; i++) {
        const std::uint64_t before = im.stats.segment_in_group;
        auto p = take_slot_locked(a, st.owner);
        if (!p) {
            for (std::size_t j = places.size(); j-- > 0;) {
                for (auto& sl : im.slabs)
                    if (sl.handle == places[j].handle) sl.segment_blocks--;
                im.stats.segment_in_group -= in_group[j];
                a.give_slot_locked(places[j].handle, places[j].offset);
            }
            const std::uint64_t pos = std::uint64_t{st.first_position} + st.tokens + into_last + i * per;
            return p.error_info().within("block " + std::to_string(i + 1) + " of " + std::to_string(fresh) +
                                         " (positions from " + std::to_string(pos) + ")");
        }
        places.push_back(*p);
        in_group.push_back(im.stats.segment_in_group != before);
    }

    if (into_last) {
        if (BlockRec* r = im.blocks->find(st.blocks.back())) {
            r->token_count += into_last;
            out.push_back(block_locked(a, *r));
        }
    }
    std::uint64_t pos = std::uint64_t{st.first_position} + st.tokens + into_last;
    std::uint64_t left = n - into_last;
    SegmentRegistry& reg = im.segments;
    for (const KvAllocator::Placement& p : places) {
        std::uint32_t id;
        if (!reg.free_ids.empty()) {
            id = reg.free_ids.back();
            reg.free_ids.pop_back();
        } else {
            id = reg.next_id++;
        }
        BlockRec& r = im.blocks->add(id, p.handle, p.offset, p.bank, st.stream, st.token, true);
        r.first_token = static_cast<std::uint32_t>(pos);
        r.token_count = static_cast<std::uint32_t>(std::min<std::uint64_t>(per, left));
        pos += r.token_count;
        left -= r.token_count;
        st.blocks.push_back(BlockTable::key(r.id, r.gen));
        im.stats.segment_allocations++;
        im.stats.segment_blocks++;
        im.stats.banks[p.bank].segment_blocks++;
        out.push_back(block_locked(a, r));
    }
    st.tokens += n;
    im.stats.segment_tokens += n;
    return out;
}

void SegmentOps::release_tail_locked(KvAllocator& a, SegmentState& st, std::size_t from,
                                     std::vector<ReleasedBlock>* out) {
    KvAllocator::Impl& im = *a.impl_;
    for (std::size_t i = from; i < st.blocks.size(); i++) {
        BlockRec* r = im.blocks->find(st.blocks[i]);
        if (!r) continue;  // always there: the segment's reference keeps the record
        ReleasedBlock rb;
        rb.id = r->id;
        rb.generation = r->gen;
        rb.reason = ReleaseReason::removed;
        rb.bank = r->bank;
        for (auto& sl : im.slabs)
            if (sl.handle == r->handle) sl.segment_blocks--;
        im.stats.segment_blocks--;
        im.stats.segment_releases++;
        im.stats.banks[r->bank].segment_blocks--;
        r->segment = false;
        // The id may serve a new block at once: the generation tells the incarnations apart.
        auto& ids = im.segments.free_ids;
        ids.push_back(r->id);
        std::sort(ids.begin(), ids.end(), std::greater<>());
        rb.memory_freed = a.free_if_unreferenced_locked(*r);  // a pin may keep it
        im.stats.deferred_frees += !rb.memory_freed;
        if (out) out->push_back(rb);
    }
    st.blocks.resize(std::min(from, st.blocks.size()));
}

Result<std::vector<ReleasedBlock>> SegmentOps::truncate(KvAllocator& a, SegmentState& st,
                                                        std::uint32_t position) {
    if (auto ec = lost_or(a.device(), {})) return ec;
    KvAllocator::Impl& im = *a.impl_;
    std::lock_guard lock(im.mu);
    if (!st.open) return closed_error(st);
    const std::uint64_t end = std::uint64_t{st.first_position} + st.tokens;
    if (position < st.first_position || position > end)
        return Error{std::errc::result_out_of_range, "position " + std::to_string(position) + " outside " +
                                                         std::to_string(st.first_position) + ".." +
                                                         std::to_string(end)};
    const std::uint32_t per = a.geometry_.tokens_per_block;
    const std::uint32_t keep = position - st.first_position;
    const std::size_t keep_blocks = (std::size_t{keep} + per - 1) / per;
    std::vector<ReleasedBlock> out;
    release_tail_locked(a, st, keep_blocks, &out);
    if (keep_blocks)
        if (BlockRec* r = im.blocks->find(st.blocks.back()))
            r->token_count = keep - static_cast<std::uint32_t>((keep_blocks - 1) * per);
    im.stats.segment_tokens -= st.tokens - keep;
    st.tokens = keep;
    return out;
}

Result<std::vector<KvBlock>> SegmentOps::blocks(KvAllocator& a, const SegmentState& st) {
    std::lock_guard lock(a.impl_->mu);
    if (!st.open) return closed_error(st);
    std::vector<KvBlock> out;
    out.reserve(st.blocks.size());
    for (std::uint64_t k : st.blocks)
        if (const BlockRec* r = a.impl_->blocks->find(k)) out.push_back(block_locked(a, *r));
    return out;
}

void SegmentOps::close_locked(KvAllocator& a, SegmentState& st, const char* why) {
    if (!st.open) return;
    KvAllocator::Impl& im = *a.impl_;
    release_tail_locked(a, st, 0, nullptr);
    im.stats.segment_tokens -= st.tokens;
    st.tokens = 0;
    st.open = false;
    st.closed_by = why;
    st.owner = nullptr;
    im.stats.segments_open--;
    auto& reg = im.segments.open;
    reg.erase(std::remove_if(reg.begin(), reg.end(), [&](const auto& p) { return p.get() == &st; }),
              reg.end());
}

void SegmentOps::close(KvAllocator& a, SegmentState& st, const char* why) {
    std::lock_guard lock(a.impl_->mu);
    close_locked(a, st, why);
}

void SegmentOps::close_stream_locked(KvAllocator& a, std::uint64_t token) {
    // close_locked() edits the registry: walk a copy. By incarnation: the device may already have
    // given the stream's id to a new stream with segments of its own.
    const auto open = a.impl_->segments.open;
    for (const auto& st : open)
        if (st->token == token) close_locked(a, *st, "its stream was destroyed");
}

// ---- Segment -------------------------------------------------------------------------------------

Segment::Segment(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Segment::Segment(Segment&&) noexcept = default;

Segment& Segment::operator=(Segment&& o) noexcept {
    if (this != &o) {
        close();
        impl_ = std::move(o.impl_);
    }
    return *this;
}

Segment::~Segment() {
    close();
}

void Segment::close() noexcept {
    if (impl_) SegmentOps::close(*impl_->alloc, *impl_->st, "closed");
}

SegmentKind Segment::kind() const noexcept {
    return impl_ ? impl_->st->kind : SegmentKind::prompt;
}
std::uint32_t Segment::first_position() const noexcept {
    return impl_ ? impl_->st->first_position : 0;
}
std::uint32_t Segment::tokens() const noexcept {
    return impl_ ? impl_->st->tokens : 0;
}
std::uint32_t Segment::end_position() const noexcept {
    return first_position() + tokens();
}
bool Segment::is_open() const noexcept {
    return impl_ && impl_->st->open;
}
std::uint32_t Segment::stream_id() const noexcept {
    return impl_ ? impl_->st->stream : 0;
}
std::uint32_t Segment::tokens_per_block() const noexcept {
    return impl_ ? impl_->alloc->geometry().tokens_per_block : 0;
}
std::uint64_t Segment::blocks_touched(std::uint32_t n_tokens) const noexcept {
    const std::uint32_t per = tokens_per_block();
    if (!per || !n_tokens) return 0;
    const std::uint32_t fill = tokens() % per;
    const std::uint32_t into_last = fill ? std::min(n_tokens, per - fill) : 0;
    return (into_last ? 1u : 0u) + (std::uint64_t{n_tokens} - into_last + per - 1) / per;
}

namespace {

Error moved_from() {
    return Error{errc::stale_handle, "segment was moved from"};
}

}  // namespace

Result<std::vector<KvBlock>> Segment::append(std::uint32_t n_tokens) {
    if (!impl_) return moved_from();
    auto r = SegmentOps::append(*impl_->alloc, *impl_->st, n_tokens);
    if (!r)
        return r.error_info().within("append " + std::to_string(n_tokens) + " tokens to " +
                                     describe(*impl_->st));
    return r;
}

Result<std::vector<ReleasedBlock>> Segment::truncate(std::uint32_t position) {
    if (!impl_) return moved_from();
    auto r = SegmentOps::truncate(*impl_->alloc, *impl_->st, position);
    if (!r)
        return r.error_info().within("truncate " + describe(*impl_->st) + " at position " +
                                     std::to_string(position));
    return r;
}

Result<std::vector<KvBlock>> Segment::blocks() const {
    if (!impl_) return moved_from();
    auto r = SegmentOps::blocks(*impl_->alloc, *impl_->st);
    if (!r) return r.error_info().within("blocks of " + describe(*impl_->st));
    return r;
}

// ---- Stream --------------------------------------------------------------------------------------

Result<Segment> Stream::open_segment(SegmentKind kind, std::uint32_t first_position) {
    auto r = SegmentOps::open(impl_->alloc_, *this, kind, first_position);
    if (!r) return r.error_info().within(impl_->where("open segment at position " + std::to_string(first_position)));
    return r;
}

}  // namespace vrex
