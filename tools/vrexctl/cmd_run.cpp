// vrexctl run VIDEO...: the real-video pipeline (tools/pipeline) on the selected device.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "model_runner.hpp"
#include "pipeline/comparison.hpp"
#include "pipeline/metrics.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/report.hpp"

namespace vrexctl {
namespace {

struct RunArgs {
    std::vector<std::string> videos;
    std::uint32_t streams = 0;
    std::uint32_t stream_offset = 100;
    std::uint32_t max_frames = 0;
    std::string dtype = "fp16";
    std::string report;
    bool no_progress = false;
    std::string reuse_pick = "chain";
    bool no_window_release = false;
    bool no_pool = false;
    bool no_control = false;
    bool no_similarity = false;
    bool anchors = false;
    bool no_single = false;
    std::string model;
    std::string model_path;
    vrex::pipeline::PipelineOptions opt;
};

vrex::DType parse_dtype(const std::string& s) {
    if (s == "fp16") return vrex::DType::fp16;
    if (s == "bf16") return vrex::DType::bf16;
    if (s == "fp32") return vrex::DType::fp32;
    if (s == "int8") return vrex::DType::int8;
    throw ExitError(kExitUsage, fmt::format("unknown dtype '{}' (fp16, bf16, fp32, int8)", s));
}

void progress_bar(std::uint64_t done, std::uint64_t total) {
    if (total == 0) {
        std::cerr << fmt::format("\r{} frames", done) << std::flush;
        return;
    }
    constexpr int kWidth = 40;
    const int fill = static_cast<int>(kWidth * std::min<std::uint64_t>(done, total) / total);
    std::cerr << fmt::format("\r[{}{}] {}/{} frames", std::string(fill, '#'), std::string(kWidth - fill, ' '),
                             done, total)
              << std::flush;
}

// A VIDEO must be a readable regular file (FFmpeg then decides whether it is a video: exit 4 too).
void check_video_path(const std::string& v) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status st = fs::status(v, ec);
    if (ec || !fs::exists(st))
        throw ExitError(kExitBadInput, fmt::format("{}: no such file (expected a video file)", v));
    if (fs::is_directory(st))
        throw ExitError(kExitBadInput, fmt::format("{}: is a directory, not a video file", v));
    if (!fs::is_regular_file(st))
        throw ExitError(kExitBadInput, fmt::format("{}: not a regular file (expected a video file)", v));
    if (access(v.c_str(), R_OK) != 0)
        throw ExitError(kExitBadInput, fmt::format("{}: not readable ({})", v, std::strerror(errno)));
}

std::string pct(double v) {
    return fmt::format("{:.1f} %", 100.0 * v);
}

std::string fmt_ratio(const nlohmann::json& f, const char* group, const char* key) {
    return f.is_null() ? std::string("-") : fmt::format("{:.3f}x", f[group][key].get<double>());
}

// The same-window comparison, device memory and the control without the similarity lookup lead
// (the difference is what the similarity lookup adds); the append-only ratio is
// a footnote (that baseline keeps every frame ever seen, V-Rex a window: it is met by construction).
void print_headline(const vrex::pipeline::Comparison& c, const nlohmann::json& h) {
    const nlohmann::json& run = h["run"];
    const nlohmann::json& ctl = h["control"];
    const nlohmann::json& one = h["single_stream"];
    const nlohmann::json& one0 = h["single_stream_control"];
    const auto& r = c.run;
    const std::size_t n = r.streams.size();
    fmt::print("V-Rex vs a vLLM-style paged baseline keeping the same {}-frame window (peaks over the run)\n",
               r.zombie_frames + 1);
    fmt::print("{:<44}{:<30}{}\n", "",
               r.similarity ? fmt::format("this run (radius {})", r.radius) : "this run (no similarity)",
               "control: no similarity lookup");
    fmt::print("{:<44}{:<30}{}\n", fmt::format("resident KV, {} stream{} / baseline", n, n == 1 ? "" : "s"),
               fmt::format("{} ({} / {} blocks)", fmt_ratio(run, "same_window", "resident_bytes_ratio"),
                           run["same_window"]["blocks_peak"].get<std::uint64_t>(),
                           run["same_window"]["baseline_blocks_peak"].get<std::uint64_t>()),
               fmt_ratio(ctl, "same_window", "resident_bytes_ratio"));
    if (n > 1)
        fmt::print("{:<44}{:<30}{}\n", "resident KV, stream 0 alone / baseline",
                   fmt::format("{} ({} / {} blocks)", fmt_ratio(one, "same_window", "resident_bytes_ratio"),
                               one["same_window"]["blocks_peak"].get<std::uint64_t>(),
                               one["same_window"]["baseline_blocks_peak"].get<std::uint64_t>()),
                   fmt_ratio(one0, "same_window", "resident_bytes_ratio"));
    fmt::print("{:<44}{:<30}{}\n", "device memory held (slabs) / baseline pool",
               fmt::format("{} ({} / {})", fmt_ratio(run, "device_memory", "ratio"),
                           human_bytes(run["device_memory"]["held_bytes_peak"].get<std::uint64_t>()),
                           human_bytes(run["device_memory"]["baseline_pool_bytes"].get<std::uint64_t>())),
               fmt_ratio(ctl, "device_memory", "ratio"));
    auto oog = [](const nlohmann::json& f) {
        return f.is_null() ? std::string("-") : pct(f["out_of_group"]["rate"].get<double>());
    };
    fmt::print("{:<44}{:<30}{}\n", "placed outside the frame's bank group",
               fmt::format("{} ({} / {})", oog(run), r.fallback_allocations, r.allocations), oog(ctl));
    auto f1 = [](const nlohmann::json& f, const char* k, bool percent) {
        if (f.is_null()) return std::string("-");
        return percent ? pct(f[k].get<double>()) : fmt::format("{:.2f} dB", f[k].get<double>());
    };
    fmt::print("{:<44}{:<30}{}\n", "reuse rate", f1(run, "reuse_rate", true), f1(ctl, "reuse_rate", true));
    auto only = [](const nlohmann::json& f) {
        return f.is_null() ? std::string("-") : pct(f["reuse_by_lookup"]["similar_only"].get<double>());
    };
    fmt::print("{:<44}{:<30}{}\n", "  of it found only by the similarity lookup", only(run), only(ctl));
    fmt::print("{:<44}{:<30}{}\n", "reused-region PSNR p5", f1(run, "psnr_reused_p5_db", false),
               f1(ctl, "psnr_reused_p5_db", false));
    if (n > 1)
        fmt::print("{} streams were all active for {} of {} steps; stream 0 alone: {}\n", n,
                   r.all_active_steps(), r.samples.size(), r.streams[0].path);
}

void print_human(const vrex::pipeline::Comparison& c, const nlohmann::json& j) {
    const vrex::pipeline::RunResult& r = c.run;
    print_headline(c, j["headline"]);
    fmt::print("\n");
    fmt::print("backend            {}: {}\n", r.backend, r.device);
    fmt::print("model              {}, {} tokens/region, block {}\n", r.model, r.tokens_per_region,
               human_bytes(r.block_bytes));
    fmt::print("streams            {} ({} frames in total, {:.1f} s)\n", r.streams.size(), r.frames,
               r.wall_seconds);
    for (std::size_t i = 0; i < r.streams.size(); i++)
        fmt::print("  stream {}         {} frames, reuse {} (cross-stream {}){}  {}\n", i,
                   r.streams[i].frames, pct(r.streams[i].reuse_rate()), r.streams[i].reused_cross_stream,
                   r.streams[i].cut_path.empty() ? "" : fmt::format(", cut at {}", r.streams[i].cut_at),
                   r.streams[i].path);
    fmt::print(
        "reuse rate         {}  (found only by the similarity lookup {}, cross-stream {}, guard rejected {}, "
        "too old {})\n",
        pct(j["reuse_rate"]), r.reused_similar, r.reused_cross_stream, r.guard_rejected, r.too_old);
    fmt::print(
        "similarity lookups {} hits, {} at distance > 0 (approx-hit rate {}), {} of the hits on the block "
        "the "
        "temporal lookup found\n",
        r.similar_hits, r.approx_hits, pct(j["approx_hit_rate"]), r.similar_hits_temporal_block);
    fmt::print("reused-region PSNR p5 {:.2f} dB, p50 {:.2f} dB, min {:.2f} dB (guard {:.1f} dB)\n",
               j["psnr_reused_p5_db"].get<double>(), j["psnr_reused_p50_db"].get<double>(),
               j["psnr_reused_min_db"].get<double>(), r.psnr_guard_db);
    fmt::print(
        "HAL latency/frame  p50 {:.1f} us, p99 {:.1f} us; FCC p50 {:.1f} us ({:.0f} frames/s at 1080p "
        "equiv.)\n",
        j["latency_us_p50"].get<double>(), j["latency_us_p99"].get<double>(), j["fcc_us_p50"].get<double>(),
        j["fcc_1080p_fps_equiv"].get<double>());
    fmt::print("accounting         {}\n",
               r.accounting_mismatches
                   ? "MISMATCH: " + r.first_mismatch
                   : std::string("resident bytes = live blocks x block size at every step"));
    fmt::print(
        "footnote: against an append-only paged baseline (every frame ever seen stays resident) the "
        "resident KV peak is {:.4f}x ({} vs {}) and managed blocks {:.4f}x; met by construction for any "
        "clip longer than the window, so it is not the headline.\n",
        j["resident_bytes_ratio"].get<double>(), human_bytes(r.resident_bytes_peak()),
        human_bytes(r.baseline_bytes_peak()), j["managed_blocks_ratio"].get<double>());
}

std::string ci(const nlohmann::json& d) {
    return fmt::format("{:.3f} [{:.3f}, {:.3f}]", d["mean"].get<double>(), d["ci95"][0].get<double>(),
                       d["ci95"][1].get<double>());
}

void print_model(const nlohmann::json& j) {
    const nlohmann::json& acc = j["task"]["accuracy"];
    fmt::print("model builtin      {} questions, {} streams, exact KV cache peak {} tokens/stream\n",
               j["questions"].get<std::uint64_t>(), j["streams"].size(),
               j["exact_cache_tokens_peak"].get<std::uint64_t>());
    fmt::print("  task accuracy    exact {}, vrex {}\n", ci(acc["exact"]), ci(acc["vrex"]));
    fmt::print("  baselines        copy {}, most frequent {}, input-blind {}\n", ci(acc["baselines"]["copy"]),
               ci(acc["baselines"]["most_frequent"]), ci(acc["baselines"]["input_blind"]));
    const nlohmann::json& q = j["quality"]["vrex"];
    fmt::print("  {} {}, accuracy change {}, reuse {:.1f} %\n", q["direction"].get<std::string>(),
               ci(q["mean"]), ci(q["accuracy_change"]), 100.0 * j["reuse_rate"].get<double>());
    const nlohmann::json& kv = j["kv_bytes"];
    const nlohmann::json& pf = j["prefill"];
    fmt::print("  KV bytes         exact {}, vrex {} ({:.3f}x)\n",
               human_bytes(kv["exact_peak"].get<std::uint64_t>()),
               human_bytes(kv["vrex_device_peak"].get<std::uint64_t>()), kv["ratio"].get<double>());
    fmt::print("  prefill          time {} x exact; FLOPs {:.3f}x, floor {:.3f}x\n", ci(pf["time_ratio"]),
               pf["flops_ratio"].get<double>(), pf["flops_floor"].get<double>());
}

}  // namespace

