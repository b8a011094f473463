// Fault injection through the HAL on the kernel backend (QEMU guests, root): the driver's debugfs
// knobs make the next N BO allocations fail (fail_alloc, ENOMEM) or the next N simulated device
// commands fail (fail_cmds, EIO). Every failure must reach the engine API as a clean error code,
// leave the Stream / KvAllocator usable (the next call works, no state half-changed), and once
// everything is closed the driver's live counts (debugfs counts) must be back to zero.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "device_impl.hpp"
#include "discovery.hpp"
#include "frames.hpp"
#include "kernel_backend.hpp"
#include "test_kernel_guest.hpp"
#include "vrex/async.hpp"

namespace vrex {
namespace {

namespace fs = std::filesystem;

constexpr ModelGeometry kGeom{2, 2, 64, DType::fp16, 16};
constexpr std::uint32_t kW = 128, kH = 96;


class KernelFaults : public ::testing::Test {
protected:
    void SetUp() override
    {
        const auto nodes = discovery::find_vrex_nodes();
        if (nodes.empty())
            GTEST_SKIP() << "no vrex device on this machine (runs in the QEMU guests)";
        if (::geteuid() != 0)
            GTEST_SKIP() << "debugfs knobs need root";
        node_ = nodes.front();
        dir_ = test::debugfs_dir_of(node_);
        // The guests build vrex.ko with debugfs: a node whose directory is not found is a bug.
        ASSERT_FALSE(dir_.empty()) << "no debugfs directory whose \"dev\" names " << node_;
        if (::access((dir_ + "/fail_cmds").c_str(), W_OK) != 0)
            GTEST_SKIP() << "no fault injection knobs (CONFIG_DRM_ACCEL_VREX_FAULT_INJECTION off?)";
        ASSERT_EQ(live(), zero()) << "another open file holds device objects";

        auto be = KernelBackend::open(BackendOptions{node_});
        ASSERT_TRUE(be) << be.error().message();
        auto d = adopt_backend(std::unique_ptr<Backend>(std::move(*be)));
        ASSERT_TRUE(d);
        dev_ = *d;
        AllocatorOptions o;
        o.blocks_per_slab = 4;
        auto a = KvAllocator::create(dev_, kGeom, o);
        ASSERT_TRUE(a);
        alloc_ = *a;
    }

    void TearDown() override
    {
        if (dir_.empty())
            return;
        knob("fail_alloc", 0);
        knob("fail_cmds", 0);
    }

    bool knob(const char* name, unsigned n)
    {
        std::ofstream f(dir_ + "/" + name);
        f << n;
        f.flush();
        return static_cast<bool>(f);
    }

    using Counts = std::map<std::string, long>;
    // Every live count vrex.ko's debugfs "counts" lists (export_maps: mappings of exported buffers).
    static Counts zero()
    {
        return {{"bos", 0},      {"streams", 0},  {"blocks", 0},     {"entries", 0},
                {"hw_blocks", 0}, {"imported", 0}, {"export_maps", 0}};
    }
    Counts live() const
    {
        Counts c;
        std::ifstream f(dir_ + "/counts");
        std::string key;
        long value;
        while (f >> key >> value)
            c[key] = value;
        return c;
    }

    // Closes everything of this test: streams first, then the allocator and the device (the file).
    void close_all(std::vector<std::unique_ptr<Stream>>& streams)
    {
        streams.clear();
        alloc_.reset();
        dev_.reset();
    }

    LumaView luma(std::uint32_t scene, std::uint32_t t)
    {
        frames_.push_back(test::synthetic_frame(kW, kH, scene, t));
        return LumaView{frames_.back().data(), kW, kH, kW};
    }

    std::string node_, dir_;
    std::shared_ptr<Device> dev_;
    std::shared_ptr<KvAllocator> alloc_;
    std::vector<std::vector<std::uint8_t>> frames_;
};

TEST_F(KernelFaults, FailedAllocationsAreCleanErrorsAndNothingLeaks)
{
    const std::error_code enomem = std::make_error_code(std::errc::not_enough_memory);
    std::vector<std::unique_ptr<Stream>> streams;
    auto s = alloc_->create_stream();
    ASSERT_TRUE(s);
    streams.push_back(std::move(*s));
    Stream& st = *streams.back();

    // The staging BO of the first frame.
    ASSERT_TRUE(knob("fail_alloc", 1));
    EXPECT_EQ(st.begin_frame(luma(1, 0)).error(), enomem);
    EXPECT_FALSE(st.in_frame());
    auto f = st.begin_frame(luma(1, 0));
    ASSERT_TRUE(f) << "the next frame works: " << f.error().message();

    // The first slab of the allocator.
    ASSERT_TRUE(knob("fail_alloc", 1));
    EXPECT_EQ(st.allocate(0).error(), enomem);
    auto stats = alloc_->stats();
    ASSERT_TRUE(stats);
    EXPECT_EQ(stats->resident_blocks, 0u) << "no block accounted for the failure";
    std::vector<KvBlock> blocks;
    for (std::uint32_t r = 0; r < 4; r++) {
        auto b = st.allocate(r);
        ASSERT_TRUE(b) << b.error().message();
        blocks.push_back(*b);
    }
    // The slab is full: the next block needs a second slab.
    ASSERT_TRUE(knob("fail_alloc", 1));
    EXPECT_EQ(st.allocate(4).error(), enomem);
    stats = alloc_->stats();
    ASSERT_TRUE(stats);
    EXPECT_EQ(stats->resident_blocks, 4u);
    auto fifth = st.allocate(4);
    ASSERT_TRUE(fifth) << fifth.error().message();
    auto hit = st.retrieve_temporal(4, 0);
    ASSERT_TRUE(hit);
    EXPECT_TRUE(hit->hit);
    EXPECT_EQ(hit->block.id, fifth->id);
    EXPECT_TRUE(st.end_frame());

    EXPECT_NE(live(), zero()) << "the counts see this file's objects";
    close_all(streams);
    EXPECT_EQ(live(), zero()) << "no BO, stream, block or SHIE entry left";
}

TEST_F(KernelFaults, FailedCommandsAreCleanErrorsAndNothingLeaks)
{
    const std::error_code eio = std::make_error_code(std::errc::io_error);
    std::vector<std::unique_ptr<Stream>> streams;

    ASSERT_TRUE(knob("fail_cmds", 1));
    EXPECT_EQ(alloc_->create_stream().error(), eio) << "STREAM_OPEN failed";
    auto s = alloc_->create_stream();
    ASSERT_TRUE(s) << s.error().message();
    streams.push_back(std::move(*s));
    Stream& st = *streams.back();

    auto f0 = st.begin_frame(luma(2, 0));
    ASSERT_TRUE(f0) << f0.error().message();
    ASSERT_TRUE(st.end_frame());
    ASSERT_TRUE(knob("fail_cmds", 1));
    EXPECT_EQ(st.begin_frame(luma(2, 1)).error(), eio);
    EXPECT_FALSE(st.in_frame());
    auto f1 = st.begin_frame(luma(2, 1));
    ASSERT_TRUE(f1) << f1.error().message();
    EXPECT_EQ(f1->frame, f0->frame + 1) << "the failed frame did not count";

    ASSERT_TRUE(knob("fail_cmds", 1));
    EXPECT_EQ(st.allocate(1).error(), eio) << "the insert item's result";
    auto stats = alloc_->stats();
    ASSERT_TRUE(stats);
    EXPECT_EQ(stats->resident_blocks, 0u) << "the slot went back";
    auto b = st.allocate(1);
    ASSERT_TRUE(b) << b.error().message();

    ASSERT_TRUE(knob("fail_cmds", 1));
    EXPECT_EQ(st.retrieve_temporal(1, 0).error(), eio);
    auto hit = st.retrieve_temporal(1, 0);
    ASSERT_TRUE(hit);
    EXPECT_TRUE(hit->hit);
    EXPECT_EQ(hit->block.id, b->id);

    // A failed end_frame keeps the frame open and the release pending; the retry releases.
    ASSERT_TRUE(st.release(*b));
    ASSERT_TRUE(knob("fail_cmds", 1));
    EXPECT_EQ(st.end_frame().error(), eio);
    EXPECT_TRUE(st.in_frame());
    hit = st.retrieve_temporal(1, 0);
    ASSERT_TRUE(hit);
    EXPECT_TRUE(hit->hit) << "still live after the failed removal";
    auto released = st.end_frame();
    ASSERT_TRUE(released) << released.error().message();
    EXPECT_EQ(released->count, 1u);
    stats = alloc_->stats();
    ASSERT_TRUE(stats);
    EXPECT_EQ(stats->resident_blocks, 0u);
    EXPECT_EQ(stats->removed, 1u);

    // Engine-level async: the failed submit completes with EIO and leaves no pending event.
    {
        boost::asio::io_context io;
        auto a = AsyncDevice::create(dev_, io);
        ASSERT_TRUE(a);
        ASSERT_TRUE(knob("fail_cmds", 1));
        std::error_code got = std::make_error_code(std::errc::timed_out);
        (*a)->async_begin_frame(st, luma(2, 2), [&](std::error_code ec, FrameInfo) { got = ec; });
        io.run_for(std::chrono::seconds(2));
        EXPECT_EQ(got, eio);
        EXPECT_FALSE(st.in_frame());
        EXPECT_EQ((*a)->pending_frames(), 0u);
        io.restart();
        std::optional<FrameInfo> next;
        (*a)->async_begin_frame(st, luma(2, 2), [&](std::error_code ec, FrameInfo fi) {
            if (!ec)
                next = fi;
        });
        io.run_for(std::chrono::seconds(2));
        ASSERT_TRUE(next);
        EXPECT_EQ(next->frame, f1->frame + 1);
        EXPECT_TRUE(st.in_frame());
        ASSERT_TRUE(st.allocate(2));
    }

    // Tearing a stream with live blocks down while its commands fail: the driver still forgets it.
    ASSERT_TRUE(knob("fail_cmds", 8));
    streams.clear();
    ASSERT_TRUE(knob("fail_cmds", 0));
    auto again = alloc_->create_stream();
    ASSERT_TRUE(again) << again.error().message();
    streams.push_back(std::move(*again));

    close_all(streams);
    EXPECT_EQ(live(), zero()) << "no BO, stream, block or SHIE entry left";
}

}  // namespace
}  // namespace vrex
