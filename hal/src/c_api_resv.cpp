// The C ABI of ReSV (vrex_hal.h, "ReSV"): vrex_hal_resv_head wraps a vrex::ResvHead. Every entry
// point catches everything; a C caller sees a status code, and vrex_hal_last_error() says why.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "c_api_internal.hpp"
#include "vrex/resv.hpp"
#include "vrex/vrex_hal.h"

struct vrex_hal_resv_head {
    std::unique_ptr<vrex::ResvHead> head;
};

namespace {

// No ReSV unit on this device: the C ABI has no "not supported" code; there is no such device.
vrex_hal_status resv_status_of(std::error_code ec) {
    if (ec == std::errc::operation_not_supported) return VREX_HAL_ERR_NO_DEVICE;
    return vrex::capi::status_of(ec);
}

template <class F>
vrex_hal_status guarded(const char* fn, F&& f) noexcept {
    return vrex::capi::guarded(fn, nullptr, std::forward<F>(f), resv_status_of);
}

using vrex::capi::invalid;

// The caller's params over the defaults, size-negotiated (vrex_hal.h).
bool read_params(const vrex_hal_resv_params* in, vrex_hal_resv_params& out) {
    vrex_hal_resv_default_params(&out);
    const std::size_t size = in->struct_size;
    if (size < sizeof(in->struct_size)) return false;
    const auto* bytes =
        reinterpret_cast<const unsigned char*>(in);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
    if (size > sizeof(out) &&
        std::any_of(bytes + sizeof(out), bytes + size, [](unsigned char b) { return b != 0; }))
        return false;
    std::memcpy(&out, in, std::min(size, sizeof(out)));
    out.struct_size = sizeof(out);
    return out.pad[0] == 0 && out.pad[1] == 0 && out.pad[2] == 0;
}

vrex::Error selection_out(const vrex::Result<vrex::ResvSelection>& s, vrex_hal_resv_range* ranges,
                          uint32_t capacity, vrex_hal_resv_selection* sel) {
    if (!s) return s.error_info();
    *sel = vrex_hal_resv_selection{};
    sel->ranges = static_cast<uint32_t>(s->ranges.size());
    sel->tokens = s->tokens;
    sel->clusters = s->clusters;
    sel->head_tokens = s->head_tokens;
    sel->qhash = s->qhash;
    sel->cutoff = s->cutoff;
    const std::size_t n = std::min<std::size_t>(capacity, s->ranges.size());
    for (std::size_t i = 0; i < n; i++)
        ranges[i] = vrex_hal_resv_range{s->ranges[i].first, s->ranges[i].count};
    return {};
}

template <class T>
vrex::Error append(vrex_hal_resv_head* h, const T* keys, size_t count, uint32_t* tokens) {
    if (!h) return invalid("head is NULL");
    if (!keys && count)
        return invalid("keys is NULL with count " + std::to_string(count) +
                       " (valid: NULL only with count 0)");
    const std::size_t dim = h->head->dim();
    if (count > SIZE_MAX / dim) return invalid("count * dim overflows");
    auto r = h->head->append(std::span<const T>(keys, count * dim));
    if (!r) return r.error_info();
    if (tokens) *tokens = *r;
    return {};
}

template <class T>
vrex::Error select(vrex_hal_resv_head* h, const T* query, uint32_t flags, vrex_hal_resv_range* ranges,
                   uint32_t capacity, vrex_hal_resv_selection* sel) {
    if (auto e = vrex::capi::non_null({{"head", h}, {"query", query}, {"sel", sel}})) return e;
    if (capacity && !ranges)
        return invalid("ranges is NULL with capacity " + std::to_string(capacity) +
                       " (valid: NULL only with capacity 0)");
    if (auto e = vrex::capi::known_flags("flags", flags, VREX_HAL_RESV_BLOCKS, "VREX_HAL_RESV_BLOCKS"))
        return e;
    return selection_out(
        h->head->select(std::span<const T>(query, h->head->dim()), flags & VREX_HAL_RESV_BLOCKS), ranges,
        capacity, sel);
}

}  // namespace

