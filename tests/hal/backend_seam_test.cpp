// Conformance of the Backend seam: every backend validates like the uAPI header says, returns the
// same errno values and the same device results. Runs once per available backend.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "backends.hpp"
#include "frames.hpp"

namespace vrex {
namespace {

using test::submit_synthetic_frame;
using test::synthetic_frame;

class BackendSeam : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override
    {
        be_ = test::open_backend(GetParam());
        ASSERT_NE(be_, nullptr);
        auto info = be_->device_info();
        ASSERT_TRUE(info);
        info_ = *info;
    }

    std::uint32_t bo(std::uint64_t size, std::uint64_t mask = 1, std::uint32_t flags = DRM_VREX_BO_KV)
    {
        drm_vrex_bo_create a{};
        a.size = size;
        a.bank_mask = mask;
        a.flags = flags;
        EXPECT_FALSE(be_->bo_create(a));
        return a.handle;
    }
    std::uint32_t stream(std::uint32_t flags = 0, std::uint32_t pool = 0)
    {
        drm_vrex_stream_create a{};
        a.flags = flags;
        a.pool = pool;
        EXPECT_FALSE(be_->stream_create(a));
        return a.stream;
    }
    // Stages a synthetic frame in @handle and submits it.
    drm_vrex_frame_submit frame(std::uint32_t s, std::uint32_t handle, std::uint32_t scene, std::uint32_t t)
    {
        drm_vrex_frame_submit f{};
        EXPECT_FALSE(submit_synthetic_frame(*be_, s, handle, scene, t, f));
        return f;
    }
    drm_vrex_shie_insert_item insert_item(const drm_vrex_frame_submit& f, std::uint32_t handle, std::uint64_t off,
                                          std::uint32_t region)
    {
        drm_vrex_shie_insert_item it{};
        it.fp[0] = f.fp[0];
        it.fp[1] = f.fp[1];
        it.handle = handle;
        it.offset = off;
        it.length = 16384;
        it.region = region;
        return it;
    }

