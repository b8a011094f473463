// The device-loss contract of the engine API on every available backend: once the device is gone,
// every Stream and KvAllocator call that can fail reports errc::device_lost, including calls that
// would otherwise fail on local state (begin_frame() inside a frame used to say EBUSY), and tearing
// everything down is clean. The emulation loses its device through simulate_device_loss(), the
// kernel backend through a sysfs unbind (QEMU guests, root), rebound afterwards.
#include <gtest/gtest.h>

#include "device_impl.hpp"
#include "backends.hpp"
#include "emulated_backend.hpp"
#include "frames.hpp"
#include "kernel_backend.hpp"
#include "test_kernel_guest.hpp"
#include "vrex/hal.hpp"
#include "vrex/segment.hpp"

namespace vrex {
namespace {

constexpr ModelGeometry kGeom{2, 2, 64, DType::fp16, 16};
constexpr std::uint32_t kW = 128, kH = 96;

class DeviceLoss : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override
    {
        auto be = test::open_backend(GetParam());
        ASSERT_NE(be, nullptr);
        if (auto* k = dynamic_cast<KernelBackend*>(be.get())) {
            if (::geteuid() != 0)
                GTEST_SKIP() << "unbinding the device needs root";
            node_ = k->node();
            device_ = test::bound_device_of(node_);
            ASSERT_FALSE(device_.empty()) << node_;
        }
        auto d = adopt_backend(std::move(be));
        ASSERT_TRUE(d);
        dev_ = *d;
    }

    void TearDown() override
    {
        if (driver_.empty())
            return;
        // Rebind so later tests (and guest programs) find the device again.
        EXPECT_TRUE(test::rebind(driver_, device_)) << "bind " << device_;
        EXPECT_TRUE(test::wait_for_path(node_, true, std::chrono::seconds(5)));
    }

    void lose_device()
    {
        if (auto* emu = dynamic_cast<EmulatedBackend*>(&backend_of(*dev_))) {
            emu->simulate_device_loss();
            return;
        }
        driver_ = test::unbind(device_);
        ASSERT_FALSE(driver_.empty()) << "unbind " << device_;
        ASSERT_TRUE(test::wait_for_path(node_, false, std::chrono::seconds(5)));
    }

