// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// Repeated measurements: every figure the benchmarks publish is the median of >= 5 repeats, with the
// minimum and maximum next to it.
#pragma once

#include <algorithm>
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

// CPU seconds of the process: every method runs on one thread, and CPU time (unlike wall time) is not
// inflated while other jobs share the machine's cores (caches and memory bandwidth still are shared).
inline double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace vrex::bench
