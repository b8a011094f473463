// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// One benchmark result, written as one JSON object per line (JSON Lines) so that every bench binary can
// append to its own part file and scripts/bench.sh can merge them into build/bench/results.json.
#pragma once

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "stats.h"

namespace vrex::bench {

// What a record's target constrains: the ratio ours/baseline (a speed-up), or ours itself (an absolute
// figure such as frames per second, when there is no baseline to divide by).
enum class TargetOn { ratio, ours };

struct Record {
    std::string name;  // "<benchmark>/<configuration>: <what is compared>"
    double ours = 0.0;
    std::optional<double> baseline;  // absent for absolute measurements
    std::string unit;                // unit of ours and baseline, e.g. "queries/s"
    std::optional<double> target;    // absent: reported for information, no requirement
    TargetOn target_on = TargetOn::ratio;
    bool at_most = false;       // the target is a ceiling (memory ratios), not a floor (speed-ups)
    std::string baseline_name;  // what the baseline is, e.g. "FAISS IndexBinaryFlat (1 thread)"
    std::string notes;          // configuration details a reader needs to interpret the figure
    // Repeats: ours / baseline are the medians; the spreads give min, median, max and the repeat count.
    std::optional<Stats> ours_spread;
    std::optional<Stats> baseline_spread;
    // Structured fields for the report's tables (e.g. workload, op, method, roof_fraction).
    std::vector<std::pair<std::string, std::string>> tags;
    std::vector<std::pair<std::string, double>> values;
    // Paired comparisons (the two sides timed in the same interleaved rounds): the median of the per-round
    // ratios ours[i] / baseline[i], which ratio() then returns instead of the ratio of the two medians.
    std::optional<double> paired_ratio;

    std::optional<double> ratio() const;
    std::optional<bool> met() const;
};

// The machine's load while a record was measured: a sampler thread reads the number of runnable tasks
// (/proc/stat procs_running, an instantaneous count that includes this process) every 200 ms, so a record
// carries the load of its own measurement window (from the previous record to itself), not only the
// 1-minute load average at the start and end of a run. A record is flagged noisy when, on average, more
// tasks were runnable than the machine has CPUs: its rates then include time-sharing of caches and cores.
struct LoadWindow {
    double mean = 0.0;
    double max = 0.0;
    size_t samples = 0;
    double loadavg1 = 0.0;  // /proc/loadavg at the end of the window
    unsigned cpus = 1;
    bool noisy() const { return samples > 0 && mean > static_cast<double>(cpus); }
};

class LoadSampler {
  public:
    LoadSampler();
    ~LoadSampler();
    LoadSampler(const LoadSampler&) = delete;
    LoadSampler& operator=(const LoadSampler&) = delete;
    // The window since the previous call (or since construction), then a new window starts.
    LoadWindow take();

  private:
    void sample();
    std::mutex mu_;
    double sum_ = 0.0, max_ = 0.0;
    size_t n_ = 0;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// Appends records to a JSON Lines file (or nowhere when the path is empty) and echoes them to stdout.
// Every record gets the load of its window (LoadWindow) as values load_running_mean/max, load_avg1 and
// the tag noisy = "load" when it was measured on an oversubscribed machine.
class RecordSink {
  public:
    explicit RecordSink(const std::string& path);

    // Returns the record as written (with its load fields).
    Record add(const Record& r);
    bool ok() const { return path_.empty() || file_ != nullptr; }

  private:
    struct Closer {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    std::string path_;
    std::unique_ptr<std::FILE, Closer> file_;
    LoadSampler load_;
};

std::string to_json(const Record& r);

}  // namespace vrex::bench
