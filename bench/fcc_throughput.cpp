// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// FCC fingerprint throughput (lib/fcc_fingerprint.c) on one core, Google Benchmark: whole-frame
// fingerprints of 480p, 720p and 1080p luma (real footage resized, or a synthetic sequence), plus the
// unit's stages separately so the report says where the time goes. Rates are per CPU second of this
// (single-threaded) process, Google Benchmark's default, so other jobs on a shared machine do not skew them.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "bench_options.h"
#include "bench_record.h"
#include "frames.h"
#include "vrex_model_cxx.h"

namespace vrex::bench {
namespace {

struct Resolution {
    const char* label;
    uint32_t width;
    uint32_t height;
};

constexpr Resolution kResolutions[] = {{"480p", 854, 480}, {"720p", 1280, 720}, {"1080p", 1920, 1080}};
constexpr double kTargetFps1080p = 1000.0;
constexpr size_t kSequenceFrames = 8;  // cycled, so motion is estimated between real consecutive frames

std::vector<Frame> source_frames(const Options& opt, std::string& source)
{
    std::vector<Frame> frames;
    if (opt.has_footage() && opt.mode != Mode::smoke) {
        GrayClip clip(opt.gray, opt.width, opt.height);
        // Frames from the middle of the clip, where people and the van move.
        for (size_t i = 0; clip.ok() && i < kSequenceFrames; i++) frames.push_back(clip.read(clip.frames() / 2 + i));
        source = "vtest.avi";
    }
    if (frames.empty() || frames.back().pix.empty()) {
        frames.clear();
        for (uint32_t i = 0; i < kSequenceFrames; i++) frames.push_back(synthetic_frame(768, 576, i));
        source = "synthetic";
    }
    return frames;
}

struct Sequence {
    std::vector<Frame> frames;
};

void bm_fingerprint(benchmark::State& state, const Sequence* seq)
{
    vrex_fcc_image img[2];
    struct vrex_fcc_motion mv;
    struct vrex_fcc_features feat;
    vrex_fp fp;
    size_t i = 0;
    const Frame& f0 = seq->frames[0];
    vrex_fcc_fingerprint(f0.pix.data(), f0.width, f0.height, f0.width, nullptr, &img[1], &mv, &fp, &feat);
    for (auto _ : state) {
        const Frame& f = seq->frames[i % seq->frames.size()];
        int rc = vrex_fcc_fingerprint(f.pix.data(), f.width, f.height, f.width, &img[(i + 1) & 1], &img[i & 1], &mv,
                                      &fp, &feat);
        if (rc) {
            state.SkipWithError("vrex_fcc_fingerprint failed");
            break;
        }
        benchmark::DoNotOptimize(fp);
        i++;
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void bm_downscale(benchmark::State& state, const Sequence* seq)
{
    vrex_fcc_image img;
    size_t i = 0;
    for (auto _ : state) {
        const Frame& f = seq->frames[i++ % seq->frames.size()];
        benchmark::DoNotOptimize(vrex_fcc_downscale(f.pix.data(), f.width, f.height, f.width, &img));
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

// The stages after downscaling work on the fixed working grid: their cost does not depend on resolution.
struct GridPair {
    vrex_fcc_image prev, cur;
    struct vrex_fcc_motion mv;
    struct vrex_fcc_features feat;
};

void bm_motion(benchmark::State& state, const GridPair* g)
{
    struct vrex_fcc_motion mv;
    for (auto _ : state) {
        vrex_fcc_motion(&g->cur, &g->prev, &mv);
        benchmark::DoNotOptimize(mv);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void bm_features(benchmark::State& state, const GridPair* g)
{
    struct vrex_fcc_features f;
    for (auto _ : state) {
        vrex_fcc_features(&g->mv, &f);
        benchmark::DoNotOptimize(f);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void bm_encode(benchmark::State& state, const GridPair* g)
{
    vrex_fp fp;
    for (auto _ : state) {
        vrex_fcc_encode(&g->cur, &g->feat, &fp);
        benchmark::DoNotOptimize(fp);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

class Collector : public benchmark::ConsoleReporter {
public:
    struct Result {
        double items_per_second;
        double ns_per_item;
    };
    std::map<std::string, Result> results;
    bool failed = false;

    Collector() : ConsoleReporter(OO_Tabular) {}  // no colour escapes: the output goes to logs

    void ReportRuns(const std::vector<Run>& runs) override
    {
        for (const auto& r : runs) {
            if (r.error_occurred) {
                failed = true;
                continue;
            }
            auto it = r.counters.find("items_per_second");
            double ips = it == r.counters.end() ? 0.0 : static_cast<double>(it->second);
            results[r.benchmark_name()] = {ips, ips > 0 ? 1e9 / ips : 0.0};
        }
        ConsoleReporter::ReportRuns(runs);
    }
};

int run(const Options& opt)
{
    RecordSink sink(opt.out);
    if (!sink.ok()) return 2;
    std::string source;
    std::vector<Frame> frames = source_frames(opt, source);

    std::vector<Sequence> seqs;
    for (const auto& res : kResolutions) {
        Sequence s;
        for (const auto& f : frames) s.frames.push_back(resize_bilinear(f, res.width, res.height));
        seqs.push_back(std::move(s));
    }
    GridPair grid;
    const Frame& a = seqs[2].frames[0];
    const Frame& b = seqs[2].frames[1];
    if (vrex_fcc_downscale(a.pix.data(), a.width, a.height, a.width, &grid.prev) ||
        vrex_fcc_downscale(b.pix.data(), b.width, b.height, b.width, &grid.cur)) {
        std::fprintf(stderr, "fcc_throughput: vrex_fcc_downscale rejected a 1080p frame\n");
        return 1;
    }
    vrex_fcc_motion(&grid.cur, &grid.prev, &grid.mv);
    vrex_fcc_features(&grid.mv, &grid.feat);

    const double min_time = opt.mode == Mode::smoke ? 0.01 : opt.mode == Mode::quick ? 0.3 : 2.0;
    for (size_t r = 0; r < std::size(kResolutions); r++) {
        std::string label = kResolutions[r].label;
        benchmark::RegisterBenchmark(("fcc_fingerprint/" + label).c_str(), bm_fingerprint, &seqs[r])
            ->MinTime(min_time);
        benchmark::RegisterBenchmark(("fcc_downscale/" + label).c_str(), bm_downscale, &seqs[r])
            ->MinTime(min_time);
    }
    benchmark::RegisterBenchmark("fcc_motion/grid", bm_motion, &grid)->MinTime(min_time);
    benchmark::RegisterBenchmark("fcc_features/grid", bm_features, &grid)->MinTime(min_time);
    benchmark::RegisterBenchmark("fcc_encode/grid", bm_encode, &grid)->MinTime(min_time);

    std::vector<std::string> rest = opt.rest;  // Google Benchmark may rewrite argv in place
    std::vector<char*> args;
    args.reserve(rest.size());
    for (auto& s : rest) args.push_back(s.data());
    int argc = static_cast<int>(args.size());
    benchmark::Initialize(&argc, args.data());
    Collector collector;
    benchmark::RunSpecifiedBenchmarks(&collector);
    benchmark::Shutdown();
    if (collector.failed) return 1;

    for (const auto& res : kResolutions) {
        std::string label = res.label;
        auto it = std::find_if(collector.results.begin(), collector.results.end(), [&](const auto& kv) {
            return kv.first.starts_with("fcc_fingerprint/" + label + "/");
        });
        if (it == collector.results.end()) continue;  // filtered out by --benchmark_filter
        Record r;
        r.name = "fcc/" + label + ": fingerprint throughput (one core)";
        r.ours = it->second.items_per_second;
        r.unit = "frames/s";
        if (label == "1080p") {
            r.target = kTargetFps1080p;
            r.target_on = TargetOn::ours;
        }
        r.notes = std::to_string(res.width) + "x" + std::to_string(res.height) + " luma from " + source +
                  ", downscale + motion + features + encode";
        sink.add(r);
    }
    for (const auto& [name, result] : collector.results) {
        if (name.starts_with("fcc_fingerprint/")) continue;
        Record r;
        r.name = "fcc/stage " + name.substr(0, name.find("/min_time")) + ": time per frame";
        r.ours = result.ns_per_item / 1000.0;
        r.unit = "us/frame";
        r.notes = "stage of the fingerprint unit (lower is better), for the profile";
        sink.add(r);
    }
    return 0;
}

}  // namespace
}  // namespace vrex::bench

int main(int argc, char** argv)
{
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows up in logs as it happens
    vrex::bench::Options opt;
    if (!vrex::bench::parse_options(argc, argv, opt)) return 2;
    return vrex::bench::run(opt);
}
