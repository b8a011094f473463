// The fixture the conformance suites share: a vrex::Device over one backend (the test parameter),
// helpers that make an allocator on it (default options, or tight slabs for memory pressure), and a
// 128x96 luma view of a synthetic frame.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends.hpp"
#include "device_impl.hpp"
#include "vrex/hal.hpp"

namespace vrex::test {

inline LumaView view_of(const std::vector<std::uint8_t>& px) {
    return LumaView{px.data(), 128, 96, 128};
}

// Appends every release @s reports through its callback to @into, in order; @into must outlive the
// callback (the stream, or a later on_release()).
inline void collect_releases(Stream& s, std::vector<ReleasedBlock>& into) {
    s.on_release([&into](std::span<const ReleasedBlock> r) { into.insert(into.end(), r.begin(), r.end()); });
}

// Allocator options for tests of slab lifetime and memory pressure: small slabs (one block by
// default) and no spare slab, so the memory an allocator holds follows its live blocks and device
// memory runs out after a predictable number of blocks. evict_under_pressure as in AllocatorOptions.
struct TightSlabs {
    std::uint32_t blocks_per_slab = 1;
    std::uint32_t spare_slabs = 0;
    bool evict_under_pressure = false;
};

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
    std::shared_ptr<KvAllocator> tight_allocator(const ModelGeometry& g, TightSlabs t = {}) {
        AllocatorOptions o;
        o.blocks_per_slab = t.blocks_per_slab;
        o.spare_slabs = t.spare_slabs;
        o.evict_under_pressure = t.evict_under_pressure;
        return allocator(g, o);
    }
    // Blocks of half a bank (8 kv heads x 128 x bf16 x 16 tokens = 64 KiB a layer): device memory
    // fills after about two blocks a bank (emulation 4 MiB banks: 2 MiB blocks; the kernel's
    // simulated device 1 MiB banks: 512 KiB blocks).
    ModelGeometry half_bank_geometry() const {
        return ModelGeometry{static_cast<std::uint32_t>(dev_->info().bank_size / 2 / (64 * 1024)), 8, 128,
                             DType::bf16, 16};
    }
    std::shared_ptr<Device> dev_;
};

}  // namespace vrex::test
