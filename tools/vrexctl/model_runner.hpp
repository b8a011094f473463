// `vrexctl run --model builtin`: runs the builtin video transformer (model/, python3 -m vrex.run)
// over edited streams of the same (held-out) clips and returns its JSON object: task accuracy of exact
// KV and vrex with CIs, the trivial baselines, KV bytes, prefill FLOPs and time with the FLOP floor.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace vrexctl {

struct ModelRunArgs {
    std::vector<std::string> videos;
    std::uint32_t frames = 0;  // frames per edited stream (0: the runner's default)
    std::uint32_t radius = 20;
    bool control = true;   // the radius-0 control run
    bool anchors = false;  // also the KV anchors and V-Rex ablations at equal memory (vrex.run --anchors)
    // "cpp": the scripted decoder under libtorch with the C++ policy (vrex.run's default); "python":
    // torch in Python driving the same C++ policy; empty: the runner's default.
    std::string path;
};

// Spawns the runner (no shell), collects its stdout and parses it. ExitError(kExitRuntime) with the
// runner's exit status when it fails; its diagnostics go to our stderr as they come.
nlohmann::json run_builtin_model(const ModelRunArgs& args);

// Adds a "model" section (task accuracy with CIs against the baselines, quality vs exact KV, KV bytes,
// prefill time and FLOPs) to the HTML report at @page, before its credits. @m: the runner's object.
void add_model_section(const std::string& page, const nlohmann::json& m);

}  // namespace vrexctl
