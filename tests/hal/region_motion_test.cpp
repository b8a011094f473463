// The FCC's region motion through the device (uAPI 1.5, HAL ABI 1.2): FrameInfo::region_motion and
// vrex_hal_frame_region_motion() on every backend (the emulation computes it with lib/ in its FCC
// step, the kernel reads it from the frame job's result registers): a stream's first frame and a
// still frame mark no region, a panned one every region.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends.hpp"
#include "device_impl.hpp"
#include "device_test.hpp"
#include "forwarding_backend.hpp"
#include "panned_texture.hpp"
#include "vrex/hal.hpp"
#include "vrex/vrex_hal.h"

namespace vrex {
namespace {

constexpr std::uint32_t kW = test::kPanW, kH = test::kPanH;

std::uint32_t moving(const std::array<std::uint8_t, 16>& m) {
    std::uint32_t n = 0;
    for (std::uint8_t v : m) {
        EXPECT_LE(v, 90u) << "at most |(4, 4)| in 1/16 px";
        n += v > 0;
    }
    return n;
}

using RegionMotion = test::DeviceTest;

TEST_P(RegionMotion, APannedFrameMarksEveryRegionAStillOneNone) {
    auto a = allocator(ModelGeometry{2, 2, 64, DType::fp16, 16});
    ASSERT_TRUE(a);
    auto s = a->create_stream();
    ASSERT_TRUE(s) << s.error_message();
    const auto frame = [&](std::uint32_t shift) {
        const auto px = test::panned_texture(3, shift);
        auto f = (*s)->begin_frame(LumaView{px.data(), kW, kH, kW});
        EXPECT_TRUE(f) << f.error_message();
        const FrameInfo fi = f ? *f : FrameInfo{};
        EXPECT_EQ((*s)->frame().region_motion, fi.region_motion) << "Stream::frame() is the same frame";
        EXPECT_TRUE((*s)->end_frame());
        return fi.region_motion;
    };
    EXPECT_EQ(moving(frame(0)), 0u) << "a stream's first frame has no motion";
    EXPECT_EQ(moving(frame(0)), 0u) << "the same picture again";
    const auto panned = frame(2);
    EXPECT_EQ(moving(panned), 16u) << "the whole picture panned 2 px";
    // 2 grid px in every macroblock: 2 x 16 = 32 in 1/16 px where the search found the pan.
    std::uint32_t exact = 0;
    for (std::uint8_t v : panned) exact += v == 32;
    EXPECT_GE(exact, 12u);
    EXPECT_EQ(moving(frame(2)), 0u) << "still again";
}

TEST_P(RegionMotion, TheCAbiReportsTheOpenFramesMotion) {
    vrex_hal_device* dev = nullptr;
    ASSERT_EQ(vrex_hal_device_open(GetParam().c_str(), &dev), VREX_HAL_OK);
    vrex_hal_allocator* alloc = nullptr;
    vrex_hal_geometry g{2, 2, 64, VREX_HAL_FP16, 16, 0};
    ASSERT_EQ(vrex_hal_allocator_create(dev, &g, &alloc), VREX_HAL_OK);
    vrex_hal_device_close(dev);
    vrex_hal_stream* s = nullptr;
    ASSERT_EQ(vrex_hal_stream_create(alloc, 0, 0, &s), VREX_HAL_OK);
    std::array<std::uint8_t, VREX_HAL_REGIONS> m{};
    EXPECT_EQ(vrex_hal_frame_region_motion(s, m.data()), VREX_HAL_ERR_NOT_IN_FRAME);
    for (std::uint32_t shift : {0u, 2u}) {
        const auto px = test::panned_texture(5, shift);
        vrex_hal_frame_info fi{};
        ASSERT_EQ(vrex_hal_begin_frame(s, px.data(), kW, kH, kW, &fi), VREX_HAL_OK);
        m.fill(VREX_HAL_REGION_MOTION_UNKNOWN);
        ASSERT_EQ(vrex_hal_frame_region_motion(s, m.data()), VREX_HAL_OK);
        EXPECT_EQ(moving(m), shift ? 16u : 0u) << "shift " << shift;
        EXPECT_EQ(vrex_hal_frame_region_motion(s, nullptr), VREX_HAL_ERR_INVALID);
        ASSERT_EQ(vrex_hal_end_frame(s, nullptr), VREX_HAL_OK);
    }
    vrex_hal_stream_destroy(s);
    vrex_hal_allocator_destroy(alloc);
}

// The backend as a vrex.ko before uAPI 1.5 answers FRAME_SUBMIT: it writes the first 96 bytes and the
// DRM core copies the caller's region_motion back unchanged.
class Pre15Backend final : public test::ForwardingBackend {
  public:
    using ForwardingBackend::ForwardingBackend;
    std::error_code frame_submit(drm_vrex_frame_submit& a) override {
        std::array<std::uint8_t, 16> sent;
        std::copy(std::begin(a.region_motion), std::end(a.region_motion), sent.begin());
        const std::error_code ec = in_->frame_submit(a);
        std::copy(sent.begin(), sent.end(), std::begin(a.region_motion));
        return ec;
    }
};

// Before uAPI 1.5 the HAL reports the motion as unknown (255 everywhere), never as "still": a gate
// must not take a device that says nothing for one that saw nothing move.
TEST_P(RegionMotion, ADriverBefore15ReportsUnknownNotStill) {
    auto be = test::open_backend(GetParam());
    ASSERT_NE(be, nullptr);
    auto d = adopt_backend(std::make_unique<Pre15Backend>(std::move(be)));
    ASSERT_TRUE(d);
    dev_ = *d;
    auto a = allocator(ModelGeometry{2, 2, 64, DType::fp16, 16});
    ASSERT_TRUE(a);
    auto s = a->create_stream();
    ASSERT_TRUE(s) << s.error_message();
    for (std::uint32_t shift : {0u, 0u, 2u}) {
        const auto px = test::panned_texture(3, shift);
        auto f = (*s)->begin_frame(LumaView{px.data(), kW, kH, kW});
        ASSERT_TRUE(f) << f.error_message();
        for (std::uint8_t v : f->region_motion) EXPECT_EQ(v, kRegionMotionUnknown) << "shift " << shift;
        ASSERT_TRUE((*s)->end_frame());
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, RegionMotion, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex
