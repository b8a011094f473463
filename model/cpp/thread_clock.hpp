// The calling thread's CPU time in seconds: the clock every engine part, the host pool's setup and the
// copy engine are timed by (step times are thread CPU time, paired per frame).
#pragma once

#include <time.h>

namespace vrex::lcp {

inline double thread_cpu_s() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace vrex::lcp
