// dma-buf export (docs/hal.md "KV memory contract") on every backend: one dma-buf per slab, exported
// once and cached; every export of any block of the slab is a dup of it (same buffer, same open file
// description), the block at block.offset, block_bytes() long.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "device_test.hpp"
#include "frames.hpp"
#include "vrex/hal.hpp"

namespace vrex {
namespace {

class DmaBuf : public test::DeviceTest {};

TEST_P(DmaBuf, OneCachedBufferPerSlabAndEveryBlockAtItsOffset) {
    auto a = KvAllocator::create(dev_, ModelGeometry{2, 2, 64, DType::fp16, 16});
    ASSERT_TRUE(a) << a.error_message();
    auto s = (*a)->create_stream().value();
    auto px = test::synthetic_frame(128, 96, 71, 0);
    ASSERT_TRUE(s->begin_frame(LumaView{px.data(), 128, 96, 128}));
    auto b = s->allocate_batch(std::vector<std::uint32_t>{0, 1});
    ASSERT_TRUE(b) << b.error_message();
    const KvBlock& x = (*b)[0];
    const KvBlock& y = (*b)[1];
    ASSERT_EQ(x.handle, y.handle) << "16 blocks a slab: both in the first slab";
    std::memset(y.data.data(), 0x6b, y.data.size());

    auto f1 = s->export_dmabuf(x);
    auto f2 = s->export_dmabuf(y);
    auto f3 = s->export_dmabuf(x);
    ASSERT_TRUE(f1 && f2 && f3) << f1.error_message();
    EXPECT_NE(*f1, *f2) << "the caller owns each fd";
    struct stat st1 {
    }, st2{}, st3{};
    ASSERT_EQ(fstat(*f1, &st1), 0);
    ASSERT_EQ(fstat(*f2, &st2), 0);
    ASSERT_EQ(fstat(*f3, &st3), 0);
    EXPECT_EQ(st1.st_ino, st2.st_ino) << "one buffer per slab";
    EXPECT_EQ(st1.st_ino, st3.st_ino);
    // Exported once: the fds are dups of one open file description, so a status flag set through one
    // shows through the others (separate exports would each have their own).
    const int fl = fcntl(*f1, F_GETFL);
    ASSERT_GE(fl, 0);
    ASSERT_EQ(fcntl(*f1, F_SETFL, fl ^ O_NONBLOCK), 0);
    EXPECT_EQ(fcntl(*f2, F_GETFL) & O_NONBLOCK, (fl ^ O_NONBLOCK) & O_NONBLOCK);
    EXPECT_EQ(fcntl(*f3, F_GETFL) & O_NONBLOCK, (fl ^ O_NONBLOCK) & O_NONBLOCK);
    // Block y at y.offset in the shared buffer, block_bytes() long.
    const std::size_t len = y.offset + (*a)->block_bytes();
    void* p = mmap(nullptr, len, PROT_READ, MAP_SHARED, *f2, 0);
    ASSERT_NE(p, MAP_FAILED);
    const auto* bytes = static_cast<const unsigned char*>(p);
    EXPECT_EQ(bytes[y.offset], 0x6b);
    EXPECT_EQ(bytes[len - 1], 0x6b);
    munmap(p, len);
    close(*f1);
    close(*f2);
    close(*f3);

    ASSERT_TRUE(s->release(x));
    ASSERT_TRUE(s->end_frame());
    auto stale = s->export_dmabuf(x);
    EXPECT_EQ(stale.error(), errc::stale_handle);
    EXPECT_NE(stale.error_message().find("export dma-buf of block (id " + std::to_string(x.id)),
              std::string::npos)
        << stale.error_message();
}

INSTANTIATE_TEST_SUITE_P(Backends, DmaBuf, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex
