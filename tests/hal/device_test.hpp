// The fixture the conformance suites share: a vrex::Device over one backend (the test parameter),
// a helper that makes an allocator on it, and a 128x96 luma view of a synthetic frame.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends.hpp"
#include "device_impl.hpp"
#include "vrex/hal.hpp"

namespace vrex::test {

inline LumaView view_of(const std::vector<std::uint8_t>& px) {
    return LumaView{px.data(), 128, 96, 128};
}

class DeviceTest : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        auto be = open_backend(GetParam());
        ASSERT_NE(be, nullptr);
        auto d = adopt_backend(std::move(be));
        ASSERT_TRUE(d);
        dev_ = *d;
    }
    std::shared_ptr<KvAllocator> allocator(const ModelGeometry& g, AllocatorOptions o = {}) {
        auto a = KvAllocator::create(dev_, g, o);
        EXPECT_TRUE(a) << a.error_message();
        return a ? *a : nullptr;
    }
    std::shared_ptr<Device> dev_;
};

}  // namespace vrex::test
