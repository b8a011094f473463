// ReSV's selection math on the host (resv.hpp: resv_hash, resv_select_blocks, resv_mass_lut): lib/resv.c's
// HCU hash and position-aware block WiCSum called directly, so the engines that hash keys at insertion and
// weigh them with a position table (docs/hw/resv.md §8) use the reference model's one copy. The device's
// register interface has neither a position table nor per-token hashes yet (§8.4).
#include <algorithm>
#include <cmath>
#include <system_error>
#include <vector>

#include "vrex/resv.hpp"

extern "C" {
#include "resv.h"
}

namespace vrex {

namespace {

std::error_code invalid() {
    return std::make_error_code(std::errc::invalid_argument);
}

}  // namespace

Result<void> resv_hash(std::uint64_t seed, std::uint32_t dim, std::span<const float> keys,
                       std::span<std::uint32_t> out) {
    // The HCU of the thread's last call, kept: its sign table is 8 KiB to fill, more than hashing a
    // question's few queries costs. Its dimension is 0 until one is made (no HCU has dimension 0), and
    // init refuses a bad dimension before it writes, so a refused call leaves the kept HCU as it was.
    thread_local vrex_resv_hcu hcu{};
    const bool kept = hcu.dim != 0 && hcu.seed == seed && hcu.dim == dim;
    if (!kept && vrex_resv_hcu_init(&hcu, seed, dim) != 0) return invalid();
    if (keys.size() != std::size_t{dim} * out.size()) return invalid();
    std::vector<std::int16_t> q(dim);
    for (std::size_t i = 0; i < out.size(); i++) {
        resv_quantize(keys.subspan(i * dim, dim), q);
        out[i] = vrex_resv_hash(&hcu, q.data());
    }
    return {};
}

Result<std::vector<std::uint32_t>> resv_select_blocks(std::span<const std::uint32_t> hashes,
                                                      std::span<const float> position, std::uint32_t qhash,
                                                      std::span<const std::uint16_t> lut, double ratio,
                                                      std::uint32_t tokens_per_block) {
    if (hashes.size() != position.size() || hashes.empty() || hashes.size() > VREX_RESV_BLOCKS_MAX_TOKENS ||
        lut.size() != VREX_RESV_LUT_SIZE || tokens_per_block == 0 || hashes.size() % tokens_per_block ||
        !(ratio >= 0.0 && ratio <= 1.0))
        return invalid();
    std::vector<std::uint32_t> pos(position.size());
    for (std::size_t i = 0; i < position.size(); i++) {
        const float w = position[i];
        if (!(w >= 0.0f && w <= 1.0f)) return invalid();
        pos[i] = static_cast<std::uint32_t>(std::lround(static_cast<double>(w) * VREX_RESV_POS_ONE));
    }
    const auto n = static_cast<std::uint32_t>(hashes.size());
    std::vector<std::uint64_t> scratch(n / tokens_per_block);
    std::vector<std::uint32_t> blocks(n / tokens_per_block);
    std::uint32_t nsel = 0;
    const auto q16 = static_cast<std::uint32_t>(std::lround(ratio * VREX_RESV_RATIO_ONE));
    if (vrex_resv_select_blocks(hashes.data(), pos.data(), n, tokens_per_block, qhash, lut.data(), q16,
                                scratch.data(), blocks.data(), static_cast<std::uint32_t>(blocks.size()),
                                &nsel) != 0)
        return invalid();
    blocks.resize(nsel);
    return blocks;
}

Result<std::vector<std::uint16_t>> resv_mass_lut(double scale) {
    if (!(scale >= 0.0) || !std::isfinite(scale)) return invalid();
    std::vector<std::uint16_t> lut(VREX_RESV_LUT_SIZE);
    const double pi = std::acos(-1.0);
    for (std::uint32_t d = 0; d < VREX_RESV_LUT_SIZE; d++) {
        const double w = 65535.0 * std::exp(scale * (std::cos(pi * d / VREX_RESV_BITS) - 1.0));
        lut[d] = static_cast<std::uint16_t>(std::max<long>(1, std::lround(w)));
    }
    return lut;
}

}  // namespace vrex
