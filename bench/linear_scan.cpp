// SPDX-License-Identifier: (GPL-2.0 OR MIT)
#include "linear_scan.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace vrex::bench {

void linear_scan(std::span<const vrex_fp> codes, const vrex_fp& q, uint32_t radius, std::vector<uint32_t>& out)
{
    // Distances of a block first (a branch-free loop the compiler vectorises, with vector popcount where
    // the CPU has it), then the rare hits: a push_back inside the distance loop would block vectorising.
    constexpr size_t kBlock = 256;
    uint8_t d[kBlock];
    const uint64_t q0 = q.w[0], q1 = q.w[1];
    const vrex_fp* c = codes.data();
    for (size_t base = 0; base < codes.size(); base += kBlock) {
        const size_t len = std::min(kBlock, codes.size() - base);
        for (size_t i = 0; i < len; i++)
            d[i] = static_cast<uint8_t>(__builtin_popcountll(c[base + i].w[0] ^ q0) +
                                        __builtin_popcountll(c[base + i].w[1] ^ q1));
        for (size_t i = 0; i < len; i++)
            if (d[i] <= radius) out.push_back(static_cast<uint32_t>(base + i));
    }
}

double copy_bandwidth(size_t bytes, double min_seconds)
{
    std::vector<uint8_t> src(bytes, 1), dst(bytes, 0);  // touched here, so no page faults are timed
    using clock = std::chrono::steady_clock;
    double best = 0.0, total = 0.0;
    for (int pass = 0; pass < 3 || total < min_seconds; pass++) {
        src[static_cast<size_t>(pass) % bytes] = static_cast<uint8_t>(pass);
        auto t0 = clock::now();
        std::memcpy(dst.data(), src.data(), bytes);
        double s = std::chrono::duration<double>(clock::now() - t0).count();
        total += s;
        best = std::max(best, static_cast<double>(bytes) / s);
        if (pass > 1000) break;
    }
    // Keep the copy observable so it is not optimised away.
    volatile uint8_t sink = dst[bytes / 2];
    (void)sink;
    return best;
}

}  // namespace vrex::bench
