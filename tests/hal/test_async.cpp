// AsyncDevice on every available backend: frame completions arrive through the backend's event fd
// on the io_context, retrievals complete with their items, failures and shutdown complete the
// handler with the error. The multi-threaded cases run under TSan (label "concurrency").
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "device_impl.hpp"
#include "backends.hpp"
#include "emulated_backend.hpp"
#include "frames.hpp"
#include "async_device_impl.hpp"
#include "vrex/async.hpp"

namespace vrex {
namespace {

namespace asio = boost::asio;

class Async : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override
    {
        auto be = test::open_backend(GetParam());
        ASSERT_NE(be, nullptr);
        auto dev = adopt_backend(std::move(be));
        ASSERT_TRUE(dev);
        dev_ = *dev;
        auto a = AsyncDevice::create(dev_, io_);
        ASSERT_TRUE(a);
        async_ = std::move(*a);
    }

    Backend& be() { return backend_of(*dev_); }

    std::uint32_t stream()
    {
        drm_vrex_stream_create a{};
        EXPECT_FALSE(be().stream_create(a));
        return a.stream;
    }
    // A staging BO holding synthetic frame (scene, t); returns the submit request for it.
    drm_vrex_frame_submit staged(std::uint32_t s, std::uint32_t scene, std::uint32_t t)
    {
        drm_vrex_bo_create bo{};
        bo.size = 160 * 120;
        bo.bank_mask = 1;
        bo.flags = DRM_VREX_BO_STAGING;
        EXPECT_FALSE(be().bo_create(bo));
        auto px = test::synthetic_frame(160, 120, scene, t);
        auto map = be().bo_map(bo.handle);
        EXPECT_TRUE(map);
        if (map)
            std::memcpy(map->data(), px.data(), px.size());
        drm_vrex_frame_submit f{};
        f.stream = s;
        f.handle = bo.handle;
        f.width = f.stride = 160;
        f.height = 120;
        return f;
    }
    // Runs the io_context until @done or 10 s.
    template <class Pred>
    void run_until(Pred done)
    {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!done() && std::chrono::steady_clock::now() < deadline) {
            io_.restart();
            io_.run_for(std::chrono::milliseconds(20));
        }
    }

    asio::io_context io_;
    std::shared_ptr<Device> dev_;
    std::unique_ptr<AsyncDevice> async_;
};

TEST_P(Async, FrameCompletesFromTheEventWithTheIoctlResults)
{
    const std::uint32_t s = stream();
    drm_vrex_frame_submit f = staged(s, 3, 0);
    f.user_data = 0x1234;
    int calls = 0;
    std::error_code got_ec = std::make_error_code(std::errc::timed_out);
    FrameCompletion got;
    raw::async_begin_frame(*async_, f, [&](std::error_code ec, FrameCompletion c) {
        calls++;
        got_ec = ec;
        got = c;
    });
    EXPECT_EQ(calls, 0) << "never completes inline";
    run_until([&] { return calls > 0; });
    ASSERT_EQ(calls, 1);
    ASSERT_FALSE(got_ec) << got_ec.message();
    EXPECT_EQ(got.submit.user_data, 0x1234u) << "caller's user_data handed back";
    EXPECT_EQ(got.event.user_data, 0x1234u);
    EXPECT_EQ(got.event.base.type, DRM_VREX_EVENT_FRAME_DONE);
    EXPECT_EQ(got.event.fp[0], got.submit.fp[0]);
    EXPECT_EQ(got.event.fp[1], got.submit.fp[1]);
    EXPECT_EQ(got.event.frame, got.submit.frame);
    EXPECT_EQ(got.event.group, got.submit.group);
    EXPECT_EQ(got.event.stream, s);
    EXPECT_TRUE(got.submit.fp[0] || got.submit.fp[1]);

    // The same plane submitted synchronously on a fresh stream gives the same fingerprint.
    const std::uint32_t s2 = stream();
    drm_vrex_frame_submit g = staged(s2, 3, 0);
    ASSERT_FALSE(be().frame_submit(g));
    EXPECT_EQ(g.fp[0], got.submit.fp[0]);
    EXPECT_EQ(g.fp[1], got.submit.fp[1]);
    EXPECT_EQ(async_->pending_frames(), 0u);
}

