// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// FCC fingerprint throughput (lib/fcc_fingerprint.c) on one core.
// Whole-frame fingerprints of 480p, 720p and 1080p luma: consecutive real frames (footage resized), as
// many as it takes to fill a ring larger than twice the L3, each fingerprinted once per round in order (so
// every frame streams from DRAM and motion is estimated between real consecutive frames); >= 5 rounds,
// the resolutions interleaved round by round, and every round must produce the same fingerprints as the
// first (a mismatch fails the run). What the unit reads: it point-samples 4 x 4 pixels for each pixel of
// its 128 x 96 working grid, i.e. 196,608 pixels of every frame whatever the resolution (the cache lines
// of 384 rows), not the whole frame; the records say so. The unit's stages are timed apart with Google
// Benchmark (cache-warm, for the profile). Rates are per CPU second of this single-threaded process.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "bench_options.h"
#include "bench_record.h"
#include "frames.h"
#include "roofline.h"
#include "stats.h"
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

std::vector<Frame> source_frames(const Options& opt, std::string& source) {
    std::vector<Frame> frames;
    if (opt.has_footage() && opt.mode != Mode::smoke) {
        GrayClip clip(opt.gray, opt.width, opt.height);
        // Frames from the middle of the clip, where people and the van move.
        for (size_t i = 0; clip.ok() && i < kSequenceFrames; i++)
            frames.push_back(clip.read(clip.frames() / 2 + i));
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

// Consecutive frames of the clip (or synthetic ones), resized, until the ring holds >= @bytes.
Sequence streamed_ring(const Options& opt, const Resolution& res, size_t bytes, std::string& source) {
    Sequence s;
    const size_t frame_bytes = size_t{res.width} * res.height;
    const size_t want = std::max<size_t>(8, (bytes + frame_bytes - 1) / frame_bytes);
    if (opt.has_footage() && opt.mode != Mode::smoke) {
        GrayClip clip(opt.gray, opt.width, opt.height);
        for (size_t i = 0; clip.ok() && s.frames.size() < want; i++)
            s.frames.push_back(resize_bilinear(clip.read(i % clip.frames()), res.width, res.height));
        source = "vtest.avi";
    }
    if (s.frames.empty()) {
        for (uint32_t i = 0; s.frames.size() < want; i++)
            s.frames.push_back(resize_bilinear(synthetic_frame(768, 576, i), res.width, res.height));
        source = "synthetic";
    }
    return s;
}

// One round: every frame of the ring once, in order; returns frames per CPU second and fills @fps.
double stream_round(const Sequence& seq, std::vector<vrex_fp>& fps, bool& ok) {
    static vrex_fcc_image img[2];
    struct vrex_fcc_motion mv;
    struct vrex_fcc_features feat;
    fps.resize(seq.frames.size());
    const double t0 = cpu_seconds();
    for (size_t i = 0; i < seq.frames.size(); i++) {
        const Frame& f = seq.frames[i];
        if (vrex_fcc_fingerprint(f.pix.data(), f.width, f.height, f.width, i ? &img[(i + 1) & 1] : nullptr,
                                 &img[i & 1], &mv, &fps[i], &feat))
            ok = false;
    }
    return static_cast<double>(seq.frames.size()) / std::max(cpu_seconds() - t0, 1e-9);
}

void bm_fingerprint(benchmark::State& state, const Sequence* seq) {
    vrex_fcc_image img[2];
    struct vrex_fcc_motion mv;
    struct vrex_fcc_features feat;
    vrex_fp fp;
    size_t i = 0;
    const Frame& f0 = seq->frames[0];
    vrex_fcc_fingerprint(f0.pix.data(), f0.width, f0.height, f0.width, nullptr, &img[1], &mv, &fp, &feat);
    for (auto _ : state) {
        const Frame& f = seq->frames[i % seq->frames.size()];
        int rc = vrex_fcc_fingerprint(f.pix.data(), f.width, f.height, f.width, &img[(i + 1) & 1],
                                      &img[i & 1], &mv, &fp, &feat);
        if (rc) {
            state.SkipWithError("vrex_fcc_fingerprint failed");
            break;
        }
        benchmark::DoNotOptimize(fp);
        i++;
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void bm_downscale(benchmark::State& state, const Sequence* seq) {
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

void bm_motion(benchmark::State& state, const GridPair* g) {
    struct vrex_fcc_motion mv;
    for (auto _ : state) {
        vrex_fcc_motion(&g->cur, &g->prev, &mv);
        benchmark::DoNotOptimize(mv);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void bm_features(benchmark::State& state, const GridPair* g) {
    struct vrex_fcc_features f;
    for (auto _ : state) {
        vrex_fcc_features(&g->mv, &f);
        benchmark::DoNotOptimize(f);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void bm_encode(benchmark::State& state, const GridPair* g) {
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
    std::map<std::string, std::vector<Result>> results;  // one per repetition
    bool failed = false;

    Collector() : ConsoleReporter(OO_Tabular) {}  // no colour escapes: the output goes to logs

    void ReportRuns(const std::vector<Run>& runs) override {
        for (const auto& r : runs) {
            if (r.error_occurred) {
                failed = true;
                continue;
            }
            if (r.run_type == Run::RT_Aggregate) continue;  // the repetitions themselves make the spread
            auto it = r.counters.find("items_per_second");
            double ips = it == r.counters.end() ? 0.0 : static_cast<double>(it->second);
            results[r.benchmark_name()].push_back({ips, ips > 0 ? 1e9 / ips : 0.0});
        }
        ConsoleReporter::ReportRuns(runs);
    }
};

int run(const Options& opt) {
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

    // The cache-resident control and the stage timings: 5 repetitions each (their spread), sharing the
    // time one figure used to take.
    const int reps = 5;
    const double min_time = (opt.mode == Mode::smoke ? 0.01 : opt.mode == Mode::quick ? 0.3 : 2.0) / reps;
    auto repeated = [&](benchmark::internal::Benchmark* b) { b->MinTime(min_time)->Repetitions(reps); };
    for (size_t r = 0; r < std::size(kResolutions); r++) {
        std::string label = kResolutions[r].label;
        repeated(
            benchmark::RegisterBenchmark(("fcc_fingerprint/" + label).c_str(), bm_fingerprint, &seqs[r]));
        repeated(benchmark::RegisterBenchmark(("fcc_downscale/" + label).c_str(), bm_downscale, &seqs[r]));
    }
    repeated(benchmark::RegisterBenchmark("fcc_motion/grid", bm_motion, &grid));
    repeated(benchmark::RegisterBenchmark("fcc_features/grid", bm_features, &grid));
    repeated(benchmark::RegisterBenchmark("fcc_encode/grid", bm_encode, &grid));

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

    // Streamed whole-frame fingerprints: rings beyond L3, rounds interleaved over the resolutions.
    const CacheSizes caches = cache_sizes();
    const size_t ring_bytes = opt.mode == Mode::smoke ? (size_t{4} << 20) : 2 * caches.l3 + (size_t{8} << 20);
    const size_t rounds = opt.mode == Mode::full ? 9 : 5;
    std::vector<Sequence> rings;
    std::string ring_source;
    for (const auto& res : kResolutions) rings.push_back(streamed_ring(opt, res, ring_bytes, ring_source));
    std::vector<std::vector<double>> rates(rings.size());
    std::vector<std::vector<vrex_fp>> first(rings.size());
    bool ok = true, same = true;
    for (size_t round = 0; round < rounds; round++)
        for (size_t r = 0; r < rings.size(); r++) {
            std::vector<vrex_fp> fps;
            rates[r].push_back(stream_round(rings[r], fps, ok));
            if (round == 0)
                first[r] = fps;
            else
                same &= std::equal(
                    fps.begin(), fps.end(), first[r].begin(),
                    [](const vrex_fp& a, const vrex_fp& b) { return a.w[0] == b.w[0] && a.w[1] == b.w[1]; });
        }
    if (!ok || !same) {
        std::fprintf(stderr, "fcc_throughput: %s\n",
                     !ok ? "vrex_fcc_fingerprint failed on a streamed frame"
                         : "a round produced different fingerprints from the first");
        return 1;
    }
    for (size_t r = 0; r < rings.size(); r++) {
        const auto& res = kResolutions[r];
        const std::string label = res.label;
        const Stats s = stats_of(rates[r]);
        const size_t frame_bytes = size_t{res.width} * res.height;
        Record rec;
        rec.name = "fcc/" + label + ": fingerprint throughput, frames streamed from DRAM (one core)";
        rec.ours = s.median;
        rec.ours_spread = s;
        rec.unit = "frames/s";
        if (label == "1080p") {
            rec.target = kTargetFps1080p;
            rec.target_on = TargetOn::ours;
        }
        rec.notes = std::to_string(res.width) + "x" + std::to_string(res.height) + " luma, " +
                    std::to_string(rings[r].frames.size()) + " consecutive frames from " + ring_source +
                    " (" + std::to_string(rings[r].frames.size() * frame_bytes >> 20) + " MiB ring, L3 " +
                    std::to_string(caches.l3 >> 20) + " MiB), each once per round, " +
                    std::to_string(rounds) +
                    " rounds interleaved over the resolutions, fingerprints equal in every round; the unit "
                    "point-samples 4 x 4 pixels per pixel of its " +
                    std::to_string(VREX_FCC_W) + " x " + std::to_string(VREX_FCC_H) + " grid (" +
                    std::to_string(VREX_FCC_W * VREX_FCC_H * 16) +
                    " pixels of the frame, not all of it), then motion + features + encode";
        rec.tags = {{"kind", "fcc"}, {"resolution", label}};
        rec.values = {{"frames_per_round", static_cast<double>(rings[r].frames.size())},
                      {"ring_bytes", static_cast<double>(rings[r].frames.size() * frame_bytes)},
                      {"pixels_read_per_frame", static_cast<double>(VREX_FCC_W * VREX_FCC_H * 16)},
                      {"pixels_per_frame", static_cast<double>(frame_bytes)}};
        sink.add(rec);
    }
    for (const auto& res : kResolutions) {
        std::string label = res.label;
        auto it = std::find_if(collector.results.begin(), collector.results.end(), [&](const auto& kv) {
            return kv.first.starts_with("fcc_fingerprint/" + label + "/");
        });
        if (it == collector.results.end()) continue;  // filtered out by --benchmark_filter
        Record r;
        r.name = "fcc/" + label + ": fingerprint throughput, " + std::to_string(kSequenceFrames) +
                 " frames cycled in cache (control)";
        std::vector<double> fps;
        for (const auto& x : it->second) fps.push_back(x.items_per_second);
        const Stats s = stats_of(fps);
        r.ours = s.median;
        r.ours_spread = s;
        r.unit = "frames/s";
        r.notes = std::to_string(res.width) + "x" + std::to_string(res.height) + " luma from " + source +
                  ", " + std::to_string(kSequenceFrames) +
                  " frames cycled (they stay in L3), Google Benchmark, " + std::to_string(reps) +
                  " repetitions: the cache-warm control of the streamed record";
        sink.add(r);
    }
    for (const auto& [name, result] : collector.results) {
        if (name.starts_with("fcc_fingerprint/")) continue;
        Record r;
        r.name = "fcc/stage " + name.substr(0, name.find("/min_time")) + ": time per frame";
        std::vector<double> us;
        for (const auto& x : result) us.push_back(x.ns_per_item / 1000.0);
        const Stats s = stats_of(us);
        r.ours = s.median;
        r.ours_spread = s;
        r.unit = "us/frame";
        r.notes = "stage of the fingerprint unit (lower is better), for the profile";
        sink.add(r);
    }
    return 0;
}

}  // namespace
}  // namespace vrex::bench

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows up in logs as it happens
    vrex::bench::Options opt;
    if (!vrex::bench::parse_options(argc, argv, opt)) return 2;
    return vrex::bench::run(opt);
}