void add_run(Command app, GlobalOptions& g) {
    auto a = std::make_shared<RunArgs>();
    Command c = app.subcommand("run", "decode videos, feed the FCC, allocate/reuse KV per region, measure");
    c.option("VIDEO", a->videos, "video files (several = concurrent streams on one device)").required();
    c.option("--streams", a->streams,
             "replicate one VIDEO into N streams, each starting --stream-offset later")
        .range(1, 16);
    c.option("--stream-offset", a->stream_offset, "frames between replicated streams").show_default();
    c.option("--max-frames", a->max_frames, "frames per stream (0 = whole file)").show_default();
    c.option("--layers", a->opt.model.layers, "model layers").show_default().range(1, 1024);
    c.option("--kv-heads", a->opt.model.kv_heads, "KV heads").show_default().range(1, 1024);
    c.option("--head-dim", a->opt.model.head_dim, "head dimension").show_default().range(1, 4096);
    c.option("--dtype", a->dtype, "fp16 | bf16 | fp32 | int8").show_default();
    c.option("--tokens-per-region", a->opt.model.tokens_per_region,
             "visual tokens per region (16 regions/frame)")
        .show_default()
        .range(1, 4096);
    c.option("--baseline-block-tokens", a->opt.baseline_tokens_per_block,
             "paged baseline block size (tokens)")
        .show_default()
        .range(1, 4096);
    c.option("--psnr-guard", a->opt.policy.psnr_guard_db, "reuse only if region PSNR >= this (dB)")
        .show_default()
        .range(0.0, 99.0);
    c.option("--max-reuse-age", a->opt.policy.max_reuse_age,
             "recompute KV older than this many frames (lowered to what the SHIE capacity allows for "
             "the stream count)")
        .show_default();
    c.option("--radius", a->opt.radius, "similarity radius (Hamming, 0..31)").show_default().range(0, 31);
    c.option("--reuse-pick", a->reuse_pick,
             "chain: a passing temporal candidate wins (a static region keeps one block); "
             "best: the higher PSNR wins")
        .show_default()
        .one_of({"chain", "best"});
    c.flag("--no-window-release", a->no_window_release,
           "leave releases to the device's zombie rule (lookups then keep blocks alive) instead of "
           "releasing a block once no frame of the window references it");
    c.flag("--no-pool", a->no_pool, "private streams (no cross-stream reuse)");
    c.flag("--no-similarity", a->no_similarity,
           "temporal lookups only: a region reuses only the block of the same region of the previous "
           "frame");
    c.flag("--no-control", a->no_control,
           "skip the control passes (without the similarity lookup; with --model builtin also the model's "
           "control_radius0)");
    c.flag("--anchors", a->anchors,
           "with --model builtin: also the streaming-video KV anchors, V-Rex's memory hierarchy and its "
           "ablations at equal device memory (keys anchors, ablations, resv: docs/model.md)");
    c.flag("--no-single", a->no_single, "skip the stream-0-alone pass of a multi-stream run");
    c.option("--model", a->model,
             "builtin: also run the builtin video transformer (model/) over edited streams of the clips "
             "(held-out clips only) and add its keys: task.accuracy.{exact,vrex,baselines}, quality, "
             "exact_cache_tokens_peak, kv_bytes, prefill.{time_ratio,flops_ratio,flops_floor}, reuse_rate, "
             "control_radius0; --max-frames sets the frames per stream; the pixel pipeline's colliding "
             "keys move to pixel_<key>")
        .one_of({"builtin"});
    c.option("--model-path", a->model_path,
             "with --model builtin: cpp (the default: decoder.py's step scripted and run by libtorch, the "
             "C++ policy over libvrex-hal) or python (torch in Python driving the same C++ policy)")
        .one_of({"cpp", "python"});
    c.option("--report", a->report, "write an HTML report (and plots) into this directory");
    c.flag("--no-progress", a->no_progress, "no progress bar");
    c.callback([a, &g]() {
        a->opt.pooled = !a->no_pool;
        a->opt.model.dtype = parse_dtype(a->dtype);
        a->opt.policy.prefer_chain = a->reuse_pick == "chain";
        a->opt.window_release = !a->no_window_release;
        a->opt.max_frames = a->max_frames;
        a->opt.similarity = !a->no_similarity;
        if (a->streams && a->videos.size() != 1)
            throw ExitError(kExitUsage, "--streams replicates exactly one VIDEO");
        if (a->streams && a->model == "builtin")
            throw ExitError(kExitUsage,
                            "--model builtin takes its streams as VIDEO... (repeat a clip), not --streams");
        for (const std::string& v : a->videos) check_video_path(v);
        std::vector<vrex::pipeline::StreamSource> sources;
        if (a->streams) {
            for (std::uint32_t i = 0; i < a->streams; i++)
                sources.push_back({a->videos[0], i * a->stream_offset, true});
        } else {
            for (const std::string& v : a->videos) sources.push_back({v, 0, false});
        }
        if (!a->no_progress && !g.json && isatty(STDERR_FILENO)) a->opt.progress = progress_bar;
        vrex::pipeline::ComparisonOptions copt;
        copt.control = !a->no_control;
        copt.single_stream = !a->no_single;
        auto on_pass = [a](const char* name) {
            if (a->opt.progress) std::cerr << fmt::format("\r{:60}\r{}:\n", "", name) << std::flush;
        };
        const vrex::pipeline::Comparison cmp =
            vrex::pipeline::run_comparison([&g]() { return open_device(g); }, sources, a->opt, copt, on_pass);
        if (a->opt.progress) std::cerr << std::endl;
        const vrex::pipeline::RunResult& r = cmp.run;
        nlohmann::json j = r.to_json();
        j["headline"] = cmp.to_json();
        nlohmann::json m;
        if (a->model == "builtin") {
            m = run_builtin_model(
                {a->videos, a->max_frames, a->opt.radius, !a->no_control, a->anchors, a->model_path});
            for (const auto& [k, v] : m.items()) {
                if (j.contains(k)) j["pixel_" + k] = j[k];
                j[k] = v;
            }
        }
        if (!a->report.empty()) {
            const std::string page = vrex::pipeline::write_report(a->report, cmp);
            if (!m.is_null()) add_model_section(page, m);
            j["report"] = page;
        }
        if (g.json) {
            print_json(j);
        } else {
            print_human(cmp, j);
            if (a->model == "builtin") print_model(j);
            if (!a->report.empty()) fmt::print("report             {}\n", j["report"].get<std::string>());
        }
        std::uint64_t mismatches = r.accounting_mismatches;
        std::string first = r.first_mismatch;
        for (const auto* x : {&cmp.control, &cmp.single, &cmp.single_control})
            if (*x && (*x)->accounting_mismatches && !mismatches++) first = (*x)->first_mismatch;
        if (mismatches) throw ExitError(kExitRuntime, "KV accounting mismatch: " + first);
    });
}

}  // namespace vrexctl