TEST_P(Async, FailedSubmitCompletesWithTheErrno)
{
    const std::uint32_t s = stream();
    drm_vrex_frame_submit f = staged(s, 1, 0);
    f.width = 8;  // below fcc_min_dim
    std::error_code got;
    int calls = 0;
    raw::async_begin_frame(*async_, f, [&](std::error_code ec, FrameCompletion) {
        calls++;
        got = ec;
    });
    run_until([&] { return calls > 0; });
    ASSERT_EQ(calls, 1);
    EXPECT_EQ(got, std::make_error_code(std::errc::invalid_argument));
    EXPECT_EQ(async_->pending_frames(), 0u);
}

TEST_P(Async, FutureTokenDeliversTheCompletion)
{
    const std::uint32_t s = stream();
    auto fut = raw::async_begin_frame(*async_, staged(s, 2, 0), asio::use_future);
    std::thread runner([this] { io_.run_for(std::chrono::seconds(10)); });
    ASSERT_EQ(fut.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    auto [ec, c] = fut.get();
    runner.join();
    EXPECT_FALSE(ec);
    EXPECT_EQ(c.event.frame, c.submit.frame);
}

TEST_P(Async, RetrieveBatchCompletesWithTheItems)
{
    const std::uint32_t s = stream();
    drm_vrex_frame_submit f = staged(s, 4, 0);
    ASSERT_FALSE(be().frame_submit(f));
    drm_vrex_bo_create kv{};
    kv.size = 16384;
    kv.bank_mask = 2;
    ASSERT_FALSE(be().bo_create(kv));
    drm_vrex_shie_insert_item it{};
    it.fp[0] = f.fp[0];
    it.fp[1] = f.fp[1];
    it.handle = kv.handle;
    it.length = 16384;
    it.region = 7;
    ASSERT_FALSE(be().shie_insert(s, std::span(&it, 1)));
    ASSERT_EQ(it.result, 0);

    std::vector<drm_vrex_shie_lookup_item> q(2);
    q[0].kind = DRM_VREX_LOOKUP_TEMPORAL;
    q[0].region = 7;
    q[1].kind = DRM_VREX_LOOKUP_SIMILAR;
    q[1].region = 8;
    q[1].fp[0] = f.fp[0];
    q[1].fp[1] = f.fp[1];
    q[1].radius = 20;
    int calls = 0;
    std::error_code got_ec = std::make_error_code(std::errc::timed_out);
    std::vector<drm_vrex_shie_lookup_item> got;
    raw::async_retrieve(*async_, s, q, [&](std::error_code ec, std::vector<drm_vrex_shie_lookup_item> items) {
        calls++;
        got_ec = ec;
        got = std::move(items);
    });
    run_until([&] { return calls > 0; });
    ASSERT_EQ(calls, 1);
    ASSERT_FALSE(got_ec);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].hit_flags, DRM_VREX_HIT);
    EXPECT_EQ(got[0].block, it.block);
    EXPECT_EQ(got[0].handle, kv.handle);
    EXPECT_EQ(got[1].hit_flags, 0u) << "nothing in region 8";

    q[0].radius = 3;  // invalid on a temporal lookup
    calls = 0;
    raw::async_retrieve(*async_, s, q, [&](std::error_code ec, std::vector<drm_vrex_shie_lookup_item>) {
        calls++;
        got_ec = ec;
    });
    run_until([&] { return calls > 0; });
    EXPECT_EQ(got_ec, std::make_error_code(std::errc::invalid_argument));
}

