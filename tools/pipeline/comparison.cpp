#include "comparison.hpp"

#include <nlohmann/json.hpp>

namespace vrex::pipeline {
namespace {

double ratio(std::uint64_t a, std::uint64_t b) {
    return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
}

nlohmann::json or_null(const std::optional<RunResult>& r) {
    return r ? headline_figures(*r) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json headline_figures(const RunResult& r) {
    nlohmann::json j;
    j["streams"] = r.streams.size();
    j["frames"] = r.frames;
    j["all_active_steps"] = r.all_active_steps();
    j["radius"] = r.radius;
    j["similarity"] = r.similarity;
    j["pooled"] = r.pooled;
    j["reuse_rate"] = ratio(r.reused, r.regions);
    // Reused regions by the lookup that offered the block: the temporal one (the same region of the
    // previous frame), or only the similarity one (what it adds; approximate: at distance > 0).
    j["reuse_by_lookup"] = {{"temporal", ratio(r.reused - r.reused_similar, r.regions)},
                            {"similar_only", ratio(r.reused_similar, r.regions)}};
    j["psnr_reused_p5_db"] = percentile(r.reused_psnr, 0.05);
    j["same_window"] = {{"resident_bytes_peak", r.resident_bytes_peak()},
                        {"baseline_bytes_peak", r.window_bytes_peak()},
                        {"resident_bytes_ratio", ratio(r.resident_bytes_peak(), r.window_bytes_peak())},
                        {"blocks_peak", r.live_blocks_peak()},
                        {"baseline_blocks_peak", r.window_blocks_peak()},
                        {"blocks_ratio", ratio(r.live_blocks_peak(), r.window_blocks_peak())}};
    j["device_memory"] = {{"held_bytes_peak", r.held_bytes_peak()},
                          {"baseline_pool_bytes", r.window_pool_bytes},
                          {"ratio", ratio(r.held_bytes_peak(), r.window_pool_bytes)}};
    j["out_of_group"] = {{"rate", r.out_of_group_rate()},
                         {"fallback_allocations", r.fallback_allocations},
                         {"allocations", r.allocations}};
    j["append_only_ratio"] = ratio(r.resident_bytes_peak(), r.baseline_bytes_peak());
    j["accounting_mismatches"] = r.accounting_mismatches;
    return j;
}

nlohmann::json Comparison::to_json() const {
    nlohmann::json j;
    j["run"] = headline_figures(run);
    j["control"] = or_null(control);
    j["single_stream"] = headline_figures(single_or_run());
    const RunResult* s0 = single_control_or_control();
    j["single_stream_control"] = s0 ? headline_figures(*s0) : nlohmann::json(nullptr);
    j["single_stream_source"] = run.streams.empty() ? "" : run.streams[0].path;
    return j;
}

Comparison run_comparison(const DeviceFactory& open_device, std::span<const StreamSource> sources,
                          const PipelineOptions& options, const ComparisonOptions& copt,
                          const std::function<void(const char*)>& on_pass) {
    auto pass = [&](const char* name, std::span<const StreamSource> src, bool similarity) {
        if (on_pass) on_pass(name);
        PipelineOptions o = options;
        o.similarity = similarity;
        // Only the main pass feeds the report's annotated frames.
        if (std::string_view(name) != "run") o.annotate = 0;
        return run_pipeline(open_device(), src, o);
    };
    Comparison c{pass("run", sources, options.similarity), {}, {}, {}};
    const bool control = copt.control && options.similarity;
    if (control) c.control = pass("control: no similarity lookup", sources, false);
    if (copt.single_stream && sources.size() > 1) {
        c.single = pass("stream 0 alone", sources.first(1), options.similarity);
        if (control) c.single_control = pass("stream 0 alone, no similarity lookup", sources.first(1), false);
    }
    return c;
}

}  // namespace vrex::pipeline
