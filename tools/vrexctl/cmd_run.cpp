// vrexctl run VIDEO...: the real-video pipeline (tools/pipeline) on the selected device.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "common.hpp"
#include "model_runner.hpp"
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
    std::string model;
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

void print_human(const vrex::pipeline::RunResult& r, const nlohmann::json& j) {
    auto pct = [](double v) { return fmt::format("{:.1f} %", 100.0 * v); };
    fmt::print("backend            {}: {}\n", r.backend, r.device);
    fmt::print("model              {}, {} tokens/region, block {}\n", r.model, r.tokens_per_region,
               human_bytes(r.block_bytes));
    fmt::print("streams            {} ({} frames in total, {:.1f} s)\n", r.streams.size(), r.frames,
               r.wall_seconds);
    fmt::print("reuse rate         {}  (similar {}, cross-stream {}, guard rejected {}, too old {})\n",
               pct(j["reuse_rate"]), r.reused_similar, r.reused_cross_stream, r.guard_rejected, r.too_old);
    fmt::print("approx-hit rate    {}  (similar-hit rate {})\n", pct(j["approx_hit_rate"]),
               pct(j["similar_hit_rate"]));
    fmt::print("resident KV peak   {} vs append-only {}  -> {:.4f}x (windowed baseline {} -> {:.3f}x)\n",
               human_bytes(r.resident_bytes_peak()), human_bytes(r.baseline_bytes_peak()),
               j["resident_bytes_ratio"].get<double>(), human_bytes(r.window_bytes_peak()),
               j["window_baseline"]["resident_bytes_ratio"].get<double>());
    fmt::print("managed blocks     {} vs {} -> {:.4f}x (windowed {} -> {:.3f}x)\n", r.live_blocks_peak(),
               r.baseline_blocks_peak(), j["managed_blocks_ratio"].get<double>(), r.window_blocks_peak(),
               j["window_baseline"]["managed_blocks_ratio"].get<double>());
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
}

}  // namespace

