// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// vrex_bench_kernel: SHIE lookups per second through the kernel driver's ioctls against the HAL's
// emulated backend, in the same machine (a guest program: scripts/bench.sh runs it in the 6.12-amd64
// QEMU guest through scripts/qemu-test.sh; on a host without a vrex device it is skipped).
//
// Both backends get the same allocator, stream and table contents (frames of 16 region blocks, each
// frame's SHIE entries inserted by the device), then the same lookups: batches of 1, 16 and 256
// queries (half temporal, half similarity within radius 20, stream scope) through
// Stream::retrieve_batch, which is one DRM_IOCTL_VREX_SHIE_LOOKUP per batch on the kernel backend and
// one call into the reference model on the emulation. Rates are per CPU second of the process (user +
// system time, so the ioctl's kernel side is counted). Before timing, every query set of every batch
// size is answered by both backends and the answers must be equal field by field (hit, approximate,
// distance, frame, stream, fingerprint, region: differs()); a difference fails the run. Then rounds
// per batch size (full 9, so the median's interval reaches 95 %; quick and smoke 5), the two backends
// alternating within a round (the first one changes every round), and the ratio is the median of the
// per-round ratios with its confidence interval.
// Control for the ioctl path's fixed cost: in the same rounds, DRM_IOCTL_VERSION with empty buffers on the
// same device node (the DRM core's cheapest ioctl: the syscall, drm_ioctl's checks and copies, no vrex
// work), so the per-call cost a batch of 1 pays can be read next to the lookup rates.
//
// Output: the usual RESULT lines and, for collection from a serial log, one "@@VREX-BENCH <json>" line
// per record. --emu-only measures the emulation alone (the host smoke test); --out appends the records.
#include <fcntl.h>
#include <libdrm/drm.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "bench_options.h"
#include "bench_record.h"
#include "stats.h"
#include "vrex/hal.hpp"

