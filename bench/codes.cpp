// SPDX-License-Identifier: (GPL-2.0 OR MIT)
#include "codes.h"

namespace vrex::bench {

std::vector<vrex_fp> uniform_codes(size_t n, uint64_t seed)
{
    Rng rng(seed);
    std::vector<vrex_fp> v(n);
    for (auto& c : v) {
        c.w[0] = rng.next();
        c.w[1] = rng.next();
    }
    return v;
}

vrex_fp flip_bits(vrex_fp c, uint32_t flips, Rng& rng)
{
    vrex_fp mask{};
    for (uint32_t done = 0; done < flips;) {
        uint32_t bit = rng.below(VREX_FP_BITS);
        uint64_t m = 1ULL << (bit & 63);
        if (mask.w[bit >> 6] & m) continue;
        mask.w[bit >> 6] |= m;
        done++;
    }
    c.w[0] ^= mask.w[0];
    c.w[1] ^= mask.w[1];
    return c;
}

std::vector<vrex_fp> noisy_copies(std::span<const vrex_fp> centres, size_t n, uint32_t max_flips,
                                  uint64_t seed)
{
    Rng rng(seed);
    std::vector<vrex_fp> v(n);
    auto count = static_cast<uint32_t>(centres.size());
    for (auto& c : v) c = flip_bits(centres[rng.below(count)], rng.below(max_flips + 1), rng);
    return v;
}

}  // namespace vrex::bench