void add_run(CLI::App& app, GlobalOptions& g) {
    auto a = std::make_shared<RunArgs>();
    CLI::App* c =
        app.add_subcommand("run", "decode videos, feed the FCC, allocate/reuse KV per region, measure");
    c->add_option("VIDEO", a->videos, "video files (several = concurrent streams on one device)")->required();
    c->add_option("--streams", a->streams,
                  "replicate one VIDEO into N streams, each starting --stream-offset later")
        ->check(CLI::Range(1, 16));
    c->add_option("--stream-offset", a->stream_offset, "frames between replicated streams")
        ->capture_default_str();
    c->add_option("--max-frames", a->max_frames, "frames per stream (0 = whole file)")->capture_default_str();
    c->add_option("--layers", a->opt.model.layers, "model layers")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    c->add_option("--kv-heads", a->opt.model.kv_heads, "KV heads")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    c->add_option("--head-dim", a->opt.model.head_dim, "head dimension")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
    c->add_option("--dtype", a->dtype, "fp16 | bf16 | fp32 | int8")->capture_default_str();
    c->add_option("--tokens-per-region", a->opt.model.tokens_per_region,
                  "visual tokens per region (16 regions/frame)")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
    c->add_option("--baseline-block-tokens", a->opt.baseline_tokens_per_block,
                  "paged baseline block size (tokens)")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
    c->add_option("--psnr-guard", a->opt.policy.psnr_guard_db, "reuse only if region PSNR >= this (dB)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 99.0));
    c->add_option("--max-reuse-age", a->opt.policy.max_reuse_age,
                  "recompute KV older than this many frames (lowered to what the SHIE capacity allows for "
                  "the stream count)")
        ->capture_default_str();
    c->add_option("--radius", a->opt.radius, "similarity radius (Hamming, 0..31)")
        ->capture_default_str()
        ->check(CLI::Range(0, 31));
    c->add_option("--reuse-pick", a->reuse_pick,
                  "chain: a passing temporal candidate wins (a static region keeps one block); "
                  "best: the higher PSNR wins")
        ->capture_default_str()
        ->check(CLI::IsMember({"chain", "best"}));
    c->add_flag("--no-window-release", a->no_window_release,
                "leave releases to the device's zombie rule (lookups then keep blocks alive) instead of "
                "releasing a block once no frame of the window references it");
    bool no_pool = false;
    c->add_flag("--no-pool", no_pool, "private streams (no cross-stream reuse)");
    c->add_option("--model", a->model,
                  "builtin: also run the builtin video transformer (model/) over the clips and add its keys "
                  "(kl_mean, kl_p99, top1_agreement, attn_rel_err_p50, prefill_ms_ratio, reuse_rate, "
                  "resident_bytes_ratio_window, control_radius0, control_no_fcc); the pixel pipeline's "
                  "colliding keys move to pixel_<key>")
        ->check(CLI::IsMember({"builtin"}));
    c->add_option("--report", a->report, "write an HTML report (and plots) into this directory");
    c->add_flag("--no-progress", a->no_progress, "no progress bar");
    c->callback([a, &g, c]() {
        a->opt.pooled = !c->get_option("--no-pool")->as<bool>();
        a->opt.model.dtype = parse_dtype(a->dtype);
        a->opt.policy.prefer_chain = a->reuse_pick == "chain";
        a->opt.window_release = !a->no_window_release;
        a->opt.max_frames = a->max_frames;
        if (a->streams && a->videos.size() != 1)
            throw ExitError(kExitUsage, "--streams replicates exactly one VIDEO");
        if (a->streams && a->model == "builtin")
            throw ExitError(kExitUsage,
                            "--model builtin takes its streams as VIDEO... (repeat a clip), not --streams");
        for (const std::string& v : a->videos) {
            std::error_code ec;
            if (!std::filesystem::is_regular_file(v, ec))
                throw ExitError(kExitBadInput, fmt::format("{}: no such file", v));
        }
        std::vector<vrex::pipeline::StreamSource> sources;
        if (a->streams) {
            for (std::uint32_t i = 0; i < a->streams; i++)
                sources.push_back({a->videos[0], i * a->stream_offset, true});
        } else {
            for (const std::string& v : a->videos) sources.push_back({v, 0, false});
        }
        auto dev = open_device(g);
        if (!a->no_progress && !g.json && isatty(STDERR_FILENO)) a->opt.progress = progress_bar;
        const vrex::pipeline::RunResult r = vrex::pipeline::run_pipeline(dev, sources, a->opt);
        if (a->opt.progress) std::cerr << std::endl;
        nlohmann::json j = r.to_json();
        nlohmann::json m;
        if (a->model == "builtin") {
            // --stream-offset staggers the model's streams only when given (VIDEO... = one stream each).
            const std::uint32_t offset = c->count("--stream-offset") ? a->stream_offset : 0;
            m = run_builtin_model({a->videos, a->max_frames, a->opt.radius, offset});
            for (const auto& [k, v] : m.items()) {
                if (j.contains(k)) j["pixel_" + k] = j[k];
                j[k] = v;
            }
        }
        if (!a->report.empty()) {
            const std::string page = vrex::pipeline::write_report(a->report, r);
            if (!m.is_null()) add_model_section(page, m);
            j["report"] = page;
        }
        if (g.json) {
            print_json(j);
        } else {
            print_human(r, j);
            if (a->model == "builtin") {
                fmt::print(
                    "model builtin      KL mean {:.4f} nats (p99 {:.4f}), top-1 agreement {:.2f} %, "
                    "prefill {:.3f}x exact, reuse {:.1f} %, resident {:.3f}x window\n",
                    j["kl_mean"].get<double>(), j["kl_p99"].get<double>(),
                    100.0 * j["top1_agreement"].get<double>(), j["prefill_ms_ratio"].get<double>(),
                    100.0 * j["reuse_rate"].get<double>(), j["resident_bytes_ratio_window"].get<double>());
                for (const char* ctl : {"control_radius0", "control_no_fcc"})
                    fmt::print("  {:17s} KL mean {:.4f}, top-1 {:.2f} %, reuse {:.1f} %, resident {:.3f}x\n",
                               ctl, j[ctl]["kl_mean"].get<double>(),
                               100.0 * j[ctl]["top1_agreement"].get<double>(),
                               100.0 * j[ctl]["reuse_rate"].get<double>(),
                               j[ctl]["resident_bytes_ratio_window"].get<double>());
            }
            if (!a->report.empty()) fmt::print("report             {}\n", j["report"].get<std::string>());
        }
        if (r.accounting_mismatches)
            throw ExitError(kExitRuntime, "KV accounting mismatch: " + r.first_mismatch);
    });
}

}  // namespace vrexctl