    std::unique_ptr<Backend> be_;
    drm_vrex_device_info info_{};
};

const std::error_code kInval = std::make_error_code(std::errc::invalid_argument);
const std::error_code kNoent = std::make_error_code(std::errc::no_such_file_or_directory);
const std::error_code kRange = std::make_error_code(std::errc::result_out_of_range);
const std::error_code kNospc = std::make_error_code(std::errc::no_space_on_device);

TEST_P(BackendSeam, DeviceInfoDescribesAVrexDevice)
{
    EXPECT_EQ(info_.hw_id, 0x56524558u);
    EXPECT_EQ(info_.caps & (DRM_VREX_CAP_FCC | DRM_VREX_CAP_SHIE), DRM_VREX_CAP_FCC | DRM_VREX_CAP_SHIE);
    EXPECT_GE(info_.bank_count, 1u);
    EXPECT_EQ(info_.bank_count % info_.group_banks, 0u);
    EXPECT_GE(info_.max_streams, 4u);
    EXPECT_GT(info_.max_batch, 0u);
    EXPECT_FALSE(be_->name().empty());
    EXPECT_FALSE(be_->description().empty());
    auto banks = be_->bank_info();
    ASSERT_TRUE(banks);
    EXPECT_EQ(banks->bank_count, info_.bank_count);
}

TEST_P(BackendSeam, BoCreateValidatesLikeTheUapi)
{
    drm_vrex_bo_create a{};
    a.size = 4096;
    a.bank_mask = 1;
    a.flags = 0x80;
    EXPECT_EQ(be_->bo_create(a), kInval) << "unknown flag";
    a.flags = 0;
    a.pad = 1;
    EXPECT_EQ(be_->bo_create(a), kInval) << "pad";
    a.pad = 0;
    a.bank_mask = 0;
    EXPECT_EQ(be_->bo_create(a), kInval) << "empty mask";
    a.bank_mask = info_.bank_count < 64 ? std::uint64_t{1} << info_.bank_count : 0;
    if (a.bank_mask) {
        EXPECT_EQ(be_->bo_create(a), kInval) << "bank beyond count";
    }
    a.bank_mask = 1;
    a.size = 0;
    EXPECT_EQ(be_->bo_create(a), kInval) << "size 0";
    a.size = info_.bank_size + 1;
    EXPECT_EQ(be_->bo_create(a), kInval) << "larger than a bank";
    a.size = 100;
    a.bank_mask = 0b110;
    ASSERT_FALSE(be_->bo_create(a));
    EXPECT_EQ(a.bank, 1u) << "lowest bank of the mask";
    auto map = be_->bo_map(a.handle);
    ASSERT_TRUE(map);
    EXPECT_EQ(map->size() % 4096, 0u) << "rounded to pages";
    EXPECT_FALSE(be_->bo_destroy(a.handle));
    EXPECT_EQ(be_->bo_destroy(a.handle), kNoent);
    EXPECT_EQ(be_->bo_map(a.handle).error(), kNoent);
    EXPECT_EQ(be_->bo_export_dmabuf(12345).error(), kNoent);
}

TEST_P(BackendSeam, BankFillsThenNextBankOfTheMaskIsUsed)
{
    const std::uint32_t h1 = bo(info_.bank_size, 0b11);
    drm_vrex_bo_create a{};
    a.size = 4096;
    a.bank_mask = 0b11;
    ASSERT_FALSE(be_->bo_create(a));
    EXPECT_EQ(a.bank, 1u);
    a.bank_mask = 0b1;
    EXPECT_EQ(be_->bo_create(a), kNospc);
    EXPECT_FALSE(be_->bo_destroy(h1));
}

TEST_P(BackendSeam, DmabufSharesMemoryWithTheMapping)
{
    const std::uint32_t h = bo(65536);
    auto map = be_->bo_map(h);
    ASSERT_TRUE(map);
    auto fd = be_->bo_export_dmabuf(h);
    ASSERT_TRUE(fd);
    void* p = mmap(nullptr, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    ASSERT_NE(p, MAP_FAILED);
    std::memset(map->data() + 4000, 0x5a, 16);
    EXPECT_EQ(static_cast<unsigned char*>(p)[4007], 0x5a);
    static_cast<unsigned char*>(p)[9000] = 0x33;
    EXPECT_EQ(static_cast<unsigned char>((*map)[9000]), 0x33);
    munmap(p, 65536);
    close(*fd);
    EXPECT_FALSE(be_->bo_destroy(h));
}

TEST_P(BackendSeam, StreamCreateValidatesAndDestroyForgets)
{
    drm_vrex_stream_create a{};
    a.flags = 0x4;
    EXPECT_EQ(be_->stream_create(a), kInval);
    a.flags = 0;
    a.pool = 3;
    EXPECT_EQ(be_->stream_create(a), kInval) << "pool without POOLED";
    a.pool = 0;
    a.pad = 1;
    EXPECT_EQ(be_->stream_create(a), kInval);
    const std::uint32_t s = stream();
    EXPECT_FALSE(be_->stream_destroy(s));
    EXPECT_EQ(be_->stream_destroy(s), kNoent);
}

TEST_P(BackendSeam, FrameSubmitValidatesAndFingerprints)
{
    const std::uint32_t s = stream();
    const std::uint32_t h = bo(160 * 120);
    drm_vrex_frame_submit f{};
    f.stream = s;
    f.handle = h;
    f.width = 160;
    f.height = 120;
    f.stride = 100;
    EXPECT_EQ(be_->frame_submit(f), kInval) << "stride < width";
    f.stride = 160;
    f.width = 8;
    EXPECT_EQ(be_->frame_submit(f), kInval) << "below fcc_min_dim";
    f.width = 160;
    f.flags = 0x10;
    EXPECT_EQ(be_->frame_submit(f), kInval);
    f.flags = 0;
    f.offset = 4096;
    EXPECT_EQ(be_->frame_submit(f), kInval) << "plane past the BO";
    f.offset = 0;
    f.handle = 999;
    EXPECT_EQ(be_->frame_submit(f), kNoent);
    f.handle = h;
    f.stream = 999;
    EXPECT_EQ(be_->frame_submit(f), kNoent);

    const auto f0 = frame(s, h, 1, 0);
    const auto f1 = frame(s, h, 1, 0);
    EXPECT_EQ(f1.frame, f0.frame + 1);
    EXPECT_EQ(f1.group, f0.group) << "same scene, same group";
    EXPECT_LT(f1.bank_first + f1.bank_count, info_.bank_count + 1);
    EXPECT_TRUE(f0.fp[0] || f0.fp[1]);
    const auto f2 = frame(s, h, 7, 0);
    EXPECT_NE(std::make_pair(f2.fp[0], f2.fp[1]), std::make_pair(f1.fp[0], f1.fp[1]));
    EXPECT_FALSE(be_->stream_destroy(s));
    EXPECT_FALSE(be_->bo_destroy(h));
}

TEST_P(BackendSeam, InsertLookupTemporalAndSimilar)
{
    const std::uint32_t s = stream();
    const std::uint32_t luma = bo(160 * 120, ~0ull >> (64 - info_.bank_count), DRM_VREX_BO_STAGING);
    const std::uint32_t kv = bo(16384 * 4);
    const auto f0 = frame(s, luma, 2, 0);
    drm_vrex_shie_insert_item items[2] = {insert_item(f0, kv, 0, 3), insert_item(f0, kv, 16384, 4)};
    ASSERT_FALSE(be_->shie_insert(s, items));
    EXPECT_EQ(items[0].result, 0);
    EXPECT_EQ(items[1].result, 0);
    EXPECT_NE(items[0].block, items[1].block);

    drm_vrex_shie_insert_item dup = insert_item(f0, kv, 32768, 3);
    ASSERT_FALSE(be_->shie_insert(s, std::span(&dup, 1)));
    EXPECT_EQ(dup.result, -EEXIST) << "one entry per (frame, region)";

    const auto f1 = frame(s, luma, 2, 1);
    drm_vrex_shie_lookup_item q[3]{};
    q[0].kind = DRM_VREX_LOOKUP_TEMPORAL;
    q[0].region = 3;
    q[0].frame_offset = -1;
    q[1].kind = DRM_VREX_LOOKUP_TEMPORAL;
    q[1].region = 5;
    q[1].frame_offset = -1;
    q[2].kind = DRM_VREX_LOOKUP_SIMILAR;
    q[2].region = 4;
    q[2].fp[0] = f1.fp[0];
    q[2].fp[1] = f1.fp[1];
    q[2].radius = 31;
    ASSERT_FALSE(be_->shie_lookup(s, q));
    EXPECT_EQ(q[0].hit_flags, DRM_VREX_HIT);
    EXPECT_EQ(q[0].block, items[0].block);
    EXPECT_EQ(q[0].handle, kv);
    EXPECT_EQ(q[0].offset, 0u);
    EXPECT_EQ(q[0].length, 16384u);
    EXPECT_EQ(q[0].frame, f0.frame);
    EXPECT_EQ(q[1].hit_flags, 0u) << "nothing in region 5";
    const std::uint32_t d = static_cast<std::uint32_t>(__builtin_popcountll(f0.fp[0] ^ f1.fp[0]) +
                                                       __builtin_popcountll(f0.fp[1] ^ f1.fp[1]));
    if (d <= 31) {
        EXPECT_TRUE(q[2].hit_flags & DRM_VREX_HIT);
        EXPECT_EQ(q[2].distance, d);
        EXPECT_EQ(bool(q[2].hit_flags & DRM_VREX_HIT_APPROX), d > 0);
        EXPECT_EQ(q[2].offset, 16384u);
        EXPECT_EQ(q[2].found_fp[0], f0.fp[0]);
    }
    // Exact similarity hit: the stored fingerprint itself.
    q[2].fp[0] = f0.fp[0];
    q[2].fp[1] = f0.fp[1];
    q[2].radius = 0;
    ASSERT_FALSE(be_->shie_lookup(s, std::span(&q[2], 1)));
    EXPECT_EQ(q[2].hit_flags, DRM_VREX_HIT);
    EXPECT_EQ(q[2].distance, 0u);

    std::uint32_t n = 0;
    drm_vrex_released_block rel[4]{};
    EXPECT_EQ(be_->shie_retire(s, {}, std::span(rel, 1), n), kNospc) << "room for 2 live blocks needed";
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(be_->bo_destroy(kv), std::make_error_code(std::errc::device_or_resource_busy))
        << "the SHIE still points into the BO";
    const std::uint32_t rm[1] = {items[1].block};
    ASSERT_FALSE(be_->shie_retire(s, rm, rel, n));
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(rel[0].block, items[1].block);
    EXPECT_EQ(rel[0].reason, static_cast<std::uint32_t>(DRM_VREX_RELEASE_REMOVED));
    EXPECT_EQ(rel[0].offset, 16384u);
    EXPECT_EQ(be_->shie_retire(s, rm, rel, n), kNoent) << "already released";
    EXPECT_FALSE(be_->stream_destroy(s));
    EXPECT_FALSE(be_->bo_destroy(kv));
    EXPECT_FALSE(be_->bo_destroy(luma));
}

// Generations (uAPI 1.2 bo_gen, 1.3 block_gen): every BO and every block has one that is never 0 and
// never reused; inserts, hits and release records name them; an ALIAS insert naming a block_gen
// is refused (ENOENT) once the id names a later block, and block_gen 0 aliases by id as before.
TEST_P(BackendSeam, GenerationsNameBuffersBlocksAndRecords)
{
    const std::uint32_t s = stream();
    const std::uint32_t luma = bo(160 * 120, ~0ull >> (64 - info_.bank_count), DRM_VREX_BO_STAGING);
    drm_vrex_bo_create c{};
    c.size = 16384 * 4;
    c.bank_mask = 1;
    c.flags = DRM_VREX_BO_KV;
    ASSERT_FALSE(be_->bo_create(c));
    const std::uint32_t kv = c.handle;
    drm_vrex_bo_create c2 = c;
    c2.handle = 0;
    c2.bo_gen = 0;
    ASSERT_FALSE(be_->bo_create(c2));
    EXPECT_NE(c.bo_gen, 0u);
    EXPECT_NE(c2.bo_gen, 0u);
    EXPECT_NE(c.bo_gen, c2.bo_gen) << "every BO its own generation";

    const auto f0 = frame(s, luma, 4, 0);
    drm_vrex_shie_insert_item it = insert_item(f0, kv, 0, 2);
    ASSERT_FALSE(be_->shie_insert(s, std::span(&it, 1)));
    ASSERT_EQ(it.result, 0);
    EXPECT_EQ(it.bo_gen, c.bo_gen);
    const std::uint32_t block = it.block;
    const std::uint64_t g1 = it.block_gen;
    EXPECT_NE(g1, 0u);

    drm_vrex_shie_lookup_item q{};
    q.kind = DRM_VREX_LOOKUP_TEMPORAL;
    q.region = 2;
    ASSERT_FALSE(be_->shie_lookup(s, std::span(&q, 1)));
    ASSERT_EQ(q.hit_flags, DRM_VREX_HIT);
    EXPECT_EQ(q.block_gen, g1) << "a hit names the incarnation it found";

    auto alias = [&](std::uint32_t region, std::uint32_t b, std::uint64_t gen) {
        drm_vrex_shie_insert_item a{};
        a.fp[0] = f0.fp[0];
        a.fp[1] = f0.fp[1];
        a.flags = DRM_VREX_INSERT_ALIAS;
        a.region = region;
        a.block = b;
        a.block_gen = gen;
        const std::error_code ec = be_->shie_insert(s, std::span(&a, 1));
        return std::make_pair(ec ? ec : std::error_code(-a.result, std::generic_category()), a);
    };
    auto [ec, a] = alias(3, block, g1);
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(a.block_gen, g1);
    EXPECT_EQ(a.bo_gen, c.bo_gen);
    EXPECT_EQ(alias(4, block, g1 + 1000).first, kNoent) << "another generation of the id is no such block";
    drm_vrex_shie_insert_item bad = insert_item(f0, kv, 16384, 5);
    bad.block_gen = g1;
    EXPECT_EQ(be_->shie_insert(s, std::span(&bad, 1)), kInval) << "a new block has no generation to name";

    std::uint32_t n = 0;
    drm_vrex_released_block rel[4]{};
    const std::uint32_t rm[1] = {block};
    ASSERT_FALSE(be_->shie_retire(s, rm, rel, n));
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(rel[0].block, block);
    EXPECT_EQ(rel[0].bo_gen, c.bo_gen);
    EXPECT_EQ(rel[0].block_gen, g1);

    // The id goes to the next block (lowest free first): the old generation never reaches it.
    drm_vrex_shie_insert_item next = insert_item(f0, kv, 32768, 6);
    ASSERT_FALSE(be_->shie_insert(s, std::span(&next, 1)));
    ASSERT_EQ(next.result, 0);
    EXPECT_GT(next.block_gen, g1) << "generations only grow";
    if (next.block == block) {
        EXPECT_EQ(alias(7, block, g1).first, kNoent) << "the predecessor's generation names no block";
        auto [ec0, a0] = alias(8, block, 0);
        EXPECT_FALSE(ec0) << "generation 0: by id, as before uAPI 1.3";
        EXPECT_EQ(a0.block_gen, next.block_gen);
    } else {
        std::printf("note: block id %u not recycled (got %u)\n", block, next.block);
    }
    const std::uint32_t rm2[1] = {next.block};
    ASSERT_FALSE(be_->shie_retire(s, rm2, rel, n));
    EXPECT_FALSE(be_->stream_destroy(s));
    EXPECT_FALSE(be_->bo_destroy(kv));
    EXPECT_FALSE(be_->bo_destroy(c2.handle));
    EXPECT_FALSE(be_->bo_destroy(luma));
}

TEST_P(BackendSeam, MalformedBatchChangesNothing)
{
    const std::uint32_t s = stream();
    const std::uint32_t luma = bo(160 * 120, 1, DRM_VREX_BO_STAGING);
    const std::uint32_t kv = bo(16384 * 2, 2);
    const auto f = frame(s, luma, 3, 0);
    auto before = be_->stats();
    ASSERT_TRUE(before);

    drm_vrex_shie_insert_item items[2] = {insert_item(f, kv, 0, 1), insert_item(f, kv, 16384, 2)};
    items[1].region = 16;
    EXPECT_EQ(be_->shie_insert(s, items), kInval);
    items[1].region = 2;
    items[1].frame_offset = 3;
    EXPECT_EQ(be_->shie_insert(s, items), kInval);
    items[1].frame_offset = 0;
    items[1].offset = 16385;
    EXPECT_EQ(be_->shie_insert(s, items), kInval) << "range past the BO";
    items[1].offset = 16384;
    items[1].length = 0;
    EXPECT_EQ(be_->shie_insert(s, items), kInval);
    items[1].length = 16384;
    items[1].handle = 777;
    EXPECT_EQ(be_->shie_insert(s, items), kNoent);
    items[1].handle = 0;
    items[1].flags = DRM_VREX_INSERT_ALIAS;
    items[1].offset = items[1].length = 0;
    items[1].block = 0xfffff;
    EXPECT_EQ(be_->shie_insert(s, items), kNoent) << "alias of an unknown block";
    EXPECT_EQ(be_->shie_insert(s, {}), kInval) << "empty batch";
    EXPECT_EQ(be_->shie_insert(999, items), kNoent);

    drm_vrex_shie_lookup_item q{};
    q.kind = 2;
    EXPECT_EQ(be_->shie_lookup(s, std::span(&q, 1)), kInval);
    q.kind = DRM_VREX_LOOKUP_TEMPORAL;
    q.radius = 1;
    EXPECT_EQ(be_->shie_lookup(s, std::span(&q, 1)), kInval) << "radius on temporal";
    q.radius = 0;
    q.fp[0] = 1;
    EXPECT_EQ(be_->shie_lookup(s, std::span(&q, 1)), kInval) << "fp on temporal";
    q.fp[0] = 0;
    q.kind = DRM_VREX_LOOKUP_SIMILAR;
    q.radius = 32;
    EXPECT_EQ(be_->shie_lookup(s, std::span(&q, 1)), kInval);
    q.radius = 5;
    q.flags = 0x10;  // past the tiers (uAPI 1.6)
    EXPECT_EQ(be_->shie_lookup(s, std::span(&q, 1)), kInval);
    q.flags = 0;
    q.max_candidates = DRM_VREX_LOOKUP_MAX_CANDIDATES + 1;
    EXPECT_EQ(be_->shie_lookup(s, std::span(&q, 1)), kInval) << "candidates past the cap";
    q.max_candidates = 0;
    q.kind = DRM_VREX_LOOKUP_TEMPORAL;
    q.radius = 0;
    q.max_candidates = 1;
    EXPECT_EQ(be_->shie_lookup(s, std::span(&q, 1)), kInval) << "candidates on temporal";
    q.max_candidates = 0;
    q.kind = DRM_VREX_LOOKUP_SIMILAR;
    q.radius = 5;
    q.pad = 1;
    EXPECT_EQ(be_->shie_lookup(s, std::span(&q, 1)), kInval);

    auto after = be_->stats();
    ASSERT_TRUE(after);
    EXPECT_EQ(after->inserts, before->inserts) << "nothing applied";
    EXPECT_EQ(after->lookups, before->lookups);
    EXPECT_FALSE(be_->stream_destroy(s));
    EXPECT_FALSE(be_->bo_destroy(kv));
    EXPECT_FALSE(be_->bo_destroy(luma));
}

TEST_P(BackendSeam, ColdBlocksBecomeZombiesAfterZFrames)
{
    const std::uint32_t s = stream();
    const std::uint32_t luma = bo(160 * 120, 1, DRM_VREX_BO_STAGING);
    const std::uint32_t kv = bo(16384, 2);
    const auto f0 = frame(s, luma, 4, 0);
    drm_vrex_shie_insert_item it = insert_item(f0, kv, 0, 0);
    ASSERT_FALSE(be_->shie_insert(s, std::span(&it, 1)));
    ASSERT_EQ(it.result, 0);
    auto before = be_->stats();
    ASSERT_TRUE(before);
    drm_vrex_released_block rel[2]{};
    std::uint32_t n = 0;
    std::uint32_t released_at = 0;
    for (std::uint32_t i = 1; i <= info_.zombie_frames + 2 && !released_at; i++) {
        frame(s, luma, 4, i);
        ASSERT_FALSE(be_->shie_retire(s, {}, rel, n));
        if (n)
            released_at = i;
    }
    EXPECT_EQ(released_at, info_.zombie_frames + 1) << "cold for more than Z frames";
    EXPECT_EQ(rel[0].block, it.block);
    EXPECT_EQ(rel[0].reason, static_cast<std::uint32_t>(DRM_VREX_RELEASE_ZOMBIE));
    auto after = be_->stats();
    ASSERT_TRUE(after);
    EXPECT_EQ(after->evictions, before->evictions + 1);
    // Atomic with the SHIE entries: the entry is gone too.
    drm_vrex_shie_lookup_item q{};
    q.kind = DRM_VREX_LOOKUP_SIMILAR;
    q.fp[0] = f0.fp[0];
    q.fp[1] = f0.fp[1];
    ASSERT_FALSE(be_->shie_lookup(s, std::span(&q, 1)));
    EXPECT_EQ(q.hit_flags, 0u);
    EXPECT_FALSE(be_->stream_destroy(s));
    EXPECT_FALSE(be_->bo_destroy(kv)) << "no live block points into it any more";
    EXPECT_FALSE(be_->bo_destroy(luma));
}

TEST_P(BackendSeam, IdsAreIsolatedBetweenFiles)
{
    auto other = test::open_backend(GetParam());
    ASSERT_NE(other, nullptr);
    const std::uint32_t s = stream();
    const std::uint32_t h = bo(160 * 120);
    frame(s, h, 5, 0);
    EXPECT_EQ(other->stream_destroy(s), kNoent);
    EXPECT_EQ(other->bo_map(h).error(), kNoent);
    drm_vrex_frame_submit f{};
    f.stream = s;
    f.handle = h;
    f.width = f.stride = 160;
    f.height = 120;
    EXPECT_EQ(other->frame_submit(f), kNoent);
    std::uint32_t n = 0;
    EXPECT_EQ(other->shie_retire(s, {}, {}, n), kNoent);
    EXPECT_FALSE(be_->stream_destroy(s));
    EXPECT_FALSE(be_->bo_destroy(h));
}

TEST_P(BackendSeam, FrameEventsArriveOnTheEventFd)
{
    const std::uint32_t s = stream();
    const std::uint32_t h = bo(160 * 120);
    auto px = synthetic_frame(160, 120, 6, 0);
    std::memcpy(be_->bo_map(h)->data(), px.data(), px.size());
    drm_vrex_frame_submit f{};
    f.stream = s;
    f.handle = h;
    f.width = f.stride = 160;
    f.height = 120;
    f.flags = DRM_VREX_FRAME_EVENT;
    f.user_data = 0xabcdef;
    ASSERT_FALSE(be_->frame_submit(f));
    ASSERT_GE(be_->event_fd(), 0);
    pollfd pfd{be_->event_fd(), POLLIN, 0};
    ASSERT_EQ(poll(&pfd, 1, 1000), 1);
    drm_vrex_event_frame ev[2]{};
    auto n = be_->read_events(ev);
    ASSERT_TRUE(n);
    ASSERT_EQ(*n, 1u);
    EXPECT_EQ(ev[0].base.type, DRM_VREX_EVENT_FRAME_DONE);
    EXPECT_EQ(ev[0].user_data, 0xabcdefu);
    EXPECT_EQ(ev[0].fp[0], f.fp[0]);
    EXPECT_EQ(ev[0].frame, f.frame);
    EXPECT_EQ(ev[0].group, f.group);
    EXPECT_EQ(poll(&pfd, 1, 0), 0) << "drained";
    EXPECT_FALSE(be_->stream_destroy(s));
    EXPECT_FALSE(be_->bo_destroy(h));
}

TEST_P(BackendSeam, RegisterReadSeesTheIdAndRejectsBadOffsets)
{
    auto id = be_->reg_read(0);
    if (!id && (id.error() == std::errc::operation_not_permitted || id.error() == std::errc::permission_denied))
        GTEST_SKIP() << "needs CAP_SYS_ADMIN";
    ASSERT_TRUE(id);
    EXPECT_EQ(*id, 0x56524558u);
    EXPECT_EQ(be_->reg_read(2).error(), kInval);
    EXPECT_EQ(be_->reg_read(0x1000).error(), kInval);
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendSeam, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex
