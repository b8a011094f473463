// Engine-owned KV memory (docs/hal.md "Imported memory") on every backend: an "engine" exports its
// own buffer as a dma-buf, the HAL imports it and indexes KV blocks inside it.
//
// Source of the engine's buffer, printed by every test ("engine memory: ..."):
//   udmabuf   a memfd turned into a dma-buf by /dev/udmabuf (the 6.12 QEMU guests), any backend
//   vrex_sim  a BO of a second simulated vrex device (configfs, root), exported: the kernel backend
//             on kernels without udmabuf (the 5.10 and 6.1 guests)
//   memfd     the memfd itself, for the emulated backend only (the host has no /dev/udmabuf; the
//             emulation has no dma-bufs and takes any mmap-able fd)
// The kernel backend with neither skips with that reason.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device_impl.hpp"
#include "device_test.hpp"
#include "engine_memory.hpp"
#include "frames.hpp"
#include "vrex/hal.hpp"
#include "vrex/imported_memory.hpp"
#include "vrex/vrex_hal.h"

namespace vrex {
namespace {

constexpr std::size_t kBlocks = 4;

using test::engine_memory;
using test::EngineMemory;

class Imported : public test::DeviceTest {
  protected:
    void SetUp() override {
        test::DeviceTest::SetUp();
        alloc_ = allocator(geometry());
        ASSERT_NE(alloc_, nullptr);
        bytes_ = alloc_->block_bytes();
        std::string why;
        engine_ = engine_memory(GetParam(), kBlocks * bytes_, &why);
        if (!engine_) GTEST_SKIP() << why;
        std::cout << "engine memory: " << engine_->source << " (" << GetParam() << " backend)\n";
        RecordProperty("engine_memory", engine_->source);
        engine_->fill(7);
    }
    static ModelGeometry geometry() { return ModelGeometry{2, 2, 64, DType::fp16, 16}; }  // 16 KiB blocks
    drm_vrex_bank_info banks() {
        auto b = backend_of(*dev_).bank_info();
        EXPECT_TRUE(b) << b.error_message();
        return b ? *b : drm_vrex_bank_info{};
    }
    static std::uint64_t bank_kv_blocks(const drm_vrex_bank_info& b) {
        std::uint64_t n = 0;
        for (std::uint32_t i = 0; i < b.bank_count; i++) n += b.kv_blocks[i];
        return n;
    }
    LumaView frame(std::uint32_t scene, std::uint32_t t) {
        frames_.push_back(test::synthetic_frame(128, 96, scene, t));
        return test::view_of(frames_.back());
    }

    std::shared_ptr<KvAllocator> alloc_;
    std::uint64_t bytes_ = 0;
    std::unique_ptr<EngineMemory> engine_;
    std::vector<std::vector<std::uint8_t>> frames_;
};

TEST_P(Imported, IndexRetrieveReleaseAndTheEnginesMemoryIsNeverFreed) {
    const drm_vrex_bank_info before = banks();
    auto mem = alloc_->import_memory(engine_->dmabuf);
    ASSERT_TRUE(mem) << mem.error_message();
    EXPECT_EQ((*mem)->size(), engine_->size);
    auto s = alloc_->create_stream().value();
    std::vector<ReleasedBlock> seen;
    s->on_release([&](std::span<const ReleasedBlock> r) { seen.insert(seen.end(), r.begin(), r.end()); });

    auto f0 = s->begin_frame(frame(3, 0));
    ASSERT_TRUE(f0) << f0.error_message();
    auto kv = s->index_imported(**mem, 2 * bytes_, 5);
    ASSERT_TRUE(kv) << kv.error_message();
    EXPECT_EQ(kv->bank, DRM_VREX_BANK_NONE);
    EXPECT_EQ(kv->handle, (*mem)->handle());
    EXPECT_EQ(kv->offset, 2 * bytes_);
    EXPECT_FALSE(kv->shared);
    ASSERT_EQ(kv->view.size(), bytes_);
    ASSERT_EQ(kv->data.size(), bytes_);
    // vrex's view is the engine's memory: the engine's bytes show, vrex's writes show to the engine.
    EXPECT_EQ(std::memcmp(kv->view.data(), engine_->map + 2 * bytes_, bytes_), 0);
    kv->data[0] = std::byte{0x5a};
    EXPECT_EQ(engine_->map[2 * bytes_], std::byte{0x5a}) << "the engine's own mapping sees the write";
    kv->data[0] = EngineMemory::at(2 * bytes_, 7);

    // In no bank: no vrex memory taken, the imported counters move instead.
    const drm_vrex_bank_info during = banks();
    EXPECT_EQ(during.imported_bos, before.imported_bos + 1);
    EXPECT_EQ(during.imported_bytes, before.imported_bytes + engine_->size);
    EXPECT_EQ(during.imported_kv_blocks, before.imported_kv_blocks + 1);
    EXPECT_EQ(during.imported_kv_bytes, before.imported_kv_bytes + bytes_);
    EXPECT_EQ(bank_kv_blocks(during), bank_kv_blocks(before));
    auto st = alloc_->stats().value();
    EXPECT_EQ(st.allocations, 0u);
    EXPECT_EQ(st.slabs_created, 0u);
    EXPECT_EQ(st.resident_blocks, 0u);
    EXPECT_EQ((*mem)->blocks(), 1u);
    ASSERT_TRUE(s->end_frame());

    // The same picture again: the similarity lookup finds the block in the engine's memory.
    auto f1 = s->begin_frame(frame(3, 0));
    ASSERT_TRUE(f1) << f1.error_message();
    auto hit = s->retrieve_similar(5, f1->fp, 0);
    ASSERT_TRUE(hit) << hit.error_message();
    ASSERT_TRUE(hit->hit);
    EXPECT_EQ(hit->block.id, kv->id);
    EXPECT_EQ(hit->block.generation, kv->generation);
    EXPECT_EQ(hit->block.bank, DRM_VREX_BANK_NONE);
    EXPECT_EQ(hit->block.view.data(), kv->view.data());
    auto tmp = s->retrieve_temporal(5, -1);
    ASSERT_TRUE(tmp && tmp->hit);
    EXPECT_EQ(tmp->block.offset, 2 * bytes_);
    auto fd = s->export_dmabuf(*kv);
    ASSERT_TRUE(fd) << fd.error_message();
    close(*fd);

    // Release: reported like any block, but the memory is the engine's.
    ASSERT_TRUE(s->release(*kv));
    auto fe = s->end_frame();
    ASSERT_TRUE(fe) << fe.error_message();
    ASSERT_EQ(fe->count, 1u);
    EXPECT_EQ(fe->released[0].id, kv->id);
    EXPECT_EQ(fe->released[0].generation, kv->generation);
    EXPECT_EQ(fe->released[0].reason, ReleaseReason::removed);
    EXPECT_EQ(fe->released[0].bank, DRM_VREX_BANK_NONE);
    EXPECT_FALSE(fe->released[0].memory_freed);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_FALSE(seen[0].memory_freed);
    EXPECT_TRUE(engine_->holds(7)) << "vrex never writes or frees the engine's memory";
    EXPECT_EQ((*mem)->blocks(), 0u);
    EXPECT_EQ(s->release(*kv).error(), errc::stale_handle);
    EXPECT_EQ(banks().imported_kv_blocks, before.imported_kv_blocks);
    EXPECT_EQ(alloc_->stats().value().removed, 1u);

    // The engine keeps using its buffer after vrex let go.
    engine_->fill(9);
    EXPECT_TRUE(engine_->holds(9));
    EXPECT_EQ(std::memcmp((*mem)->host_view().data(), engine_->map, engine_->size), 0);
    mem->reset();
    EXPECT_EQ(banks().imported_bos, before.imported_bos);
}

TEST_P(Imported, BadFdsOffsetsAndForeignMemoryFailWithContext) {
    EXPECT_EQ(alloc_->import_memory(-1).error(), std::errc::bad_file_descriptor);
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    auto piped = alloc_->import_memory(p[0]);
    EXPECT_EQ(piped.error(), std::errc::invalid_argument) << piped.error_message();
    EXPECT_NE(piped.error_message().find("import memory (fd " + std::to_string(p[0]) + ")"),
              std::string::npos)
        << piped.error_message();
    close(p[0]);
    close(p[1]);
    if (GetParam() == "kernel") {  // a memfd is no dma-buf to vrex.ko
        const int m = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
        ASSERT_GE(m, 0);
        ASSERT_EQ(ftruncate(m, 65536), 0);
        EXPECT_EQ(alloc_->import_memory(m).error(), std::errc::invalid_argument);
        close(m);
    }

    auto mem = alloc_->import_memory(engine_->dmabuf);
    ASSERT_TRUE(mem) << mem.error_message();
    auto s = alloc_->create_stream().value();
    EXPECT_EQ(s->index_imported(**mem, 0, 0).error(), errc::not_in_frame);
    ASSERT_TRUE(s->begin_frame(frame(4, 0)));
    auto mis = s->index_imported(**mem, 32, 0);
    EXPECT_EQ(mis.error(), std::errc::invalid_argument);
    EXPECT_NE(mis.error_message().find("not a multiple of 64"), std::string::npos) << mis.error_message();
    auto past = s->index_imported(**mem, engine_->size - bytes_ + 64, 0);
    EXPECT_EQ(past.error(), std::errc::invalid_argument);
    EXPECT_NE(past.error_message().find("ends past the " + std::to_string(engine_->size) + "-byte buffer"),
              std::string::npos)
        << past.error_message();
    EXPECT_EQ(s->index_imported(**mem, ~std::uint64_t{63}, 0).error(), std::errc::invalid_argument);
    EXPECT_NE(past.error_message().find("index imported block at offset"), std::string::npos);

    // A vrex block's own dma-buf is not engine memory.
    auto own = s->allocate(1);
    ASSERT_TRUE(own) << own.error_message();
    auto ofd = s->export_dmabuf(*own);
    ASSERT_TRUE(ofd) << ofd.error_message();
    auto self = alloc_->import_memory(*ofd);
    EXPECT_EQ(self.error(), std::errc::invalid_argument) << self.error_message();
    close(*ofd);

    // Memory imported by another allocator.
    auto other = allocator(geometry());
    auto omem = other->import_memory(engine_->dmabuf);
    ASSERT_TRUE(omem) << omem.error_message();
    auto wrong = s->index_imported(**omem, 0, 2);
    EXPECT_EQ(wrong.error(), std::errc::invalid_argument);
    EXPECT_NE(wrong.error_message().find("another allocator"), std::string::npos) << wrong.error_message();

    // Nothing was indexed by the failures; a good offset still works; (frame, region) is unique.
    EXPECT_EQ((*mem)->blocks(), 0u);
    auto good = s->index_imported(**mem, bytes_, 3);
    ASSERT_TRUE(good) << good.error_message();
    EXPECT_EQ(s->index_imported(**mem, 0, 3).error(), std::errc::file_exists);
    EXPECT_EQ((*mem)->blocks(), 1u);
    EXPECT_TRUE(engine_->holds(7));
}

TEST_P(Imported, TheImportOutlivesOrPrecedesItsBlocksAndStreams) {
    const drm_vrex_bank_info before = banks();
    auto mem = alloc_->import_memory(engine_->dmabuf);
    ASSERT_TRUE(mem) << mem.error_message();
    // The same buffer again: the same handle, one import.
    auto again = alloc_->import_memory(engine_->dmabuf);
    ASSERT_TRUE(again) << again.error_message();
    EXPECT_EQ((*again)->handle(), (*mem)->handle());
    EXPECT_EQ(banks().imported_bos, before.imported_bos + 1);
    again->reset();

    {
        // The ImportedMemory object goes first: its blocks keep the import and their views.
        auto s = alloc_->create_stream().value();
        ASSERT_TRUE(s->begin_frame(frame(5, 0)));
        auto kv = s->index_imported(**mem, 0, 1);
        ASSERT_TRUE(kv) << kv.error_message();
        mem->reset();
        EXPECT_EQ(banks().imported_bos, before.imported_bos + 1) << "the block keeps the import";
        EXPECT_TRUE(std::memcmp(kv->view.data(), engine_->map, bytes_) == 0);
        ASSERT_TRUE(s->end_frame());
        auto f = s->begin_frame(frame(5, 0));
        ASSERT_TRUE(f);
        auto hit = s->retrieve_similar(1, f->fp, 0);
        ASSERT_TRUE(hit && hit->hit) << hit.error_message();
        EXPECT_EQ(hit->block.view.data(), kv->view.data());
        // The stream goes with the block still live: the import goes with it.
    }
    EXPECT_EQ(banks().imported_bos, before.imported_bos);
    EXPECT_EQ(banks().imported_kv_blocks, before.imported_kv_blocks);

    // The import made before a stream and kept after it: usable by the next stream.
    auto mem2 = alloc_->import_memory(engine_->dmabuf);
    ASSERT_TRUE(mem2) << mem2.error_message();
    for (int round = 0; round < 2; round++) {
        auto s = alloc_->create_stream().value();
        ASSERT_TRUE(s->begin_frame(frame(6, round)));
        auto kv = s->index_imported(**mem2, 3 * bytes_, 2);
        ASSERT_TRUE(kv) << "round " << round << ": " << kv.error_message();
        EXPECT_EQ((*mem2)->blocks(), 1u);
    }
    EXPECT_EQ((*mem2)->blocks(), 0u);
    EXPECT_EQ(banks().imported_bos, before.imported_bos + 1);
    EXPECT_TRUE(engine_->holds(7));
    mem2->reset();
    EXPECT_EQ(banks().imported_bos, before.imported_bos);
}

TEST_P(Imported, SharedAcrossStreamsReadOnlyAndOwnerReleaseKeepsTheReadersView) {
    auto mem = alloc_->import_memory(engine_->dmabuf);
    ASSERT_TRUE(mem) << mem.error_message();
    auto a = alloc_->create_stream({true, 1}).value();
    auto b = alloc_->create_stream({true, 1}).value();
    auto fa = a->begin_frame(frame(8, 0));
    ASSERT_TRUE(fa);
    auto kv = a->index_imported(**mem, bytes_, 6);
    ASSERT_TRUE(kv) << kv.error_message();
    ASSERT_TRUE(a->publish(*kv));
    ASSERT_TRUE(a->end_frame());
    auto fb = b->begin_frame(frame(8, 0));
    ASSERT_TRUE(fb);
    auto hit = b->retrieve_similar(6, fb->fp, 0, Scope::pool);
    ASSERT_TRUE(hit && hit->hit) << hit.error_message();
    EXPECT_TRUE(hit->block.shared);
    EXPECT_TRUE(hit->block.data.empty()) << "read-only for a reader";
    // The owner releases it while B references it: reported, memory never freed (it is the engine's).
    ASSERT_TRUE(a->begin_frame(frame(8, 1)));
    ASSERT_TRUE(a->release(*kv));
    auto fe = a->end_frame();
    ASSERT_TRUE(fe);
    ASSERT_EQ(fe->count, 1u);
    EXPECT_FALSE(fe->released[0].memory_freed);
    EXPECT_EQ(std::memcmp(hit->block.view.data(), engine_->map + bytes_, bytes_), 0);
    EXPECT_EQ((*mem)->blocks(), 1u) << "B's reference keeps the record";
    ASSERT_TRUE(b->end_frame());
    EXPECT_EQ((*mem)->blocks(), 0u);
    EXPECT_TRUE(engine_->holds(7));
}

TEST_P(Imported, CApiImportsIndexesAndReportsSizePrefixed) {
    vrex_hal_device* dev = nullptr;
    ASSERT_EQ(vrex_hal_device_open(GetParam().c_str(), &dev), VREX_HAL_OK) << vrex_hal_last_error();
    vrex_hal_geometry g{2, 2, 64, VREX_HAL_FP16, 16, 0};
    vrex_hal_allocator* alloc = nullptr;
    ASSERT_EQ(vrex_hal_allocator_create(dev, &g, &alloc), VREX_HAL_OK) << vrex_hal_last_error();
    vrex_hal_imported* mem = nullptr;
    EXPECT_EQ(vrex_hal_import_memory(alloc, -1, &mem), VREX_HAL_ERR_IO);
    EXPECT_NE(std::string(vrex_hal_last_error()).find("vrex_hal_import_memory: import memory (fd -1)"),
              std::string::npos)
        << vrex_hal_last_error();
    ASSERT_EQ(vrex_hal_import_memory(alloc, engine_->dmabuf, &mem), VREX_HAL_OK) << vrex_hal_last_error();

    vrex_hal_imported_info info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(vrex_hal_imported_get_info(mem, &info), VREX_HAL_OK);
    EXPECT_EQ(info.size, engine_->size);
    EXPECT_EQ(info.blocks, 0u);
    ASSERT_NE(info.data, nullptr);
    EXPECT_EQ(std::memcmp(info.data, engine_->map, engine_->size), 0);
    struct {
        vrex_hal_imported_info i;
        std::uint64_t future;
    } bigger{};
    bigger.future = 0xdead;
    bigger.i.struct_size = sizeof(bigger);
    ASSERT_EQ(vrex_hal_imported_get_info(mem, &bigger.i), VREX_HAL_OK);
    EXPECT_EQ(bigger.future, 0u) << "bytes a newer caller has and this library does not know are zeroed";
    info.struct_size = 2;
    EXPECT_EQ(vrex_hal_imported_get_info(mem, &info), VREX_HAL_ERR_INVALID);

    vrex_hal_stream* s = nullptr;
    ASSERT_EQ(vrex_hal_stream_create(alloc, 0, 0, &s), VREX_HAL_OK);
    auto px = test::synthetic_frame(128, 96, 9, 0);
    vrex_hal_frame_info fi{};
    ASSERT_EQ(vrex_hal_begin_frame(s, px.data(), 128, 96, 128, &fi), VREX_HAL_OK) << vrex_hal_last_error();
    vrex_hal_index_request req{};
    req.struct_size = sizeof(req);
    req.block_size = sizeof(vrex_hal_block);
    req.offset = 32;
    req.region = 2;
    vrex_hal_block blk{};
    EXPECT_EQ(vrex_hal_index_imported(s, mem, &req, &blk), VREX_HAL_ERR_INVALID);
    EXPECT_NE(
        std::string(vrex_hal_stream_last_error(s)).find("vrex_hal_index_imported: index imported block"),
        std::string::npos)
        << vrex_hal_stream_last_error(s);
    req.struct_size = 8;
    req.offset = 0;
    EXPECT_EQ(vrex_hal_index_imported(s, mem, &req, &blk), VREX_HAL_ERR_INVALID);
    req.struct_size = sizeof(req);
    req.flags = 1;
    EXPECT_EQ(vrex_hal_index_imported(s, mem, &req, &blk), VREX_HAL_ERR_INVALID);
    req.flags = 0;
    req.offset = bytes_;
    ASSERT_EQ(vrex_hal_index_imported(s, mem, &req, &blk), VREX_HAL_OK) << vrex_hal_stream_last_error(s);
    EXPECT_EQ(blk.bank, VREX_HAL_BANK_NONE);
    EXPECT_EQ(blk.offset, bytes_);
    EXPECT_EQ(blk.data, static_cast<std::byte*>(info.data) + bytes_);
    EXPECT_EQ(blk.flags & VREX_HAL_BLOCK_SHARED, 0u);
    // The imported memory object can go now: the block keeps the import.
    vrex_hal_imported_destroy(mem);
    ASSERT_EQ(vrex_hal_release(s, &blk), VREX_HAL_OK);
    std::uint32_t n = 0;
    ASSERT_EQ(vrex_hal_end_frame(s, &n), VREX_HAL_OK);
    ASSERT_EQ(n, 1u);
    vrex_hal_released rel{};
    std::uint32_t count = 0;
    ASSERT_EQ(vrex_hal_released_blocks(s, &rel, 1, &count), VREX_HAL_OK);
    EXPECT_EQ(rel.memory_freed, 0u);
    EXPECT_EQ(rel.bank, VREX_HAL_BANK_NONE);
    EXPECT_TRUE(engine_->holds(7));
    vrex_hal_stream_destroy(s);
    vrex_hal_allocator_destroy(alloc);
    vrex_hal_device_close(dev);
}

INSTANTIATE_TEST_SUITE_P(Backends, Imported, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex
