// Soak over the HAL engine API: S streams on S threads, in lockstep, each with synthetic luma and its
// own scene changes, run for many frames. Per frame and stream: fingerprint (begin_frame), one
// batch of 16 similarity lookups (one per region), reuse of every block found and a new block for
// every region missed, end_frame (zombie release).
//
// Stream 0 alternates between quiet windows (a scene cut every --scene-len frames, like the others)
// and noisy windows (a cut every 4 frames); the others never change their schedule, so their hit
// rate in noisy windows against quiet ones shows how much one stream's scene cuts disturb the rest.
//
// Checks: no call fails; resident blocks stay within streams x 16 x (zombie_frames + 2); anonymous
// RSS (RssAnon, /proc/self/status) does not grow after warm-up; the others' hit rate moves by < 3 % between window
// kinds; after the streams are gone the allocator holds no block and the device no live block or
// SHIE entry. Prints the RSS / resident curve, then "soak: N passed, M failed".
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "vrex/hal.hpp"

namespace {

using vrex::Scope;

constexpr std::uint32_t kRegions = 16;
constexpr std::uint32_t kRadius = 20;

struct Options {
    std::uint64_t frames = 8000;  // total over all streams
    std::uint32_t streams = 4;
    std::uint32_t width = 128;
    std::uint32_t height = 96;
    std::uint32_t scene_len = 100;
    std::uint32_t window = 200;
    std::uint32_t samples = 20;
    vrex::BackendChoice backend = vrex::BackendChoice::automatic;
    bool require_kernel = false;
};

// Scene @scene, moving by @t: a blocky texture unique to the scene plus a square that moves.
void paint(std::vector<std::uint8_t>& px, std::uint32_t w, std::uint32_t h, std::uint32_t scene,
           std::uint32_t t) {
    const std::uint32_t s = scene * 2654435761u + 12345u;
    const std::uint32_t cx = (w / 4 + t * 2) % w, cy = h / 3;
    for (std::uint32_t y = 0; y < h; y++) {
        for (std::uint32_t x = 0; x < w; x++) {
            std::uint32_t v = ((x / 16) * 73856093u) ^ ((y / 16) * 19349663u) ^ s;
            v = (v ^ (v >> 13)) * 0x5bd1e995u;
            std::uint8_t p = static_cast<std::uint8_t>((v >> 24) / 2 + (scene % 4) * 30);
            if (x >= cx && x < cx + w / 6 && y >= cy && y < cy + h / 6) p = 250;
            px[std::size_t{y} * w + x] = p;
        }
    }
}

// Anonymous resident memory (RssAnon in /proc/self/status): the process's own heap, where a leak
// would show. Device memory is mapped into the process too (memfd banks on the emulation, DRM BO
// mappings on the kernel) and rises and falls with the live KV set now that empty slabs are
// released; it is bounded by the resident-blocks check instead.
std::uint64_t rss_bytes() {
    std::FILE* f = std::fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    unsigned long kib = 0;
    while (std::fgets(line, sizeof(line), f))
        if (std::sscanf(line, "RssAnon: %lu kB", &kib) == 1) break;
    std::fclose(f);
    return static_cast<std::uint64_t>(kib) * 1024;
}

struct Sample {
    std::uint32_t frame;
    std::uint64_t rss;
    std::uint64_t resident_blocks;
    std::uint64_t live_entries;
};

struct StreamResult {
    // [0]: quiet windows of stream 0, [1]: noisy ones
    std::uint64_t lookups[2] = {0, 0};
    std::uint64_t hits[2] = {0, 0};
    std::uint64_t frames = 0;
    std::string error;
};

class Cases {
  public:
    void check(bool ok, const std::string& what) {
        std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
        std::fflush(stdout);
        (ok ? pass_ : fail_)++;
    }
    int finish() const {
        std::printf("soak: %d passed, %d failed\n", pass_, fail_);
        return fail_ ? 1 : 0;
    }