    std::shared_ptr<Device> dev_;
    std::string node_, device_, driver_;
};

TEST_P(DeviceLoss, EveryStreamAndAllocatorCallReportsDeviceLost)
{
    auto alloc = KvAllocator::create(dev_, kGeom);
    ASSERT_TRUE(alloc);
    auto in = (*alloc)->create_stream();
    auto out = (*alloc)->create_stream();
    ASSERT_TRUE(in && out);
    Stream& s = **in;   // lost inside a frame, with a block and a pending release
    Stream& t = **out;  // lost between frames
    const auto px = test::synthetic_frame(kW, kH, 9, 0);
    const LumaView luma{px.data(), kW, kH, kW};
    auto f = s.begin_frame(luma);
    ASSERT_TRUE(f) << f.error().message();
    auto b = s.allocate(0);
    auto b2 = s.allocate(1);
    ASSERT_TRUE(b && b2);
    ASSERT_TRUE(s.release(*b2));
    ASSERT_TRUE(t.begin_frame(luma));
    ASSERT_TRUE(t.end_frame());
    auto seg = t.open_segment(SegmentKind::prompt, 0);
    ASSERT_TRUE(seg) << seg.error_message();
    ASSERT_TRUE(seg->append(3)) << "a partial block: the next append needs no device memory";

    lose_device();
    const std::error_code lost = errc::device_lost;

    EXPECT_EQ(s.end_frame().error(), lost);
    EXPECT_TRUE(s.in_frame()) << "the frame could not end";
    EXPECT_EQ(s.begin_frame(luma).error(), lost) << "not EBUSY: the stream is still inside its frame";
    EXPECT_EQ(s.begin_frame(LumaView{}).error(), lost) << "not EINVAL";
    EXPECT_EQ(s.allocate(2).error(), lost);
    const std::uint32_t regions[] = {3, 4};
    EXPECT_EQ(s.allocate_batch(regions).error(), lost);
    EXPECT_EQ(s.allocate_batch({}).error(), lost) << "an empty batch asks the device too";
    EXPECT_EQ(s.reuse(5, *b).error(), lost);
    EXPECT_EQ(s.retrieve_temporal(0, 0).error(), lost);
    EXPECT_EQ(s.retrieve_similar(0, f->fp, 4).error(), lost);
    EXPECT_EQ(s.retrieve_batch({}).error(), lost);
    EXPECT_EQ(s.release(*b).error(), lost) << "a known block: nothing else would reach the device";
    KvBlock unknown = *b;
    unknown.id += 1000;
    EXPECT_EQ(s.release(unknown).error(), lost) << "not ENOENT";
    EXPECT_EQ(s.export_dmabuf(*b).error(), lost);
    EXPECT_EQ(s.end_frame().error(), lost) << "sticky";

    EXPECT_EQ(t.begin_frame(luma).error(), lost);
    EXPECT_EQ(t.allocate(0).error(), lost) << "not not_in_frame";
    EXPECT_EQ(t.reuse(0, *b).error(), lost);
    EXPECT_EQ(t.release(*b).error(), lost);
    EXPECT_EQ(t.end_frame().error(), lost);
    EXPECT_EQ(t.retrieve_temporal(0, -1).error(), lost);
    EXPECT_EQ(t.open_segment(SegmentKind::generated, 0).error(), lost);
    EXPECT_EQ(t.open_segment(static_cast<SegmentKind>(9), 0).error(), lost) << "not EINVAL";
    EXPECT_EQ(seg->append(1).error(), lost) << "fits the partial block, still reported";
    EXPECT_EQ(seg->truncate(0).error(), lost);
    EXPECT_EQ(seg->truncate(99).error(), lost) << "not ERANGE";
    EXPECT_EQ(seg->tokens(), 3u);

    EXPECT_EQ((*alloc)->create_stream().error(), lost);
    EXPECT_EQ((*alloc)->stats().error(), lost);
    EXPECT_EQ(KvAllocator::create(dev_, kGeom).error(), lost);
    EXPECT_EQ(KvAllocator::create(dev_, ModelGeometry{}).error(), lost) << "not bad_geometry";
    EXPECT_EQ(lost_or(*dev_, {}), lost);

    if (dev_->backend_name() == "emulated")
        b->data[0] = std::byte{1};  // the emulation keeps host views valid until the device object goes

    // Teardown after the loss: streams, allocator, device, in the order an engine drops them.
    in->reset();
    out->reset();  // closes the segment
    EXPECT_FALSE(seg->is_open());
    alloc->reset();
    dev_.reset();
}

TEST_P(DeviceLoss, LocalStateErrorsStayWhileTheDeviceIsPresent)
{
    auto alloc = KvAllocator::create(dev_, kGeom);
    ASSERT_TRUE(alloc);
    auto s = (*alloc)->create_stream();
    ASSERT_TRUE(s);
    const auto px = test::synthetic_frame(kW, kH, 10, 0);
    const LumaView luma{px.data(), kW, kH, kW};
    EXPECT_EQ((*s)->allocate(0).error(), errc::not_in_frame);
    EXPECT_EQ((*s)->end_frame().error(), errc::not_in_frame);
    ASSERT_TRUE((*s)->begin_frame(luma));
    EXPECT_EQ((*s)->begin_frame(luma).error(), std::errc::device_or_resource_busy);
    KvBlock unknown;
    unknown.id = 12345;
    EXPECT_EQ((*s)->release(unknown).error(), errc::stale_handle) << "never a valid handle";
    EXPECT_EQ(KvAllocator::create(dev_, ModelGeometry{}).error(), errc::bad_geometry);
    EXPECT_FALSE(lost_or(*dev_, {}));
    EXPECT_TRUE((*s)->allocate_batch({}));
    EXPECT_TRUE((*s)->retrieve_batch({}));
}

INSTANTIATE_TEST_SUITE_P(Backends, DeviceLoss, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex
