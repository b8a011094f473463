// What the pipeline writes into a KV block. No model runs here, so a block carries a stand-in for
// the K/V a vision encoder would produce from its region: a header naming where it came from and a
// copy of the region's luma (subsampled until it fits). Reading it back through the block a lookup
// returned is how the pipeline checks that a reused block holds the region it claims (the PSNR of the
// quality guard is computed against device memory, not a host-side copy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "luma.hpp"

namespace vrex::pipeline {

struct PayloadHeader {
    static constexpr std::uint32_t kMagic = 0x4b565258;  // "XRVK"
    std::uint32_t magic = 0;
    std::uint32_t stream = 0;  // pipeline stream index
    std::uint32_t frame = 0;   // the stream's frame the KV was computed for
    std::uint32_t region = 0;
    std::uint32_t step = 0;      // pipeline step (global clock, comparable across streams)
    std::uint32_t sub = 1;       // subsampling of the stored luma
    std::uint32_t w = 0, h = 0;  // region size in the frame
    std::uint64_t serial = 0;    // unique per allocation
};

// Writes the header and the region's luma into @block. False when not even a 1/64 subsampled copy fits.
bool write_payload(std::span<std::byte> block, const LumaFrame& frame, std::uint32_t region,
                   const PayloadHeader& origin);

// The header in @block, if it carries one.
std::optional<PayloadHeader> read_payload_header(std::span<const std::byte> block);

// PSNR between @region of @frame and the luma stored in @block (nullopt: no payload, or a payload of
// another region or size).
std::optional<double> payload_psnr(std::span<const std::byte> block, const LumaFrame& frame,
                                   std::uint32_t region);

}  // namespace vrex::pipeline
