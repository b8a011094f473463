// Engine-level async (AsyncDevice on a Stream) on every available backend: async_begin_frame()
// completes from the device's completion event with the stream inside its frame, async_retrieve()
// completes with the Retrievals of the batch, misuse and shutdown complete with the error, and
// engine loops on several threads keep the one-stream-one-thread rule (label "concurrency": TSan).
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <cstring>
#include <thread>

#include "device_impl.hpp"
#include "backends.hpp"
#include "emulated_backend.hpp"
#include "frames.hpp"
#include "vrex/async.hpp"

namespace vrex {
namespace {

namespace asio = boost::asio;

constexpr ModelGeometry kGeom{2, 2, 64, DType::fp16, 16};
constexpr std::uint32_t kW = 160, kH = 120;

LumaView view_of(const std::vector<std::uint8_t>& px) { return LumaView{px.data(), kW, kH, kW}; }

class AsyncStream : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override
    {
        auto be = test::open_backend(GetParam());
        ASSERT_NE(be, nullptr);
        auto dev = adopt_backend(std::move(be));
        ASSERT_TRUE(dev);
        dev_ = *dev;
        auto alloc = KvAllocator::create(dev_, kGeom);
        ASSERT_TRUE(alloc);
        alloc_ = *alloc;
        auto a = AsyncDevice::create(dev_, io_);
        ASSERT_TRUE(a);
        async_ = std::move(*a);
    }

    std::unique_ptr<Stream> stream()
    {
        auto s = alloc_->create_stream();
        EXPECT_TRUE(s);
        return s ? std::move(*s) : nullptr;
    }

    template <class Pred>
    void run_until(Pred done)
    {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!done() && std::chrono::steady_clock::now() < deadline) {
            io_.restart();
            io_.run_for(std::chrono::milliseconds(20));
        }
    }

    // async_begin_frame() driven to completion on this thread.
    std::pair<std::error_code, FrameInfo> begin(Stream& s, const LumaView& luma)
    {
        int calls = 0;
        std::pair<std::error_code, FrameInfo> got{std::make_error_code(std::errc::timed_out), {}};
        async_->async_begin_frame(s, luma, [&](std::error_code ec, FrameInfo f) {
            calls++;
            got = {ec, f};
        });
        EXPECT_EQ(calls, 0) << "never completes inline";
        run_until([&] { return calls > 0; });
        EXPECT_EQ(calls, 1);
        return got;
    }

    std::pair<std::error_code, std::vector<Retrieval>> retrieve(Stream& s, std::vector<Query> q)
    {
        int calls = 0;
        std::pair<std::error_code, std::vector<Retrieval>> got{std::make_error_code(std::errc::timed_out), {}};
        async_->async_retrieve(s, std::move(q), [&](std::error_code ec, std::vector<Retrieval> r) {
            calls++;
            got = {ec, std::move(r)};
        });
        EXPECT_EQ(calls, 0) << "never completes inline";
        run_until([&] { return calls > 0; });
        EXPECT_EQ(calls, 1);
        return got;
    }

    asio::io_context io_;
    std::shared_ptr<Device> dev_;
    std::shared_ptr<KvAllocator> alloc_;
    std::unique_ptr<AsyncDevice> async_;
};

TEST_P(AsyncStream, BeginFrameCompletesWithTheStreamInsideTheFrame)
{
    auto s = stream();
    const auto px = test::synthetic_frame(kW, kH, 3, 0);
    EXPECT_FALSE(s->in_frame());
    auto [ec, f] = begin(*s, view_of(px));
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_TRUE(s->in_frame()) << "inside the frame when the handler runs";
    EXPECT_EQ(s->frame().fp, f.fp);
    EXPECT_EQ(s->frame().frame, f.frame);
    EXPECT_EQ(s->frame().group, f.group);
    EXPECT_GT(f.bank_count, 0u);
    EXPECT_EQ(async_->pending_frames(), 0u);

    // The synchronous path on a fresh stream fingerprints the same plane identically.
    auto sync = stream();
    auto g = sync->begin_frame(view_of(px));
    ASSERT_TRUE(g);
    EXPECT_EQ(g->fp, f.fp);
    EXPECT_EQ(g->frame, f.frame) << "first frame of each stream";

    // The stream works on as after begin_frame(): allocate, end, next frame numbered after it.
    auto b = s->allocate(2);
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_GE(b->bank, f.bank_first);
    EXPECT_LT(b->bank, f.bank_first + f.bank_count);
    ASSERT_TRUE(s->end_frame());
    const auto px2 = test::synthetic_frame(kW, kH, 3, 1);
    auto [ec2, f2] = begin(*s, view_of(px2));
    ASSERT_FALSE(ec2) << ec2.message();
    EXPECT_EQ(f2.frame, f.frame + 1);
}

TEST_P(AsyncStream, RetrieveCompletesWithTheBlocksOfTheBatch)
{
    auto s = stream();
    const auto px = test::synthetic_frame(kW, kH, 4, 0);
    auto [ec, f] = begin(*s, view_of(px));
    ASSERT_FALSE(ec) << ec.message();
    auto b = s->allocate(7);
    ASSERT_TRUE(b) << b.error().message();
    std::memset(b->data.data(), 0x5a, b->data.size());

    auto [rec, r] = retrieve(*s, {Query::temporal(7, 0), Query::similar(7, f.fp, 0), Query::temporal(8, 0)});
    ASSERT_FALSE(rec) << rec.message();
    ASSERT_EQ(r.size(), 3u);
    EXPECT_TRUE(r[0].hit);
    EXPECT_EQ(r[0].block.id, b->id);
    EXPECT_EQ(r[0].frame, f.frame);
    ASSERT_EQ(r[0].block.data.size(), alloc_->block_bytes());
    EXPECT_EQ(r[0].block.data.data(), b->data.data()) << "the host view of the same block";
    EXPECT_EQ(r[0].block.data[100], std::byte{0x5a});
    EXPECT_TRUE(r[1].hit);
    EXPECT_FALSE(r[1].approximate);
    EXPECT_EQ(r[1].fp, f.fp);
    EXPECT_FALSE(r[2].hit) << "nothing in region 8";

    // Retrieval errors come back as from retrieve_batch(): region out of range.
    auto [bad, none] = retrieve(*s, {Query::temporal(DRM_VREX_REGIONS, 0)});
    EXPECT_EQ(bad, std::errc::invalid_argument);
    EXPECT_TRUE(none.empty());
    ASSERT_TRUE(s->end_frame());
}

TEST_P(AsyncStream, MisuseCompletesWithTheError)
{
    auto s = stream();
    const auto px = test::synthetic_frame(kW, kH, 5, 0);
    ASSERT_FALSE(begin(*s, view_of(px)).first);
    auto [busy, f] = begin(*s, view_of(px));
    EXPECT_EQ(busy, std::errc::device_or_resource_busy) << "already inside a frame";
    EXPECT_TRUE(s->in_frame());
    ASSERT_TRUE(s->end_frame());

    EXPECT_EQ(begin(*s, LumaView{}).first, std::errc::invalid_argument);
    const auto tiny = test::synthetic_frame(8, 8, 5, 0);
    EXPECT_EQ(begin(*s, LumaView{tiny.data(), 8, 8, 8}).first, std::errc::invalid_argument) << "below fcc_min_dim";
    EXPECT_FALSE(s->in_frame());
    EXPECT_EQ(async_->pending_frames(), 0u);

    // A stream of another Device (its own emulated or kernel file) is refused.
    auto other_dev = adopt_backend(test::open_backend(GetParam()));
    ASSERT_TRUE(other_dev);
    auto other_alloc = KvAllocator::create(*other_dev, kGeom);
    ASSERT_TRUE(other_alloc);
    auto foreign = (*other_alloc)->create_stream();
    ASSERT_TRUE(foreign);
    EXPECT_EQ(begin(**foreign, view_of(px)).first, std::errc::invalid_argument);
    EXPECT_EQ(retrieve(**foreign, {Query::temporal(0, 0)}).first, std::errc::invalid_argument);
    EXPECT_FALSE((*foreign)->in_frame());
}

TEST_P(AsyncStream, DestroyingTheAsyncDeviceCancelsAndLeavesTheStreamOutsideAFrame)
{
    auto s = stream();
    const auto px = test::synthetic_frame(kW, kH, 6, 0);
    std::error_code frame_ec, retrieve_ec;
    int calls = 0;
    async_->async_begin_frame(*s, view_of(px), [&](std::error_code ec, FrameInfo) {
        calls++;
        frame_ec = ec;
    });
    async_->async_retrieve(*s, {Query::temporal(0, 0)}, [&](std::error_code ec, std::vector<Retrieval>) {
        calls++;
        retrieve_ec = ec;
    });
    async_.reset();
    run_until([&] { return calls == 2; });
    ASSERT_EQ(calls, 2);
    EXPECT_EQ(frame_ec, std::errc::operation_canceled);
    EXPECT_EQ(retrieve_ec, std::errc::operation_canceled);
    EXPECT_FALSE(s->in_frame());
    auto again = s->begin_frame(view_of(px));
    EXPECT_TRUE(again) << "the stream is usable synchronously afterwards";
}

// Four engine threads, one stream each, a frame loop of async begin / allocate / async retrieve /
// end; two threads run the io_context, so completions land on other threads than the stream's.
TEST_P(AsyncStream, EngineLoopsOnFourThreads)
{
    constexpr int kThreads = 4, kFrames = 10;
    std::vector<std::unique_ptr<Stream>> streams;
    for (int t = 0; t < kThreads; t++)
        streams.push_back(stream());
    auto work = asio::make_work_guard(io_);
    std::vector<std::thread> runners;
    for (int i = 0; i < 2; i++)
        runners.emplace_back([this] { io_.run(); });

    std::vector<int> failures(kThreads, 0);
    std::vector<std::thread> engines;
    for (int t = 0; t < kThreads; t++) {
        engines.emplace_back([&, t] {
            Stream& s = *streams[static_cast<std::size_t>(t)];
            int& bad = failures[static_cast<std::size_t>(t)];
            std::uint32_t first = 0;
            for (int i = 0; i < kFrames; i++) {
                const auto px = test::synthetic_frame(kW, kH, 20 + static_cast<std::uint32_t>(t),
                                                      static_cast<std::uint32_t>(i));
                auto fut = async_->async_begin_frame(s, view_of(px), asio::use_future);
                if (fut.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
                    bad++;
                    return;
                }
                auto [ec, f] = fut.get();
                if (ec || !s.in_frame() || (i > 0 && f.frame != first + static_cast<std::uint32_t>(i))) {
                    bad++;
                    return;
                }
                if (i == 0)
                    first = f.frame;
                auto b = s.allocate(static_cast<std::uint32_t>(t));
                if (!b) {
                    bad++;
                    return;
                }
                b->data[0] = std::byte{static_cast<unsigned char>(i)};
                auto rf = async_->async_retrieve(s, {Query::temporal(static_cast<std::uint32_t>(t), 0)},
                                                 asio::use_future);
                if (rf.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
                    bad++;
                    return;
                }
                auto [rec, r] = rf.get();
                if (rec || r.size() != 1 || !r[0].hit || r[0].block.id != b->id ||
                    r[0].block.data[0] != std::byte{static_cast<unsigned char>(i)})
                    bad++;
                if (!s.end_frame())
                    bad++;
            }
        });
    }
    for (auto& th : engines)
        th.join();
    work.reset();
    io_.stop();
    for (auto& th : runners)
        th.join();
    for (int t = 0; t < kThreads; t++)
        EXPECT_EQ(failures[static_cast<std::size_t>(t)], 0) << "engine " << t;
    EXPECT_EQ(async_->pending_frames(), 0u);
}

TEST(AsyncStreamEmulated, DeviceLossCompletesWithDeviceLost)
{
    auto be = EmulatedBackend::open(BackendOptions{});
    ASSERT_TRUE(be);
    EmulatedBackend& emu = **be;
    auto dev = adopt_backend(std::unique_ptr<Backend>(std::move(*be)));
    ASSERT_TRUE(dev);
    auto alloc = KvAllocator::create(*dev, kGeom);
    ASSERT_TRUE(alloc);
    auto s = (*alloc)->create_stream();
    ASSERT_TRUE(s);
    asio::io_context io;
    auto a = AsyncDevice::create(*dev, io);
    ASSERT_TRUE(a);
    emu.simulate_device_loss();
    const auto px = test::synthetic_frame(kW, kH, 7, 0);
    std::error_code frame_ec, retrieve_ec;
    (*a)->async_begin_frame(**s, view_of(px), [&](std::error_code ec, FrameInfo) { frame_ec = ec; });
    (*a)->async_retrieve(**s, {Query::temporal(0, 0)}, [&](std::error_code ec, std::vector<Retrieval>) {
        retrieve_ec = ec;
    });
    io.run_for(std::chrono::seconds(2));
    EXPECT_EQ(frame_ec, errc::device_lost);
    EXPECT_EQ(retrieve_ec, errc::device_lost);
    EXPECT_FALSE((*s)->in_frame());
}

INSTANTIATE_TEST_SUITE_P(Backends, AsyncStream, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex
