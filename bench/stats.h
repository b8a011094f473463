// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// Repeated measurements: every figure the benchmarks publish is the median of >= 5 repeats, with the
// minimum and maximum next to it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <ctime>
#include <vector>

namespace vrex::bench {

struct Stats {
    double min = 0.0;
    double median = 0.0;
    double max = 0.0;
    size_t n = 0;
};

inline Stats stats_of(std::vector<double> v) {
    Stats s;
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    s.n = v.size();
    s.min = v.front();
    s.max = v.back();
    s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    return s;
}

// A distribution-free confidence interval for the median of @v (order statistics: the median lies
// between the j-th smallest and the j-th largest of n samples with probability 1 - 2 P(Bin(n, 1/2) < j)).
// The widest-j interval whose level reaches 95 % when n allows it; with fewer than 6 samples no interval
// reaches 95 %, and [min, max] is returned with its true level (93.75 % for 5 samples).
struct MedianCi {
    double lo = 0.0, hi = 0.0, level = 0.0;
};

inline MedianCi median_ci(std::vector<double> v) {
    MedianCi ci;
    const size_t n = v.size();
    if (n == 0) return ci;
    std::sort(v.begin(), v.end());
    // cdf[k] = P(Bin(n, 1/2) <= k)
    std::vector<double> pmf(n + 1, 0.0);
    pmf[0] = std::ldexp(1.0, -static_cast<int>(n));
    for (size_t k = 1; k <= n; k++)
        pmf[k] = pmf[k - 1] * static_cast<double>(n - k + 1) / static_cast<double>(k);
    size_t j = 1;
    double below = pmf[0];  // P(Bin < j) for j = 1
    while (j + 1 <= n / 2 && 1.0 - 2.0 * (below + pmf[j]) >= 0.95) {
        below += pmf[j];
        j++;
    }
    ci.lo = v[j - 1];
    ci.hi = v[n - j];
    ci.level = 1.0 - 2.0 * below;
    return ci;
}

// CPU seconds of the process: every method runs on one thread, and CPU time (unlike wall time) is not
// inflated while other jobs share the machine's cores (caches and memory bandwidth still are shared).
inline double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace vrex::bench
