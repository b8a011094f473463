#include "kv_payload.hpp"

#include <cstring>

namespace vrex::pipeline {

bool write_payload(std::span<std::byte> block, const LumaFrame& frame, std::uint32_t region,
                   const PayloadHeader& origin) {
    const RegionRect rc = region_rect(frame.width, frame.height, region);
    std::uint32_t sub = 1;
    auto samples = [&](std::uint32_t s) { return std::uint64_t{(rc.w + s - 1) / s} * ((rc.h + s - 1) / s); };
    while (sizeof(PayloadHeader) + samples(sub) > block.size()) {
        if (sub >= 64) return false;
        sub *= 2;
    }
    PayloadHeader h = origin;
    h.magic = PayloadHeader::kMagic;
    h.region = region;
    h.sub = sub;
    h.w = rc.w;
    h.h = rc.h;
    std::memcpy(block.data(), &h, sizeof(h));
    auto* dst = reinterpret_cast<std::uint8_t*>(block.data() + sizeof(h));
    const std::uint32_t sw = (rc.w + sub - 1) / sub;
    for (std::uint32_t y = 0, row = 0; y < rc.h; y += sub, row++) {
        const std::uint8_t* src = frame.px.data() + std::size_t{rc.y + y} * frame.width + rc.x;
        for (std::uint32_t x = 0, col = 0; x < rc.w; x += sub, col++)
            dst[std::size_t{row} * sw + col] = src[x];
    }
    return true;
}

std::optional<PayloadHeader> read_payload_header(std::span<const std::byte> block) {
    if (block.size() < sizeof(PayloadHeader)) return std::nullopt;
    PayloadHeader h;
    std::memcpy(&h, block.data(), sizeof(h));
    if (h.magic != PayloadHeader::kMagic || h.sub == 0) return std::nullopt;
    return h;
}

std::optional<double> payload_psnr(std::span<const std::byte> block, const LumaFrame& frame,
                                   std::uint32_t region) {
    const auto h = read_payload_header(block);
    const RegionRect rc = region_rect(frame.width, frame.height, region);
    if (!h || h->region != region || h->w != rc.w || h->h != rc.h) return std::nullopt;
    const std::uint32_t sw = (rc.w + h->sub - 1) / h->sub;
    const std::uint64_t need = sizeof(PayloadHeader) + std::uint64_t{sw} * ((rc.h + h->sub - 1) / h->sub);
    if (need > block.size()) return std::nullopt;
    const auto* stored = reinterpret_cast<const std::uint8_t*>(block.data() + sizeof(PayloadHeader));
    return psnr(frame.px.data() + std::size_t{rc.y} * frame.width + rc.x, frame.width, stored, sw, rc.w, rc.h,
                h->sub);
}

}  // namespace vrex::pipeline