namespace vrex::bench {
namespace {

constexpr std::uint32_t kRegions = 16;
constexpr double kTargetBatch256 = 0.5;
constexpr std::uint32_t kBatches[] = {1, 16, 256};

std::vector<std::uint8_t> frame_luma(std::uint32_t k) {
    // Moving gradient with a block that jumps: successive frames differ, some regions repeat.
    std::vector<std::uint8_t> y(128 * 96);
    for (std::uint32_t r = 0; r < 96; r++)
        for (std::uint32_t c = 0; c < 128; c++)
            y[r * 128 + c] =
                static_cast<std::uint8_t>(c * 2 + r + k * 3 + (((c + k * 5) / 16 + r / 24) % 3) * 40);
    return y;
}

struct Setup {
    std::shared_ptr<KvAllocator> alloc;
    std::unique_ptr<Stream> stream;
    std::vector<Fingerprint> fps;
};

// Opens @choice and fills one stream with @frames frames; an empty string on success.
std::string prepare(BackendChoice choice, std::uint32_t frames, Setup& s) {
    DeviceOptions o;
    o.backend = choice;
    auto dev = Device::open(o);
    if (!dev) return "open: " + dev.error().message();
    auto alloc = KvAllocator::create(*dev, ModelGeometry{1, 1, 64, DType::fp16, 64});
    if (!alloc) return "allocator: " + alloc.error().message();
    s.alloc = *alloc;
    auto st = s.alloc->create_stream();
    if (!st) return "stream: " + st.error().message();
    s.stream = std::move(*st);
    std::vector<std::uint32_t> regions(kRegions);
    for (std::uint32_t r = 0; r < kRegions; r++) regions[r] = r;
    for (std::uint32_t k = 0; k < frames; k++) {
        std::vector<std::uint8_t> y = frame_luma(k);
        auto fr = s.stream->begin_frame({y.data(), 128, 96, 128});
        if (!fr) return "begin_frame: " + fr.error().message();
        s.fps.push_back(fr->fp);
        if (auto b = s.stream->allocate_batch(regions); !b) return "allocate: " + b.error().message();
        // Keep the last frame open so temporal offsets -3..0 hit; close the others (blocks stay live
        // while they are hot; the zombie window releases the oldest).
        if (k + 1 < frames)
            if (auto e = s.stream->end_frame(); !e) return "end_frame: " + e.error().message();
    }
    return {};
}

std::vector<Query> make_queries(const Setup& s, std::uint32_t n, std::uint32_t salt) {
    std::vector<Query> q;
    for (std::uint32_t i = 0; i < n; i++) {
        const std::uint32_t x = (i + salt) * 2654435761u;
        if ((i + salt) % 2 == 0) {  // alternate kinds across batches too (batch 1)
            q.push_back(Query::temporal(x % kRegions, -static_cast<std::int32_t>((x >> 8) % 4)));
        } else {
            Fingerprint fp = s.fps[(x >> 4) % s.fps.size()];
            fp.w[0] ^= std::uint64_t{1} << (x % 64);  // a near duplicate, as a moving camera makes
            q.push_back(Query::similar(x % kRegions, fp, 20));
        }
    }
    return q;
}

std::vector<std::vector<Query>> query_sets(const Setup& s, std::uint32_t batch) {
    std::vector<std::vector<Query>> sets;
    for (std::uint32_t k = 0; k < 8; k++) sets.push_back(make_queries(s, batch, k * batch));
    return sets;
}

// The first field in which two answers differ, or "" when they are equal. An answer is the entry found:
// hit, approximate, distance, frame, stream, fingerprint, region. Device names are not compared as numbers:
// each backend numbers its own streams (the kernel's ids are not the emulation's), so a stream must be the
// querying stream on both sides or on neither; block ids and banks are placements of the device's allocator.
std::string differs(const Retrieval& a, std::uint32_t a_stream, const Retrieval& b, std::uint32_t b_stream) {
    if (a.hit != b.hit) return "hit";
    if (!a.hit) return {};
    if (a.approximate != b.approximate) return "approximate";
    if (a.distance != b.distance) return "distance";
    if (a.frame != b.frame) return "frame";
    if ((a.stream == a_stream) != (b.stream == b_stream)) return "stream";
    if (a.fp.w[0] != b.fp.w[0] || a.fp.w[1] != b.fp.w[1]) return "fingerprint";
    if (a.block.region != b.block.region) return "region";
    return {};
}

// Every query set of @batch answered by both backends: equal answers, or an error naming the first
// difference. @checked counts the answers compared.
std::string same_answers(Setup& emu, Setup& kern, std::uint32_t batch, std::uint64_t& checked) {
    for (const auto& set : query_sets(emu, batch)) {
        auto a = emu.stream->retrieve_batch(set);
        auto b = kern.stream->retrieve_batch(set);
        if (!a || !b) return "retrieve_batch: " + (a ? b.error().message() : a.error().message());
        if (a->size() != b->size()) return "answer counts differ";
        for (size_t i = 0; i < a->size(); i++)
            if (std::string f = differs((*a)[i], emu.stream->id(), (*b)[i], kern.stream->id()); !f.empty())
                return "query " + std::to_string(i) + ": " + f + " differs";
        checked += a->size();
    }
    return {};
}

// What the lookups' popcount can use on this CPU (a TCG guest's model may lack it): the reference model
// picks its group scan kernel from the same CPUID bits (lib/shie_group_scan.c).
std::string cpu_features() {
    std::string s = std::string("popcnt ") + (__builtin_cpu_supports("popcnt") ? "yes" : "no");
    s += std::string(", avx2 ") + (__builtin_cpu_supports("avx2") ? "yes" : "no");
    s += std::string(", avx512vpopcntdq ") + (__builtin_cpu_supports("avx512vpopcntdq") ? "yes" : "no");
    return s;
}

// A file descriptor of the vrex device node (accel first, then render nodes), or -1: the node whose
// DRM_IOCTL_VERSION names the driver "vrex".
int open_vrex_node() {
    for (const char* fmt : {"/dev/accel/accel%d", "/dev/dri/renderD%d"}) {
        const int first = std::strstr(fmt, "renderD") ? 128 : 0;
        for (int i = first; i < first + 16; i++) {
            char path[64];
            std::snprintf(path, sizeof(path), fmt, i);
            const int fd = ::open(path, O_RDWR | O_CLOEXEC);
            if (fd < 0) continue;
            char name[16] = {};
            drm_version v{};
            v.name = name;
            v.name_len = sizeof(name) - 1;
            if (::ioctl(fd, DRM_IOCTL_VERSION, &v) == 0 && std::string_view(name) == "vrex") return fd;
            ::close(fd);
        }
    }
    return -1;
}

// Null ioctls (DRM_IOCTL_VERSION, empty buffers) per CPU second on @fd.
double null_ioctls(int fd, double min_seconds, std::string& err) {
    std::uint64_t done = 0;
    const double t0 = cpu_seconds();
    double t = t0;
    while (t - t0 < min_seconds) {
        for (int i = 0; i < 64; i++) {
            drm_version v{};
            if (::ioctl(fd, DRM_IOCTL_VERSION, &v) != 0) {
                err = std::string("DRM_IOCTL_VERSION: ") + std::strerror(errno);
                return 0.0;
            }
        }
        done += 64;
        t = cpu_seconds();
    }
    return double(done) / (t - t0);
}

// Lookups per CPU second for batches of @batch; @hits counts hits as a sanity figure.
double measure(Setup& s, std::uint32_t batch, double min_seconds, std::uint64_t& hits, std::string& err) {
    const std::vector<std::vector<Query>> sets = query_sets(s, batch);
    std::uint64_t done = 0;
    const double t0 = cpu_seconds();
    double t = t0;
    for (std::uint32_t k = 0; t - t0 < min_seconds; k++) {
        auto r = s.stream->retrieve_batch(sets[k % sets.size()]);
        if (!r || r->size() != batch) {
            err = r ? "short batch" : r.error().message();
            return 0.0;
        }
        for (const Retrieval& x : *r) hits += x.hit;
        done += batch;
        if ((k & 7) == 7) t = cpu_seconds();
    }
    return double(done) / (cpu_seconds() - t0);
}

int run(const Options& opt, bool emu_only) {
    RecordSink sink(opt.out);
    if (!sink.ok()) return 2;
    const std::uint32_t frames = opt.mode == Mode::smoke ? 4 : 32;
    const double min_seconds = opt.mode == Mode::smoke ? 0.02 : opt.mode == Mode::quick ? 0.5 : 2.0;

    Setup emu;
    if (std::string e = prepare(BackendChoice::emulated, frames, emu); !e.empty()) {
        std::fprintf(stderr, "kernel_vs_emu: emulated backend: %s\n", e.c_str());
        return 1;
    }
    Setup kern;
    if (!emu_only) {
        if (std::string e = prepare(BackendChoice::kernel, frames, kern); !e.empty()) {
            std::fprintf(stderr, "kernel_vs_emu: kernel backend: %s (no vrex device? --emu-only on a host)\n",
                         e.c_str());
            return 1;
        }
    }
    // Full: 9 rounds, the fewest whose order-statistic interval of the median reaches 95 % (bench/stats.h).
    const size_t rounds = opt.mode == Mode::full ? 9 : 5;
    for (std::uint32_t batch : kBatches) {
        std::string err;
        std::uint64_t emu_hits = 0, kern_hits = 0, checked = 0;
        if (!emu_only) err = same_answers(emu, kern, batch, checked);
        if (!err.empty()) {
            std::fprintf(stderr, "kernel_vs_emu: batch %u: the backends' answers differ: %s\n", batch,
                         err.c_str());
            return 1;
        }
        // Interleaved rounds; within a round the backend that goes first alternates.
        std::vector<double> emu_rates, kern_rates, ratios;
        for (size_t round = 0; round < rounds && err.empty(); round++) {
            double e = 0.0, k = 0.0;
            if (emu_only || round % 2 == 0) {
                e = measure(emu, batch, min_seconds / rounds, emu_hits, err);
                if (err.empty() && !emu_only) k = measure(kern, batch, min_seconds / rounds, kern_hits, err);
            } else {
                k = measure(kern, batch, min_seconds / rounds, kern_hits, err);
                if (err.empty()) e = measure(emu, batch, min_seconds / rounds, emu_hits, err);
            }
            emu_rates.push_back(e);
            if (!emu_only) {
                kern_rates.push_back(k);
                ratios.push_back(e > 0.0 ? k / e : 0.0);
            }
        }
        if (!err.empty()) {
            std::fprintf(stderr, "kernel_vs_emu: batch %u: %s\n", batch, err.c_str());
            return 1;
        }
        if (emu_hits == 0 || (!emu_only && kern_hits == 0)) {
            std::fprintf(stderr, "kernel_vs_emu: batch %u: no lookup hit (table not filled?)\n", batch);
            return 1;
        }
        Record r;
        r.unit = "lookups/s";
        r.notes = std::to_string(frames) +
                  " frames x 16 regions in the table, half temporal / half similarity "
                  "(radius 20) queries, Stream::retrieve_batch, one core, CPU time (user + system), " +
                  std::to_string(rounds) + " interleaved rounds" +
                  (emu_only ? std::string()
                            : ", answers of both backends equal on " + std::to_string(checked) + " lookups") +
                  "; CPU: " + cpu_features();
        const Stats es = stats_of(emu_rates);
        if (emu_only) {
            r.name = "kernel/batch=" + std::to_string(batch) + ": emulated backend (host, no device)";
            r.ours = es.median;
            r.ours_spread = es;
        } else {
            const Stats ks = stats_of(kern_rates), rs = stats_of(ratios);
            const MedianCi ci = median_ci(ratios);
            r.name = "kernel/batch=" + std::to_string(batch) +
                     ": lookups via ioctl vs emulation (QEMU 6.12-amd64)";
            r.ours = ks.median;
            r.ours_spread = ks;
            r.baseline = es.median;
            r.baseline_spread = es;
            r.paired_ratio = rs.median;
            r.values = {{"ratio_ci_lo", ci.lo},
                        {"ratio_ci_hi", ci.hi},
                        {"ratio_ci_level", ci.level},
                        {"rounds", static_cast<double>(ratios.size())},
                        {"answers_compared", static_cast<double>(checked)}};
            r.tags = {{"verdict", ci.lo > 1.0 ? "faster" : ci.hi < 1.0 ? "slower" : "within noise"}};
            r.baseline_name = "HAL emulated backend in the same guest";
            if (batch == 256) r.target = kTargetBatch256;
        }
        std::printf("@@VREX-BENCH %s\n", to_json(sink.add(r)).c_str());
    }
    if (!emu_only) {
        // The control: the fixed cost of one ioctl on the same node, same number of rounds.
        const int fd = open_vrex_node();
        if (fd < 0) {
            std::fprintf(stderr, "kernel_vs_emu: no vrex device node answers DRM_IOCTL_VERSION\n");
            return 1;
        }
        std::vector<double> rates;
        std::string err;
        for (size_t round = 0; round < rounds && err.empty(); round++)
            rates.push_back(null_ioctls(fd, min_seconds / rounds, err));
        ::close(fd);
        if (!err.empty()) {
            std::fprintf(stderr, "kernel_vs_emu: null ioctl: %s\n", err.c_str());
            return 1;
        }
        Record r;
        r.name = "kernel/null ioctl: DRM_IOCTL_VERSION calls/s (QEMU 6.12-amd64, control)";
        const Stats s = stats_of(rates);
        r.ours = s.median;
        r.ours_spread = s;
        r.unit = "calls/s";
        r.notes =
            "the ioctl path's fixed cost per call (syscall, drm_ioctl's checks and copies, no vrex work) "
            "on the device node the kernel backend uses; one core, CPU time (user + system), " +
            std::to_string(rounds) + " rounds";
        r.tags = {{"kind", "control"}};
        std::printf("@@VREX-BENCH %s\n", to_json(sink.add(r)).c_str());
    }
    return 0;
}

}  // namespace
}  // namespace vrex::bench

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    std::vector<char*> args;
    bool emu_only = false;
    for (int i = 0; i < argc; i++) {
        if (std::string_view(argv[i]) == "--emu-only")
            emu_only = true;
        else
            args.push_back(argv[i]);
    }
    vrex::bench::Options opt;
    if (!vrex::bench::parse_options(static_cast<int>(args.size()), args.data(), opt)) return 2;
    return vrex::bench::run(opt, emu_only);
}