TEST_P(Async, DestroyingCancelsPendingFrames)
{
    const std::uint32_t s = stream();
    std::error_code got;
    int calls = 0;
    raw::async_begin_frame(*async_, staged(s, 5, 0), [&](std::error_code ec, FrameCompletion) {
        calls++;
        got = ec;
    });
    EXPECT_EQ(async_->pending_frames(), 1u) << "the event is not read before the io_context runs";
    async_.reset();
    run_until([&] { return calls > 0; });
    ASSERT_EQ(calls, 1);
    EXPECT_EQ(got, std::make_error_code(std::errc::operation_canceled));
}

// Four submitting threads (one stream each) and two threads running the io_context.
TEST_P(Async, ConcurrentSubmittersAllCompleteInStreamOrder)
{
    constexpr int kThreads = 4, kFrames = 12;
    std::vector<drm_vrex_frame_submit> base;
    for (int t = 0; t < kThreads; t++)
        base.push_back(staged(stream(), 10 + t, 0));

    std::mutex mu;
    std::map<std::uint32_t, std::vector<std::uint32_t>> frames_by_stream;
    std::set<std::uint64_t> user_data;
    int errors = 0;
    auto work = asio::make_work_guard(io_);
    std::vector<std::thread> runners;
    for (int i = 0; i < 2; i++)
        runners.emplace_back([this] { io_.run(); });
    std::vector<std::thread> submitters;
    for (int t = 0; t < kThreads; t++) {
        submitters.emplace_back([&, t] {
            for (int i = 0; i < kFrames; i++) {
                drm_vrex_frame_submit f = base[static_cast<std::size_t>(t)];
                f.user_data = static_cast<std::uint64_t>(t) << 32 | static_cast<std::uint64_t>(i);
                raw::async_begin_frame(*async_, f, [&](std::error_code ec, FrameCompletion c) {
                    std::lock_guard lock(mu);
                    if (ec || c.event.user_data != c.submit.user_data || c.event.frame != c.submit.frame)
                        errors++;
                    frames_by_stream[c.event.stream].push_back(c.event.frame);
                    user_data.insert(c.submit.user_data);
                });
            }
        });
    }
    for (auto& th : submitters)
        th.join();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
        {
            std::lock_guard lock(mu);
            if (user_data.size() == std::size_t{kThreads * kFrames} ||
                std::chrono::steady_clock::now() > deadline)
                break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    work.reset();
    io_.stop();
    for (auto& th : runners)
        th.join();
    std::lock_guard lock(mu);
    EXPECT_EQ(errors, 0);
    EXPECT_EQ(user_data.size(), std::size_t{kThreads * kFrames}) << "every submission completed once";
    ASSERT_EQ(frames_by_stream.size(), std::size_t{kThreads});
    for (auto& [s, frames] : frames_by_stream) {
        std::sort(frames.begin(), frames.end());
        ASSERT_EQ(frames.size(), std::size_t{kFrames});
        for (int i = 1; i < kFrames; i++)
            EXPECT_EQ(frames[static_cast<std::size_t>(i)], frames[0] + static_cast<std::uint32_t>(i))
                << "stream " << s;
    }
    EXPECT_EQ(async_->pending_frames(), 0u);
}

TEST(AsyncEmulated, DeviceLossFailsTheSubmission)
{
    auto be = EmulatedBackend::open(BackendOptions{});
    ASSERT_TRUE(be);
    EmulatedBackend& emu = **be;
    auto dev = adopt_backend(std::unique_ptr<Backend>(std::move(*be)));
    ASSERT_TRUE(dev);
    asio::io_context io;
    auto a = AsyncDevice::create(*dev, io);
    ASSERT_TRUE(a);
    drm_vrex_stream_create sc{};
    ASSERT_FALSE(emu.stream_create(sc));
    emu.simulate_device_loss();
    drm_vrex_frame_submit f{};
    f.stream = sc.stream;
    std::error_code got;
    raw::async_begin_frame(**a, f, [&](std::error_code ec, FrameCompletion) { got = ec; });
    io.run_for(std::chrono::seconds(2));
    EXPECT_EQ(got, errc::device_lost);
}

INSTANTIATE_TEST_SUITE_P(Backends, Async, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex
