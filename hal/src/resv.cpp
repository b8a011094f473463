#include "vrex/resv.hpp"

#include <drm/vrex_accel.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "device_impl.hpp"

namespace vrex {

static_assert(static_cast<std::uint32_t>(ResvMode::mass) == DRM_VREX_RESV_MODE_MASS);
static_assert(static_cast<std::uint32_t>(ResvMode::tokens) == DRM_VREX_RESV_MODE_TOKENS);

namespace {

std::error_code err(std::errc e) {
    return std::make_error_code(e);
}

std::uint64_t keys_offset() {
    return 0;
}

}  // namespace

void resv_quantize(std::span<const float> in, std::span<std::int16_t> out) {
    float maxabs = 0;
    for (float v : in) maxabs = std::max(maxabs, std::fabs(v));
    const float scale = maxabs > 0 && std::isfinite(maxabs) ? 32767.0f / maxabs : 0.0f;
    for (std::size_t i = 0; i < in.size() && i < out.size(); i++) {
        const float v = std::isfinite(in[i]) ? in[i] * scale : 0.0f;
        out[i] = static_cast<std::int16_t>(std::lround(std::clamp(v, -32767.0f, 32767.0f)));
    }
}

ResvHead::ResvHead(Key, std::shared_ptr<Device> device, std::uint32_t head, std::uint32_t dim,
                   std::uint32_t bo, std::span<std::byte> map, std::uint32_t max_batch,
                   std::uint32_t max_ranges)
    : device_(std::move(device)),
      head_(head),
      dim_(dim),
      bo_(bo),
      map_(map),
      max_batch_(max_batch),
      max_ranges_(max_ranges) {}

Result<std::unique_ptr<ResvHead>> ResvHead::create(std::shared_ptr<Device> device, const ResvParams& p,
                                                   std::uint32_t max_batch) {
    if (!device) return err(std::errc::invalid_argument);
    if (!device->info().caps.resv) return lost_or(*device, err(std::errc::operation_not_supported));
    if (p.dim == 0 || p.dim > DRM_VREX_RESV_MAX_DIM || !(p.ratio >= 0.0 && p.ratio <= 1.0) ||
        max_batch == 0 || max_batch > (1u << 20) ||
        (!p.lut.empty() && p.lut.size() != DRM_VREX_RESV_LUT_SIZE))
        return err(std::errc::invalid_argument);
    Backend& be = backend_of(*device);
    auto stats = be.resv_stats();
    if (!stats) return stats.error();

    drm_vrex_resv_head_create a{};
    a.params.seed = p.seed;
    a.params.dim = p.dim;
    a.params.th = p.th;
    a.params.ratio = static_cast<std::uint32_t>(std::lround(p.ratio * DRM_VREX_RESV_RATIO_ONE));
    a.params.mode = static_cast<std::uint32_t>(p.mode);
    a.params.tokens_per_block = p.tokens_per_block;
    a.params.bytes_per_token = p.bytes_per_token ? p.bytes_per_token : 4 * p.dim;
    if (p.lut.empty()) {
        // The device default, read back from its registers would need privileges: the same table.
        static constexpr std::array<std::uint16_t, DRM_VREX_RESV_LUT_SIZE> kDefault = {
            65535, 63669, 58399, 50614, 41507, 32269, 23841, 16788, 11305, 7308, 4554,
            2748,  1614,  927,   524,   292,   162,   90,    50,    28,    16,   10,
            6,     4,     2,     2,     1,     1,     1,     1,     0,     0,    0};
        std::copy(kDefault.begin(), kDefault.end(), a.params.lut);
    } else {
        std::copy(p.lut.begin(), p.lut.end(), a.params.lut);
    }
    if (auto ec = be.resv_head_create(a)) return ec;

    // Staging BO: a batch of keys (the query reuses its start), then room for every range a head
    // can produce (maximal ranges are separated by a gap, so at most (tokens + 1) / 2).
    const std::uint32_t max_ranges = (stats->max_tokens + 1) / 2;
    const std::uint64_t key_bytes = std::uint64_t{max_batch} * p.dim * 2;
    drm_vrex_bo_create bo{};
    bo.size = ((key_bytes + 7) & ~std::uint64_t{7}) + std::uint64_t{max_ranges} * 8;
    bo.bank_mask = device->info().bank_count >= 64 ? ~std::uint64_t{0}
                                                   : (std::uint64_t{1} << device->info().bank_count) - 1;
    if (auto ec = be.bo_create(bo)) {
        (void)be.resv_head_destroy(a.head);
        return ec;
    }
    auto map = be.bo_map(bo.handle);
    if (!map) {
        (void)be.bo_destroy(bo.handle);
        (void)be.resv_head_destroy(a.head);
        return map.error();
    }
    return std::make_unique<ResvHead>(Key{}, std::move(device), a.head, p.dim, bo.handle, *map, max_batch,
                                      max_ranges);
}

ResvHead::~ResvHead() {
    Backend& be = backend_of(*device_);
    (void)be.resv_head_destroy(head_);
    (void)be.bo_destroy(bo_);
}

std::error_code ResvHead::fail(std::error_code ec) {
    return lost_or(*device_, ec);
}

Result<std::uint32_t> ResvHead::append(std::span<const std::int16_t> keys) {
    if (keys.size() % dim_) return err(std::errc::invalid_argument);
    const std::uint32_t before = tokens_;
    Backend& be = backend_of(*device_);
    for (std::size_t done = 0; done < keys.size();) {
        const std::size_t n = std::min<std::size_t>((keys.size() - done) / dim_, max_batch_);
        std::memcpy(map_.data() + keys_offset(), keys.data() + done, n * dim_ * sizeof(std::int16_t));
        drm_vrex_resv_hash h{};
        h.head = head_;
        h.count = static_cast<std::uint32_t>(n);
        h.handle = bo_;
        h.offset = keys_offset();
        if (auto ec = be.resv_hash(h)) {
            // All or nothing: the batches before this one are taken back.
            if (tokens_ != before && !be.resv_truncate(head_, before)) tokens_ = before;
            return ec;
        }
        tokens_ = h.tokens;
        done += n * dim_;
    }
    return tokens_;
}

Result<std::uint32_t> ResvHead::append(std::span<const float> keys) {
    if (keys.size() % dim_) return err(std::errc::invalid_argument);
    std::vector<std::int16_t> q(keys.size());
    for (std::size_t i = 0; i < keys.size(); i += dim_)
        resv_quantize(keys.subspan(i, dim_), std::span(q).subspan(i, dim_));
    return append(std::span<const std::int16_t>(q));
}

Result<ResvSelection> ResvHead::select(std::span<const std::int16_t> query, bool blocks) {
    if (query.size() != dim_) return err(std::errc::invalid_argument);
    std::memcpy(map_.data(), query.data(), dim_ * sizeof(std::int16_t));
    const std::uint64_t out = ((std::uint64_t{max_batch_} * dim_ * 2 + 7) & ~std::uint64_t{7});
    drm_vrex_resv_select_item it{};
    it.head = head_;
    it.flags = blocks ? DRM_VREX_RESV_SELECT_BLOCKS : 0;
    it.query_handle = bo_;
    it.out_handle = bo_;
    it.out_offset = out;
    it.max_ranges = max_ranges_;
    if (auto ec = backend_of(*device_).resv_select(std::span(&it, 1))) return ec;
    ResvSelection s;
    s.tokens = it.tokens;
    s.clusters = it.clusters;
    s.head_tokens = it.head_tokens;
    s.qhash = it.qhash;
    s.cutoff = it.cutoff;
    const std::uint32_t n = std::min(it.ranges, max_ranges_);
    if (n != it.ranges) return fail(err(std::errc::no_buffer_space));  // cannot happen: room for every range
    s.ranges.resize(n);
    // An empty selection leaves data() null, which memcpy must never see (UBSan: nonnull).
    if (n) std::memcpy(s.ranges.data(), map_.data() + out, n * sizeof(ResvRange));
    return s;
}

Result<ResvSelection> ResvHead::select(std::span<const float> query, bool blocks) {
    if (query.size() != dim_) return err(std::errc::invalid_argument);
    std::vector<std::int16_t> q(dim_);
    resv_quantize(query, q);
    return select(std::span<const std::int16_t>(q), blocks);
}

Result<void> ResvHead::truncate(std::uint32_t keep) {
    if (keep > tokens_) return err(std::errc::invalid_argument);
    if (auto ec = backend_of(*device_).resv_truncate(head_, keep)) return ec;
    tokens_ = keep;
    return {};
}

Result<ResvStats> resv_stats(Device& device) {
    auto s = backend_of(device).resv_stats();
    if (!s) return s.error();
    return ResvStats{s->keys,           s->clusters, s->selects, s->tokens_scanned, s->tokens_selected,
                     s->bytes_selected, s->ranges,   s->heads,   s->heads_in_use,   s->max_tokens,
                     s->max_clusters};
}

}  // namespace vrex