extern "C" {

void vrex_hal_resv_default_params(vrex_hal_resv_params* p) {
    if (!p) return;
    const vrex::ResvParams d;
    *p = vrex_hal_resv_params{};
    p->struct_size = sizeof(*p);
    p->dim = d.dim;
    p->seed = d.seed;
    p->ratio = d.ratio;
    p->th = d.th;
    p->mode = static_cast<uint32_t>(d.mode);
    p->tokens_per_block = d.tokens_per_block;
    p->bytes_per_token = d.bytes_per_token;
}

vrex_hal_status vrex_hal_resv_head_create(vrex_hal_device* dev, const vrex_hal_resv_params* params,
                                          vrex_hal_resv_head** out) {
    return guarded(__func__, [&] {
        if (auto e = vrex::capi::non_null({{"dev", dev}, {"params", params}, {"out", out}})) return e;
        vrex_hal_resv_params c{};
        if (!read_params(params, c))
            return invalid("params: struct_size " + std::to_string(params->struct_size) +
                           " (valid: " + std::to_string(offsetof(vrex_hal_resv_params, dim)) + ".." +
                           std::to_string(sizeof(vrex_hal_resv_params)) +
                           ", larger only with zero trailing bytes), or pad not zero");
        if (c.mode > VREX_HAL_RESV_TOKENS)
            return invalid("params: mode " + std::to_string(c.mode) +
                           " is unknown (valid: 0 VREX_HAL_RESV_MASS, 1 VREX_HAL_RESV_TOKENS)");
        vrex::ResvParams p;
        p.dim = c.dim;
        p.seed = c.seed;
        p.ratio = c.ratio;
        p.th = c.th;
        p.mode = static_cast<vrex::ResvMode>(c.mode);
        p.tokens_per_block = c.tokens_per_block;
        p.bytes_per_token = c.bytes_per_token;
        if (c.has_lut) p.lut.assign(std::begin(c.lut), std::end(c.lut));
        auto head = vrex::ResvHead::create(vrex::capi::device_of(dev), p, c.max_batch ? c.max_batch : 1024);
        if (!head) return head.error_info();
        *out = new vrex_hal_resv_head{std::move(*head)};
        return vrex::Error{};
    });
}

void vrex_hal_resv_head_destroy(vrex_hal_resv_head* head) {
    delete head;
}

uint32_t vrex_hal_resv_head_tokens(const vrex_hal_resv_head* head) {
    return head ? head->head->tokens() : 0;
}

vrex_hal_status vrex_hal_resv_append_f32(vrex_hal_resv_head* head, const float* keys, size_t count,
                                         uint32_t* tokens) {
    return guarded(__func__, [&] { return append(head, keys, count, tokens); });
}

vrex_hal_status vrex_hal_resv_append_i16(vrex_hal_resv_head* head, const int16_t* keys, size_t count,
                                         uint32_t* tokens) {
    return guarded(__func__, [&] { return append(head, keys, count, tokens); });
}

vrex_hal_status vrex_hal_resv_select_f32(vrex_hal_resv_head* head, const float* query, uint32_t flags,
                                         vrex_hal_resv_range* ranges, uint32_t capacity,
                                         vrex_hal_resv_selection* sel) {
    return guarded(__func__, [&] { return select(head, query, flags, ranges, capacity, sel); });
}

vrex_hal_status vrex_hal_resv_select_i16(vrex_hal_resv_head* head, const int16_t* query, uint32_t flags,
                                         vrex_hal_resv_range* ranges, uint32_t capacity,
                                         vrex_hal_resv_selection* sel) {
    return guarded(__func__, [&] { return select(head, query, flags, ranges, capacity, sel); });
}

vrex_hal_status vrex_hal_resv_truncate(vrex_hal_resv_head* head, uint32_t keep) {
    return guarded(__func__, [&] {
        if (!head) return invalid("head is NULL");
        auto r = head->head->truncate(keep);
        return r ? vrex::Error{} : r.error_info();
    });
}

vrex_hal_status vrex_hal_resv_get_stats(vrex_hal_device* dev, vrex_hal_resv_stats* stats) {
    return guarded(__func__, [&] {
        auto d = vrex::capi::device_of(dev);
        if (auto e = vrex::capi::non_null({{"dev", d.get()}, {"stats", stats}})) return e;
        auto st = vrex::resv_stats(*d);
        if (!st) return st.error_info();
        *stats = vrex_hal_resv_stats{};
        stats->keys = st->keys;
        stats->clusters = st->clusters;
        stats->selects = st->selects;
        stats->tokens_scanned = st->tokens_scanned;
        stats->tokens_selected = st->tokens_selected;
        stats->bytes_selected = st->bytes_selected;
        stats->ranges = st->ranges;
        stats->heads = st->heads;
        stats->heads_in_use = st->heads_in_use;
        stats->max_tokens = st->max_tokens;
        stats->max_clusters = st->max_clusters;
        return vrex::Error{};
    });
}

}  // extern "C"
