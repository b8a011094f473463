// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// One benchmark result, written as one JSON object per line (JSON Lines) so that every bench binary can
// append to its own part file and scripts/bench.sh can merge them into build/bench/results.json.
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stats.h"

namespace vrex::bench {

// What a record's target constrains: the ratio ours/baseline (a speed-up), or ours itself (an absolute
// figure such as frames per second, when there is no baseline to divide by).
enum class TargetOn { ratio, ours };

struct Record {
    std::string name;                 // "<benchmark>/<configuration>: <what is compared>"
    double ours = 0.0;
    std::optional<double> baseline;   // absent for absolute measurements
    std::string unit;                 // unit of ours and baseline, e.g. "queries/s"
    std::optional<double> target;     // absent: reported for information, no requirement
    TargetOn target_on = TargetOn::ratio;
    bool at_most = false;             // the target is a ceiling (memory ratios), not a floor (speed-ups)
    std::string baseline_name;        // what the baseline is, e.g. "FAISS IndexBinaryFlat (1 thread)"
    std::string notes;                // configuration details a reader needs to interpret the figure
    // Repeats: ours / baseline are the medians; the spreads give min, median, max and the repeat count.
    std::optional<Stats> ours_spread;
    std::optional<Stats> baseline_spread;
    // Structured fields for the report's tables (e.g. workload, op, method, roof_fraction).
    std::vector<std::pair<std::string, std::string>> tags;
    std::vector<std::pair<std::string, double>> values;

    std::optional<double> ratio() const;
    std::optional<bool> met() const;
};

// Appends records to a JSON Lines file (or nowhere when the path is empty) and echoes them to stdout.
class RecordSink {
public:
    explicit RecordSink(const std::string& path);

    void add(const Record& r);
    bool ok() const { return path_.empty() || file_ != nullptr; }

private:
    struct Closer {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    std::string path_;
    std::unique_ptr<std::FILE, Closer> file_;
};

std::string to_json(const Record& r);

}  // namespace vrex::bench
