// `vrexctl run --model builtin`: runs the builtin video transformer (model/, python3 -m vrex.run)
// over the same clips and returns its JSON object (quality vs exact KV, prefill time, reuse, memory).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vrexctl {

struct ModelRunArgs {
    std::vector<std::string> videos;
    std::uint32_t max_frames = 0;  // 0 = whole clips
    std::uint32_t radius = 20;
    std::uint32_t stream_offset = 0;  // the i-th clip starts at frame i * stream_offset
};

// Spawns the runner (no shell), collects its stdout and parses it. ExitError(kExitRuntime) with the
// runner's exit status when it fails; its diagnostics go to our stderr as they come.
nlohmann::json run_builtin_model(const ModelRunArgs& args);

// Adds a "model" section (summary table, KL / top-1 agreement / prefill time per frame) to the HTML
// report at @page, before its credits. @m: the runner's object (with per_frame).
void add_model_section(const std::string& page, const nlohmann::json& m);

}  // namespace vrexctl
