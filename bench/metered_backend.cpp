// SPDX-License-Identifier: (GPL-2.0 OR MIT)
#include "metered_backend.hpp"

#include <algorithm>

namespace vrex::bench {

std::error_code MeteredBackend::bo_create(drm_vrex_bo_create& args) {
    std::error_code ec = inner_->bo_create(args);
    if (ec) return ec;
    constexpr std::uint64_t kPage = 4096;  // the uAPI rounds BO sizes up to the page size
    const std::uint64_t bytes = (args.size + kPage - 1) / kPage * kPage;
    std::lock_guard lock(meter_->mu);
    meter_->bo_bytes[args.handle] = bytes;
    meter_->live_bytes += bytes;
    meter_->peak_bytes = std::max(meter_->peak_bytes, meter_->live_bytes);
    return ec;
}

std::error_code MeteredBackend::bo_destroy(std::uint32_t handle) {
    std::error_code ec = inner_->bo_destroy(handle);
    if (ec) return ec;
    std::lock_guard lock(meter_->mu);
    if (auto it = meter_->bo_bytes.find(handle); it != meter_->bo_bytes.end()) {
        meter_->live_bytes -= it->second;
        meter_->bo_bytes.erase(it);
    }
    return ec;
}

}  // namespace vrex::bench
