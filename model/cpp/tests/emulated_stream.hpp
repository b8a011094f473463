// A stream on the emulated device with the builtin model's geometry (16 KiB blocks, the device's
// minimum) and a 128x96 luma plane: what the policy and the memory-hierarchy tests run on.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "vrex/hal.hpp"

namespace vrex::lcp {

class EmulatedStream : public ::testing::Test {
  protected:
    void SetUp() override {
        DeviceOptions o;
        o.backend = BackendChoice::emulated;
        auto dev = Device::open(o);
        ASSERT_TRUE(dev) << dev.error_message();
        ModelGeometry g;
        g.layers = 4;
        g.kv_heads = 4;
        g.head_dim = 32;
        g.tokens_per_block = 4;
        g.dtype = DType::fp32;
        auto a = KvAllocator::create(*dev, g);
        ASSERT_TRUE(a) << a.error_message();
        alloc_ = *a;
        auto s = alloc_->create_stream();
        ASSERT_TRUE(s) << s.error_message();
        st_ = std::move(*s);
        luma_.assign(128 * 96, 0);
    }

    std::shared_ptr<KvAllocator> alloc_;
    std::unique_ptr<Stream> st_;
    std::vector<std::uint8_t> luma_;
};

}  // namespace vrex::lcp