  private:
    int pass_ = 0, fail_ = 0;
};

std::uint32_t scene_of(const Options& o, std::uint32_t stream, std::uint32_t frame) {
    // Scene ids never repeat across streams or cuts: every cut is a genuinely new scene.
    if (stream == 0 && (frame / o.window) % 2 == 1) return 1'000'000u + frame / 4;
    return stream * 100'000u + (frame + stream * (o.scene_len / 4)) / o.scene_len;
}

// One stream's frame: fingerprint, look every region up, reuse or allocate, end the frame.
std::string run_frame(vrex::Stream& st, const Options& o, std::uint32_t stream, std::uint32_t frame,
                      std::vector<std::uint8_t>& px, StreamResult& r) {
    const std::uint32_t scene = scene_of(o, stream, frame);
    paint(px, o.width, o.height, scene, frame % 8);
    auto fi = st.begin_frame({px.data(), o.width, o.height, o.width});
    if (!fi) return "begin_frame: " + fi.error().message();
    std::vector<vrex::Query> qs;
    qs.reserve(kRegions);
    for (std::uint32_t reg = 0; reg < kRegions; reg++)
        qs.push_back(vrex::Query::similar(reg, fi->fp, kRadius, Scope::stream, true));
    auto found = st.retrieve_batch(qs);
    if (!found) return "retrieve_batch: " + found.error().message();
    const int kind = stream != 0 && (frame / o.window) % 2 == 1 ? 1 : 0;
    std::vector<std::uint32_t> missing;
    for (std::uint32_t reg = 0; reg < kRegions; reg++) {
        const auto& hit = (*found)[reg];
        r.lookups[kind]++;
        if (hit.hit) {
            r.hits[kind]++;
            if (auto u = st.reuse(reg, hit.block); !u) return "reuse: " + u.error().message();
        } else {
            missing.push_back(reg);
        }
    }
    if (!missing.empty()) {
        auto blocks = st.allocate_batch(missing);
        if (!blocks) return "allocate_batch: " + blocks.error().message();
        for (auto& b : *blocks) b.data[0] = static_cast<std::byte>(frame);  // an engine writes its KV here
    }
    if (auto e = st.end_frame(); !e) return "end_frame: " + e.error().message();
    r.frames++;
    return {};
}

bool parse(int argc, char** argv, Options& o) {
    for (int i = 1; i < argc; i++) {
        std::string_view a = argv[i];
        auto val = [&](std::string_view key) -> const char* {
            if (a.substr(0, key.size()) == key && a.size() > key.size() && a[key.size()] == '=')
                return argv[i] + key.size() + 1;
            return nullptr;
        };
        if (const char* v = val("--frames"))
            o.frames = std::strtoull(v, nullptr, 0);
        else if (const char* v = val("--streams"))
            o.streams = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 0));
        else if (const char* v = val("--scene-len"))
            o.scene_len = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 0));
        else if (const char* v = val("--window"))
            o.window = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 0));
        else if (const char* v = val("--samples"))
            o.samples = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 0));
        else if (const char* v = val("--backend")) {
            auto c = vrex::parse_backend_choice(v);
            if (!c) return false;
            o.backend = *c;
        } else if (a == "--require-backend=kernel") {
            o.require_kernel = true;
            o.backend = vrex::BackendChoice::kernel;
        } else {
            return false;
        }
    }
    return o.streams >= 2 && o.streams <= 16 && o.scene_len >= 8 && o.window >= 2 * o.scene_len &&
           o.frames >= std::uint64_t{o.streams} * 2 * o.window && o.samples >= 2;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    if (!parse(argc, argv, o)) {
        std::fprintf(stderr,
                     "usage: vrex_soak [--frames=N] [--streams=S] [--scene-len=L] [--window=W] "
                     "[--samples=K] [--backend=auto|emulated|kernel] [--require-backend=kernel]\n"
                     "       (W >= 2L, N >= S x 2W)\nsoak: 0 passed, 1 failed\n");
        return 2;
    }
    Cases cases;
    vrex::DeviceOptions dopt;
    dopt.backend = o.backend;
    auto dev = vrex::Device::open(dopt);
    if (!dev) {
        std::printf("no device: %s\n", dev.error().message().c_str());
        cases.check(false, "device opens");
        return cases.finish();
    }
    std::printf("soak: backend %s, %u streams, %" PRIu64
                " frames, %ux%u luma, scene every %u, "
                "window %u\n",
                std::string((*dev)->backend_name()).c_str(), o.streams, o.frames, o.width, o.height,
                o.scene_len, o.window);
    const std::uint32_t zombie = (*dev)->info().zombie_frames;
    vrex::ModelGeometry geom{
        .layers = 2, .kv_heads = 2, .head_dim = 64, .dtype = vrex::DType::fp16, .tokens_per_block = 32};
    auto alloc = vrex::KvAllocator::create(*dev, geom);
    if (!alloc) {
        cases.check(false, "allocator: " + alloc.error().message());
        return cases.finish();
    }

    std::vector<std::unique_ptr<vrex::Stream>> streams;
    for (std::uint32_t s = 0; s < o.streams; s++) {
        auto st = (*alloc)->create_stream();
        if (!st) {
            cases.check(false, "create_stream: " + st.error().message());
            return cases.finish();
        }
        streams.push_back(std::move(*st));
    }

    const std::uint32_t per_stream = static_cast<std::uint32_t>(o.frames / o.streams);
    const std::uint32_t every = std::max<std::uint32_t>(1, per_stream / o.samples);
    std::vector<StreamResult> results(o.streams);
    std::vector<Sample> samples;
    std::atomic<bool> failed{false};
    std::barrier sync(static_cast<std::ptrdiff_t>(o.streams));
    const auto t0 = std::chrono::steady_clock::now();

    auto body = [&](std::uint32_t s) {
        std::vector<std::uint8_t> px(std::size_t{o.width} * o.height);
        for (std::uint32_t f = 0; f < per_stream; f++) {
            if (!failed.load(std::memory_order_relaxed)) {
                std::string err = run_frame(*streams[s], o, s, f, px, results[s]);
                if (!err.empty()) {
                    results[s].error =
                        "stream " + std::to_string(s) + " frame " + std::to_string(f) + ": " + err;
                    failed = true;
                }
            }
            // Lockstep: frame f of every stream is done before any stream starts f + 1.
            sync.arrive_and_wait();
            if (s == 0 && (f % every == 0 || f + 1 == per_stream)) {
                auto st = (*alloc)->stats();
                samples.push_back(
                    {f, rss_bytes(), st ? st->resident_blocks : ~0ull, st ? st->device.live_entries : ~0ull});
            }
            sync.arrive_and_wait();
        }
    };
    std::vector<std::jthread> threads;
    for (std::uint32_t s = 0; s < o.streams; s++) threads.emplace_back(body, s);
    threads.clear();  // joins
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    std::uint64_t done = 0;
    std::string first_error;
    for (auto& r : results) {
        done += r.frames;
        if (first_error.empty()) first_error = r.error;
    }
    std::printf("soak: %" PRIu64 " frames in %.1f s (%.0f frames/s)\n", done, secs, done / secs);
    cases.check(first_error.empty() && done == std::uint64_t{per_stream} * o.streams,
                "every frame processed without an error" +
                    (first_error.empty() ? std::string() : " (" + first_error + ")"));

    // The curve: frame, RSS, resident blocks, live SHIE entries.
    std::printf("soak: curve (frame per stream, anonymous RSS KiB, resident blocks, live SHIE entries)\n");
    std::uint64_t max_resident = 0;
    for (const auto& smp : samples) {
        std::printf("soak:   %7u %9" PRIu64 " %7" PRIu64 " %7" PRIu64 "\n", smp.frame, smp.rss / 1024,
                    smp.resident_blocks, smp.live_entries);
        max_resident = std::max(max_resident, smp.resident_blocks);
    }
    const std::uint64_t bound = std::uint64_t{o.streams} * kRegions * (zombie + 2);
    cases.check(max_resident <= bound, "resident blocks bounded: max " + std::to_string(max_resident) +
                                           " <= " + std::to_string(bound) +
                                           " (streams x 16 x (zombie_frames + 2))");

    // RSS: after warm-up, growth must stay within max(1 MiB, 2 %). Warm-up is one full quiet + noisy
    // cycle of stream 0 (2 x window frames: the allocator reaches its peak slab count in the first noisy
    // window) and at least 20 % of the run.
    std::size_t warm = samples.size() / 5;
    while (warm < samples.size() && samples[warm].frame < 2 * o.window) warm++;
