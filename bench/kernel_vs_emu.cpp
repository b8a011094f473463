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
// system time, so the ioctl's kernel side is counted).
//
// Output: the usual RESULT lines and, for collection from a serial log, one "@@VREX-BENCH <json>" line
// per record. --emu-only measures the emulation alone (the host smoke test); --out appends the records.
#include <time.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "bench_options.h"
#include "bench_record.h"
#include "vrex/hal.hpp"

namespace vrex::bench {
namespace {

constexpr std::uint32_t kRegions = 16;
constexpr double kTargetBatch256 = 0.5;
constexpr std::uint32_t kBatches[] = {1, 16, 256};

double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

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

// Lookups per CPU second for batches of @batch; @hits counts hits as a sanity figure.
double measure(Setup& s, std::uint32_t batch, double min_seconds, std::uint64_t& hits, std::string& err) {
    std::vector<std::vector<Query>> sets;
    for (std::uint32_t k = 0; k < 8; k++) sets.push_back(make_queries(s, batch, k * batch));
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
    for (std::uint32_t batch : kBatches) {
        std::string err;
        std::uint64_t emu_hits = 0, kern_hits = 0;
        const double emu_rate = measure(emu, batch, min_seconds, emu_hits, err);
        double kern_rate = 0.0;
        if (err.empty() && !emu_only) kern_rate = measure(kern, batch, min_seconds, kern_hits, err);
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
                  "(radius 20) queries, Stream::retrieve_batch, one core, CPU time (user + system)";
        if (emu_only) {
            r.name = "kernel/batch=" + std::to_string(batch) + ": emulated backend (host, no device)";
            r.ours = emu_rate;
        } else {
            r.name = "kernel/batch=" + std::to_string(batch) +
                     ": lookups via ioctl vs emulation (QEMU 6.12-amd64)";
            r.ours = kern_rate;
            r.baseline = emu_rate;
            r.baseline_name = "HAL emulated backend in the same guest";
            if (batch == 256) r.target = kTargetBatch256;
        }
        sink.add(r);
        std::printf("@@VREX-BENCH %s\n", to_json(r).c_str());
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
