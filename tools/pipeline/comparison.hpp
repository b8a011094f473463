// The honest headline of a pipeline run: the same frames through V-Rex and a paged baseline that
// keeps the same window, for all streams together and for one stream alone, with the device memory
// actually held, the out-of-group placement rate, and a control pass without the similarity lookup
// (temporal lookups only) side by side: the difference is what the similarity lookup adds. A radius-0
// control would not show it: on static regions the similarity lookup finds the block the temporal
// lookup finds anyway. docs/pipeline.md explains every figure.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>

#include "metrics.hpp"
#include "pipeline.hpp"

namespace vrex::pipeline {

struct ComparisonOptions {
    bool control = true;        // rerun the same sources without the similarity lookup
    bool single_stream = true;  // rerun stream 0 alone (only when the run has several streams)
};

struct Comparison {
    RunResult run;
    std::optional<RunResult> control;         // no similarity lookup; empty when disabled or the run had none
    std::optional<RunResult> single;          // stream 0 alone; empty for a one-stream run (run is it)
    std::optional<RunResult> single_control;  // stream 0 alone, no similarity lookup

    const RunResult& single_or_run() const { return single ? *single : run; }
    const RunResult* single_control_or_control() const {
        return single ? (single_control ? &*single_control : nullptr) : (control ? &*control : nullptr);
    }
    // The "headline" JSON object (docs/pipeline.md#json).
    nlohmann::json to_json() const;
};

// The figures of one run the headline compares (peaks over the run).
nlohmann::json headline_figures(const RunResult& r);

// Every pass gets a fresh device from @open_device, so passes do not see each other's blocks.
using DeviceFactory = std::function<std::shared_ptr<Device>()>;

// Runs @sources with @options, then the controls @copt asks for. @progress (may be empty) is called
// with the pass name before each pass.
Comparison run_comparison(const DeviceFactory& open_device, std::span<const StreamSource> sources,
                          const PipelineOptions& options, const ComparisonOptions& copt,
                          const std::function<void(const char*)>& on_pass = {});

}  // namespace vrex::pipeline
