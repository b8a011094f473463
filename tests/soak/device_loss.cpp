// Device loss in the middle of concurrent work, on the emulation: four streams on four threads
// allocate, reuse, look up and end frames while the main thread makes the device disappear
// (EmulatedBackend::simulate_device_loss, the emulated hot-unplug). From then on every HAL call of
// every thread must fail with vrex::errc::device_lost -- no other error, no crash -- while the KV
// views handed out before stay writable; tearing down streams, allocator and device afterwards is
// clean (run under ASan/UBSan and TSan by scripts/sanitize.sh: no use-after-free, no race).
// The kernel counterpart (unbind with streams and mapped blocks) runs in the QEMU guests
// (tests/hal/test_kernel_backend.cpp, tests/kernel/vrex_uapi_test.c). Ends "device_loss: N passed,
// M failed".
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device_impl.hpp"
#include "emulated_backend.hpp"
#include "vrex/hal.hpp"

namespace {

constexpr std::uint32_t kStreams = 4;
constexpr std::uint32_t kW = 128, kH = 96;
// Blocks an engine keeps views of: fewer frames than the default zombie threshold (5).
constexpr std::size_t kKeep = 4;

struct Outcome {
    std::uint64_t frames_before = 0;     // frames completed before the loss was seen
    std::uint64_t lost_errors = 0;       // calls that failed with device_lost
    std::string other_error;             // anything else that failed (must stay empty)
    std::vector<vrex::KvBlock> blocks;   // owned by the stream's thread until it is joined
    std::atomic<std::uint32_t> held{0};  // blocks allocated so far, for the main thread
};

void paint(std::vector<std::uint8_t>& px, std::uint32_t scene, std::uint32_t t) {
    for (std::uint32_t y = 0; y < kH; y++)
        for (std::uint32_t x = 0; x < kW; x++)
            px[std::size_t{y} * kW + x] = static_cast<std::uint8_t>(
                ((x / 16 + scene) * 37u) ^ ((y / 16) * 91u) ^ (x == (t % kW) ? 200u : 0u));
}

// Records @ec: device_lost counts, success is fine, anything else is a failure.
bool note(Outcome& o, std::error_code ec, const char* what) {
    if (!ec) return true;
    if (ec == vrex::errc::device_lost)
        o.lost_errors++;
    else if (o.other_error.empty())
        o.other_error = std::string(what) + ": " + ec.message();
    return false;
}

void work(vrex::Stream& st, std::uint32_t s, std::atomic<bool>& lost, std::atomic<int>& after, Outcome& o) {
    std::vector<std::uint8_t> px(std::size_t{kW} * kH);
    // Runs until the loss, then 20 more frames' worth of calls that must all fail cleanly.
    for (std::uint32_t f = 0; after.load() < 20 * static_cast<int>(kStreams); f++) {
        const bool was_lost = lost.load();
        paint(px, s * 10 + f / 50, f);
        bool ok = true;
        // An engine ends its frame first; after the loss end_frame() keeps failing, so the
        // stream stays in its frame and begin_frame() would answer EBUSY (misuse), not the loss.
        if (!st.in_frame()) ok &= note(o, st.begin_frame({px.data(), kW, kH, kW}).error(), "begin_frame");
        auto r = st.retrieve_temporal(0, -1);
        ok &= note(o, r.error(), "retrieve_temporal");
        if (r && r->hit && st.in_frame()) ok &= note(o, st.reuse(0, r->block).error(), "reuse");
        if (st.in_frame()) {
            auto b = st.allocate(1 + f % 15);
            ok &= note(o, b.error(), "allocate");
            if (b) {
                // Views are valid while their block is live (docs/hal.md): keep the blocks of the
                // last kKeep frames only, younger than the zombie threshold, so every view written
                // below is live until the loss freezes the device.
                o.blocks.push_back(*b);
                if (o.blocks.size() > kKeep) o.blocks.erase(o.blocks.begin());
                o.held.fetch_add(1);
            }
            ok &= note(o, st.end_frame().error(), "end_frame");
        }
        if (ok) o.frames_before++;
        for (auto& b : o.blocks)
            b.data[b.data.size() - 1] = static_cast<std::byte>(f);  // views outlive the loss
        if (was_lost) after++;
    }
}

int g_pass = 0, g_fail = 0;

void check(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    (ok ? g_pass : g_fail)++;
}

}  // namespace

