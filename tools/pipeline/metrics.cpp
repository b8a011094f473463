#include "metrics.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace vrex::pipeline {

double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const auto hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

namespace {

template <class F>
std::uint64_t peak(const std::vector<StepSample>& s, F field) {
    std::uint64_t m = 0;
    for (const StepSample& x : s) m = std::max(m, field(x));
    return m;
}

double ratio(std::uint64_t a, std::uint64_t b) {
    return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
}
double rate(std::uint64_t a, std::uint64_t b) {
    return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
}

}  // namespace

std::uint64_t RunResult::resident_bytes_peak() const {
    return peak(samples, [](const StepSample& x) { return x.resident_bytes; });
}
std::uint64_t RunResult::baseline_bytes_peak() const {
    return peak(samples, [](const StepSample& x) { return x.baseline_bytes; });
}
std::uint64_t RunResult::window_bytes_peak() const {
    return peak(samples, [](const StepSample& x) { return x.window_bytes; });
}
std::uint64_t RunResult::live_blocks_peak() const {
    return peak(samples, [](const StepSample& x) { return x.live_blocks; });
}
std::uint64_t RunResult::baseline_blocks_peak() const {
    return peak(samples, [](const StepSample& x) { return x.baseline_blocks; });
}
std::uint64_t RunResult::window_blocks_peak() const {
    return peak(samples, [](const StepSample& x) { return x.window_blocks; });
}

std::uint64_t RunResult::held_bytes_peak() const {
    return peak(samples, [](const StepSample& x) { return x.held_bytes; });
}
std::uint64_t RunResult::all_active_steps() const {
    std::uint64_t n = 0;
    for (const StepSample& x : samples) n += x.active_streams == streams.size();
    return n;
}
double RunResult::out_of_group_rate() const {
    return rate(fallback_allocations, allocations);
}

nlohmann::json RunResult::to_json() const {
    using nlohmann::json;
    json j;
    j["frames"] = frames;
    j["streams"] = streams.size();
    j["reuse_rate"] = rate(reused, regions);
    j["approx_hit_rate"] = rate(approx_hits, similar_lookups);
    j["resident_bytes_peak"] = resident_bytes_peak();
    j["baseline_bytes_peak"] = baseline_bytes_peak();
    j["resident_bytes_ratio"] = ratio(resident_bytes_peak(), baseline_bytes_peak());
    j["managed_blocks_ratio"] = ratio(live_blocks_peak(), baseline_blocks_peak());
    j["psnr_reused_p5_db"] = percentile(reused_psnr, 0.05);
    j["latency_us_p50"] = percentile(hal_us, 0.50);
    j["latency_us_p99"] = percentile(hal_us, 0.99);
    j["backend"] = backend;

    j["device"] = device;
    j["similar_hit_rate"] = rate(similar_hits, similar_lookups);
    j["managed_blocks_peak"] = live_blocks_peak();
    j["baseline_blocks_peak"] = baseline_blocks_peak();
    j["held_bytes_peak"] = held_bytes_peak();
    j["out_of_group_rate"] = out_of_group_rate();
    j["all_active_steps"] = all_active_steps();
    j["window_baseline"] = {{"bytes_peak", window_bytes_peak()},
                            {"blocks_peak", window_blocks_peak()},
                            {"resident_bytes_ratio", ratio(resident_bytes_peak(), window_bytes_peak())},
                            {"pool_bytes", window_pool_bytes},
                            {"held_bytes_ratio", ratio(held_bytes_peak(), window_pool_bytes)},
                            {"managed_blocks_ratio", ratio(live_blocks_peak(), window_blocks_peak())}};
    j["psnr_reused_min_db"] =
        reused_psnr.empty() ? 0.0 : *std::min_element(reused_psnr.begin(), reused_psnr.end());
    j["psnr_reused_p50_db"] = percentile(reused_psnr, 0.5);
    j["fcc_us_p50"] = percentile(fcc_us, 0.5);
    j["fcc_1080p_us_p50"] = percentile(fcc_1080p_us, 0.5);
    const double f1080 = percentile(fcc_1080p_us, 0.5);
    j["fcc_1080p_fps_equiv"] = f1080 > 0 ? 1e6 / f1080 : 0.0;
    j["wall_seconds"] = wall_seconds;
    j["accounting_mismatches"] = accounting_mismatches;
    if (!first_mismatch.empty()) j["first_mismatch"] = first_mismatch;
    j["counts"] = {{"regions", regions},
                   {"reused", reused},
                   {"reused_similar", reused_similar},
                   {"reused_cross_stream", reused_cross_stream},
                   {"guard_rejected", guard_rejected},
                   {"too_old", too_old},
                   {"similar_lookups", similar_lookups},
                   {"similar_hits", similar_hits},
                   {"approx_hits", approx_hits},
                   {"similar_hits_temporal_block", similar_hits_temporal_block},
                   {"temporal_hits", temporal_hits},
                   {"allocations", allocations},
                   {"released", released},
                   {"window_released", window_released},
                   {"fallback_allocations", fallback_allocations}};
    j["model"] = {{"name", model},
                  {"tokens_per_region", tokens_per_region},
                  {"bytes_per_token", bytes_per_token},
                  {"block_bytes", block_bytes},
                  {"frame_kv_bytes", frame_kv_bytes}};
    j["config"] = {{"bank_count", bank_count},
                   {"bank_size", bank_size},
                   {"zombie_frames", zombie_frames},
                   {"psnr_guard_db", psnr_guard_db},
                   {"radius", radius},
                   {"similarity", similarity},
                   {"pooled", pooled},
                   {"max_reuse_age", max_reuse_age},
                   {"prefer_chain", prefer_chain},
                   {"window_release", window_release}};
    json ss = json::array();
    for (const StreamInfo& s : streams)
        ss.push_back({{"path", s.path},
                      {"codec", s.codec},
                      {"width", s.width},
                      {"height", s.height},
                      {"fps", s.fps},
                      {"start_frame", s.start_frame},
                      {"frames", s.frames},
                      {"cut_path", s.cut_path},
                      {"cut_at", s.cut_at},
                      {"regions", s.regions},
                      {"reused", s.reused},
                      {"reused_cross_stream", s.reused_cross_stream},
                      {"reuse_rate", s.reuse_rate()}});
    j["stream_info"] = ss;
    return j;
}

}  // namespace vrex::pipeline