#if defined(__SANITIZE_ADDRESS__)
    // ASan's quarantine holds freed memory back on purpose, so RSS grows with every free: flatness is
    // checked by the uninstrumented runs (soak_short in make unit, scripts/soak.sh).
    constexpr bool kRssMeaningful = false;
#else
    constexpr bool kRssMeaningful = true;
#endif
    if (!kRssMeaningful) {
        std::printf("soak: RSS flatness not checked under AddressSanitizer (quarantine)\n");
    } else if (samples.size() >= 3 && warm + 2 <= samples.size()) {
        std::uint64_t lo = ~0ull, hi = 0;
        for (std::size_t i = warm; i < samples.size(); i++) {
            lo = std::min(lo, samples[i].rss);
            hi = std::max(hi, samples[i].rss);
        }
        const std::uint64_t growth =
            samples.back().rss > samples[warm].rss ? samples.back().rss - samples[warm].rss : 0;
        const std::uint64_t allowed = std::max<std::uint64_t>(1 << 20, samples[warm].rss / 50);
        std::printf("soak: RSS after warm-up %" PRIu64 " KiB, min %" PRIu64 " max %" PRIu64 " last %" PRIu64
                    " KiB (growth %" PRIu64 " KiB, allowed %" PRIu64 ")\n",
                    samples[warm].rss / 1024, lo / 1024, hi / 1024, samples.back().rss / 1024, growth / 1024,
                    allowed / 1024);
        cases.check(growth <= allowed && hi - lo <= 2 * allowed, "RSS flat after warm-up");
    } else {
        cases.check(false, "RSS flat after warm-up (too few samples)");
    }

    // Isolation: the other streams' hit rate in stream 0's noisy windows against its quiet ones.
    std::uint64_t l[2] = {0, 0}, h[2] = {0, 0};
    for (std::uint32_t s = 1; s < o.streams; s++) {
        for (int k = 0; k < 2; k++) {
            l[k] += results[s].lookups[k];
            h[k] += results[s].hits[k];
        }
    }
    const double quiet = l[0] ? double(h[0]) / double(l[0]) : 0.0;
    const double noisy = l[1] ? double(h[1]) / double(l[1]) : 0.0;
    const double rel = quiet > 0 ? std::fabs(noisy - quiet) / quiet : 1.0;
    const double s0_quiet =
        results[0].lookups[0] ? double(results[0].hits[0]) / double(results[0].lookups[0]) : 0;
    std::printf(
        "soak: stream 0 hit rate %.4f (its scene cuts every 4 frames in odd windows); others: "
        "quiet windows %.4f, noisy windows %.4f, change %.2f %%\n",
        s0_quiet, quiet, noisy, rel * 100.0);
    cases.check(quiet > 0.5 && rel < 0.03, "one stream's scene cuts change the others' hit rate by < 3 %");

    streams.clear();
    auto end = (*alloc)->stats();
    if (end) {
        std::printf("soak: after the streams are gone: resident blocks %" PRIu64
                    ", device live blocks %" PRIu64 ", live SHIE entries %" PRIu64 "\n",
                    end->resident_blocks, std::uint64_t{end->device.live_blocks},
                    std::uint64_t{end->device.live_entries});
        cases.check(end->resident_blocks == 0 && end->device.live_blocks == 0,
                    "zero leaked blocks at the end");
        cases.check(end->device.live_entries == 0, "zero leaked SHIE entries at the end");
    } else {
        cases.check(false, "stats at the end: " + end.error().message());
    }
    return cases.finish();
}
