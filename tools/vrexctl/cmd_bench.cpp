// vrexctl bench: quick FCC, allocation and lookup figures on the chosen backend (synthetic frames).
#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "synthetic.hpp"

namespace vrexctl {
namespace {

struct BenchArgs {
    std::uint32_t frames = 100;
    std::uint32_t width = 1920;
    std::uint32_t height = 1080;
};

using Clock = std::chrono::steady_clock;
double seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

template <class R>
void check(const R& r, const char* what) {
    if (!r) fail(what, r.error());
}

void bench(const GlobalOptions& g, const BenchArgs& a) {
    auto dev = open_device(g);
    const vrex::ModelGeometry geom{1, 1, 64, vrex::DType::fp16, 64};  // 16 KiB blocks
    auto alloc = vrex::KvAllocator::create(dev, geom);
    check(alloc, "allocator");
    auto stream = (*alloc)->create_stream();
    check(stream, "stream");
    vrex::Stream& s = **stream;

    // Eight distinct frames cycled so the FCC sees motion and scene changes, as in video.
    std::vector<std::vector<std::uint8_t>> frames;
    for (std::uint32_t k = 0; k < 8; k++) frames.push_back(synthetic_luma(a.width, a.height, k, k / 4));
    std::vector<std::uint32_t> regions(16);
    for (std::uint32_t r = 0; r < 16; r++) regions[r] = r;

    Clock::duration fcc{}, alloc_t{}, lookup_t{}, retire_t{};
    std::uint64_t blocks = 0, lookups = 0;
    for (std::uint32_t f = 0; f < a.frames; f++) {
        const auto& px = frames[f % frames.size()];
        auto t = Clock::now();
        auto fi = s.begin_frame({px.data(), a.width, a.height, a.width});
        fcc += Clock::now() - t;
        check(fi, "begin_frame");
        std::vector<vrex::Query> q;
        for (std::uint32_t r = 0; r < 16; r++) {
            q.push_back(vrex::Query::similar(r, fi->fp, 20, vrex::Scope::stream, true));
            q.push_back(vrex::Query::temporal(r, -1));
        }
        t = Clock::now();
        auto res = s.retrieve_batch(q);
        lookup_t += Clock::now() - t;
        check(res, "retrieve_batch");
        lookups += q.size();
        t = Clock::now();
        auto b = s.allocate_batch(regions);
        alloc_t += Clock::now() - t;
        check(b, "allocate_batch");
        blocks += b->size();
        t = Clock::now();
        auto e = s.end_frame();
        retire_t += Clock::now() - t;
        check(e, "end_frame");
    }
    const double fps = a.frames / seconds(fcc);
    const double px_scale = (static_cast<double>(a.width) * a.height) / (1920.0 * 1080.0);
    const nlohmann::json j = {
        {"backend", dev->backend_name()},
        {"frames", a.frames},
        {"width", a.width},
        {"height", a.height},
        {"fcc_frames_per_s", fps},
        {"fcc_1080p_equiv_frames_per_s", fps * px_scale},
        {"fcc_us_per_frame", 1e6 * seconds(fcc) / a.frames},
        {"alloc_blocks_per_s", blocks / seconds(alloc_t)},
        {"alloc_us_per_block", 1e6 * seconds(alloc_t) / static_cast<double>(blocks)},
        {"lookups_per_s", lookups / seconds(lookup_t)},
        {"lookup_us", 1e6 * seconds(lookup_t) / static_cast<double>(lookups)},
        {"end_frame_us", 1e6 * seconds(retire_t) / a.frames},
    };
    if (g.json) {
        print_json(j);
        return;
    }
    fmt::print("backend      {}\n", dev->backend_name());
    fmt::print(
        "FCC          {:.0f} frames/s at {}x{} ({:.0f} us/frame, staging copy included; {:.0f} frames/s "
        "1080p equiv.)\n",
        fps, a.width, a.height, j["fcc_us_per_frame"].get<double>(),
        j["fcc_1080p_equiv_frames_per_s"].get<double>());
    fmt::print("allocate     {:.0f} blocks/s ({:.2f} us/block, batches of 16)\n",
               j["alloc_blocks_per_s"].get<double>(), j["alloc_us_per_block"].get<double>());
    fmt::print("lookup       {:.0f} lookups/s ({:.2f} us/lookup, batches of 32: similar + temporal)\n",
               j["lookups_per_s"].get<double>(), j["lookup_us"].get<double>());
    fmt::print("end_frame    {:.1f} us/frame (zombie release)\n", j["end_frame_us"].get<double>());
}

}  // namespace

void add_bench(Command app, GlobalOptions& g) {
    auto a = std::make_shared<BenchArgs>();
    Command c = app.subcommand("bench", "quick FCC / allocation / lookup figures (synthetic frames)");
    c.option("--frames", a->frames, "frames to run").show_default().range(1, 1000000);
    c.option("--width", a->width, "frame width").show_default().range(64, 8192);
    c.option("--height", a->height, "frame height").show_default().range(64, 8192);
    c.callback([&g, a] { bench(g, *a); });
}

}  // namespace vrexctl