int main() {
    vrex::BackendOptions bopt;
    auto be = vrex::EmulatedBackend::open(bopt);
    if (!be) {
        check(false, "emulated backend opens: " + be.error().message());
        std::printf("device_loss: %d passed, %d failed\n", g_pass, g_fail);
        return 1;
    }
    vrex::EmulatedBackend* emu = be->get();
    auto dev = vrex::adopt_backend(std::move(*be));
    if (!dev) {
        check(false, "device: " + dev.error().message());
        std::printf("device_loss: %d passed, %d failed\n", g_pass, g_fail);
        return 1;
    }
    vrex::ModelGeometry geom{
        .layers = 2, .kv_heads = 2, .head_dim = 64, .dtype = vrex::DType::fp16, .tokens_per_block = 32};
    auto alloc = vrex::KvAllocator::create(*dev, geom);
    if (!alloc) {
        check(false, "allocator: " + alloc.error().message());
        std::printf("device_loss: %d passed, %d failed\n", g_pass, g_fail);
        return 1;
    }
    std::vector<std::unique_ptr<vrex::Stream>> streams;
    for (std::uint32_t s = 0; s < kStreams; s++) {
        auto st = (*alloc)->create_stream();
        if (!st) {
            check(false, "create_stream: " + st.error().message());
            std::printf("device_loss: %d passed, %d failed\n", g_pass, g_fail);
            return 1;
        }
        streams.push_back(std::move(*st));
    }

    std::atomic<bool> lost{false};
    std::atomic<int> after{0};
    std::vector<Outcome> out(kStreams);
    {
        std::vector<std::jthread> threads;
        for (std::uint32_t s = 0; s < kStreams; s++)
            threads.emplace_back([&, s] { work(*streams[s], s, lost, after, out[s]); });
        // Let every stream get going, then pull the device away under them.
        for (bool started = false; !started;) {
            started = true;
            for (std::uint32_t s = 0; s < kStreams; s++) started &= out[s].held.load() >= 8;
            std::this_thread::yield();
        }
        emu->simulate_device_loss();
        lost = true;
    }

    std::uint64_t before = 0, lost_errors = 0;
    std::string other;
    for (auto& o : out) {
        before += o.frames_before;
        lost_errors += o.lost_errors;
        if (other.empty()) other = o.other_error;
    }
    std::printf("device_loss: %llu frames before the loss, %llu calls failed with device_lost\n",
                static_cast<unsigned long long>(before), static_cast<unsigned long long>(lost_errors));
    check(before >= kStreams * 8, "every stream worked before the loss");
    check(lost_errors >= kStreams * 20, "after the loss every stream's calls fail with device_lost");
    check(other.empty(),
          "no error other than device_lost" + (other.empty() ? std::string() : " (" + other + ")"));
    auto st = (*alloc)->stats();
    check(st.error() == vrex::errc::device_lost, "stats after the loss: device_lost");
    check((*alloc)->create_stream().error() == vrex::errc::device_lost,
          "create_stream after the loss: device_lost");
    // Views handed out before the loss stay writable; then everything is torn down. A fault here
    // kills the process (and ASan names any use-after-free).
    for (auto& o : out)
        for (auto& b : o.blocks) b.data[0] = std::byte{0x5a};
    streams.clear();
    alloc->reset();
    dev->reset();
    // A fresh open gets a working device.
    auto fresh = vrex::EmulatedBackend::open(bopt);
    check(fresh && (*fresh)->device_info(), "a new open after the loss gets a working device");
    std::printf("device_loss: %d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
