// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// Code sets for the similarity benchmarks: uniform random 128-bit codes, and clustered codes drawn from
// real-footage fingerprints with bit-flip noise to reach the wanted size. All generators are seeded, so
// every run (and every index under test) sees the same data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "frames.h"
#include "vrex_model_cxx.h"

namespace vrex::bench {

class Rng {  // splitmix64: tiny, fast, good enough for workload generation
public:
    explicit Rng(uint64_t seed) : s_(seed) {}
    uint64_t next()
    {
        uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    uint32_t below(uint32_t n) { return static_cast<uint32_t>((next() >> 32) * n >> 32); }

private:
    uint64_t s_;
};

std::vector<vrex_fp> uniform_codes(size_t n, uint64_t seed);

// Flips exactly @flips distinct random bits of @c.
vrex_fp flip_bits(vrex_fp c, uint32_t flips, Rng& rng);

// @n codes, each a random centre with a uniform number of flipped bits in [0, max_flips].
std::vector<vrex_fp> noisy_copies(std::span<const vrex_fp> centres, size_t n, uint32_t max_flips,
                                  uint64_t seed);

// Fingerprints of consecutive frames through the FCC reference model (motion against the previous
// frame, as the hardware sees a stream). Frames are read one at a time.
template <typename NextFrame>
std::vector<vrex_fp> fingerprint_sequence(size_t count, NextFrame&& next)
{
    std::vector<vrex_fp> fps;
    fps.reserve(count);
    vrex_fcc_image img[2];
    struct vrex_fcc_motion mv;
    struct vrex_fcc_features feat;
    for (size_t i = 0; i < count; i++) {
        Frame f = next(i);
        vrex_fp fp;
        if (f.pix.empty() || vrex_fcc_fingerprint(f.pix.data(), f.width, f.height, f.width,
                                                  i ? &img[(i - 1) & 1] : nullptr, &img[i & 1], &mv, &fp,
                                                  &feat) != 0)
            break;
        fps.push_back(fp);
    }
    return fps;
}

}  // namespace vrex::bench
