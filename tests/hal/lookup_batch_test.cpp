// Conformance of SHIE lookup batches: a batch mixing many similarity items (grouped by the backend
// into LOOKUP_SIMILAR_BATCH commands, more than one command's worth), temporal items and queries
// the device refuses answers every item exactly as looking it up alone does, and moves the device
// counters the same way; a batch with one malformed item is refused whole and answers nothing.
// Runs once per available backend (the emulation here, vrex.ko inside the QEMU guests).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <random>
#include <vector>

#include "backends.hpp"
#include "frames.hpp"

namespace vrex {
namespace {

const std::error_code kInval = std::make_error_code(std::errc::invalid_argument);

class LookupBatch : public ::testing::TestWithParam<std::string> {
  protected:
    static constexpr std::uint32_t kFrames = 3;
    static constexpr std::uint32_t kPool = 7;

    void SetUp() override {
        be_ = test::open_backend(GetParam());
        ASSERT_NE(be_, nullptr);
        auto info = be_->device_info();
        ASSERT_TRUE(info);
        kv_size_ = std::min<std::uint64_t>(info->bank_size, 256 * 1024);
        kv_ = bo(kv_size_);
        luma_ = bo(160 * 120);
        a_ = stream();
        b_ = stream();
        fresh_ = stream();  // in the pool, never framed
        for (std::uint32_t f = 0; f < kFrames; f++) {
            for (std::uint32_t s : {a_, b_}) fill(s, f);
        }
    }

    std::uint32_t bo(std::uint64_t size) {
        drm_vrex_bo_create a{};
        a.size = size;
        a.bank_mask = 1;
        a.flags = DRM_VREX_BO_KV;
        EXPECT_FALSE(be_->bo_create(a));
        return a.handle;
    }
    std::uint32_t stream() {
        drm_vrex_stream_create a{};
        a.flags = DRM_VREX_STREAM_POOLED;
        a.pool = kPool;
        EXPECT_FALSE(be_->stream_create(a));
        return a.stream;
    }
    // A frame on @s, then 16 entries whose codes are the frame's with a few region-dependent flips,
    // so that lookups find near and exact neighbours across regions, frames and streams.
    void fill(std::uint32_t s, std::uint32_t f) {
        drm_vrex_frame_submit fs{};
        ASSERT_FALSE(test::submit_synthetic_frame(*be_, s, luma_, f % 2 + (s == b_ ? 5 : 0), f, fs));
        std::vector<drm_vrex_shie_insert_item> items(DRM_VREX_REGIONS);
        const std::uint64_t len = kv_size_ / (2 * kFrames * DRM_VREX_REGIONS);
        for (std::uint32_t r = 0; r < DRM_VREX_REGIONS; r++) {
            drm_vrex_shie_insert_item& it = items[r];
            it.fp[0] = fs.fp[0] ^ (std::uint64_t{0x10001} << (r % 8));
            it.fp[1] = fs.fp[1] ^ (std::uint64_t{r % 3} << 40);
            it.handle = kv_;
            it.offset = next_kv_;
            it.length = len;
            it.region = r;
            next_kv_ += len;
            codes_.push_back({it.fp[0], it.fp[1]});
        }
        ASSERT_FALSE(be_->shie_insert(s, items));
        for (const auto& it : items) ASSERT_EQ(it.result, 0);
    }

    drm_vrex_shie_lookup_item similar() {
        drm_vrex_shie_lookup_item q{};
        q.kind = DRM_VREX_LOOKUP_SIMILAR;
        q.region = rng_() % DRM_VREX_REGIONS;
        q.radius = rng_() % (DRM_VREX_MAX_RADIUS + 1);
        q.flags = rng_() % 4 == 0 ? 0 : DRM_VREX_LOOKUP_SCOPE_POOL;
        if (rng_() % 3 == 0) q.flags |= DRM_VREX_LOOKUP_PAST_ONLY;
        const auto& c = codes_[rng_() % codes_.size()];
        q.fp[0] = c[0];
        q.fp[1] = c[1];
        for (std::uint32_t n = rng_() % 24; n; n--) {
            const std::uint32_t bit = rng_() % 128;
            q.fp[bit / 64] ^= std::uint64_t{1} << (bit % 64);
        }
        if (rng_() % 10 == 0) {  // unrelated code: a miss at any radius
            q.fp[0] = (std::uint64_t{rng_()} << 32) | rng_();
            q.fp[1] = (std::uint64_t{rng_()} << 32) | rng_();
        }
        return q;
    }
    drm_vrex_shie_lookup_item temporal() {
        drm_vrex_shie_lookup_item q{};
        q.kind = DRM_VREX_LOOKUP_TEMPORAL;
        q.region = rng_() % DRM_VREX_REGIONS;
        q.frame_offset = -static_cast<std::int32_t>(rng_() % 4);
        return q;
    }

    drm_vrex_stats stats() {
        auto s = be_->stats();
        EXPECT_TRUE(s);
        return s ? *s : drm_vrex_stats{};
    }

    // Looks @batch up on @s as one batch and item by item; both must give the same answers and
    // move the lookup counters alike. Returns the batch's hits.
    std::uint32_t check(std::uint32_t s, std::vector<drm_vrex_shie_lookup_item> batch) {
        std::vector<drm_vrex_shie_lookup_item> alone = batch;
        const drm_vrex_stats s0 = stats();
        EXPECT_FALSE(be_->shie_lookup(s, batch));
        const drm_vrex_stats s1 = stats();
        for (auto& it : alone) EXPECT_FALSE(be_->shie_lookup(s, std::span(&it, 1)));
        const drm_vrex_stats s2 = stats();

        std::uint32_t hits = 0;
        for (std::size_t i = 0; i < batch.size(); i++) {
            const auto& x = batch[i];
            const auto& y = alone[i];
            EXPECT_EQ(0, std::memcmp(&x, &y, sizeof(x)))
                << "item " << i << " kind " << x.kind << " flags " << x.flags << " radius " << x.radius
                << ": batch hit " << x.hit_flags << " block " << x.block << " dist " << x.distance
                << " stream " << x.stream << ", alone hit " << y.hit_flags << " block " << y.block << " dist "
                << y.distance << " stream " << y.stream;
            hits += (x.hit_flags & DRM_VREX_HIT) != 0;
        }
        EXPECT_EQ(s1.lookups - s0.lookups, s2.lookups - s1.lookups);
        EXPECT_EQ(s1.exact_hits - s0.exact_hits, s2.exact_hits - s1.exact_hits);
        EXPECT_EQ(s1.approx_hits - s0.approx_hits, s2.approx_hits - s1.approx_hits);
        EXPECT_EQ(s1.misses - s0.misses, s2.misses - s1.misses);
        return hits;
    }

    std::unique_ptr<Backend> be_;
    std::uint64_t kv_size_ = 0;
    std::uint64_t next_kv_ = 0;
    std::uint32_t kv_ = 0, luma_ = 0, a_ = 0, b_ = 0, fresh_ = 0;
    std::vector<std::array<std::uint64_t, 2>> codes_;
    std::mt19937 rng_{20261130};
};

TEST_P(LookupBatch, ManySimilarItemsMixedWithTemporalOnesAnswerAsAlone) {
    for (std::uint32_t round = 0; round < 4; round++) {
        // Over 64 similarity items: at least two device batch commands, and a remainder.
        std::vector<drm_vrex_shie_lookup_item> batch;
        for (std::uint32_t i = 0; i < 150; i++) batch.push_back(i % 5 == 4 ? temporal() : similar());
        std::uint32_t approx = 0, misses = 0, pooled = 0;
        const std::uint32_t hits = check(round % 2 ? b_ : a_, batch);
        // Count outcome kinds on a second identical run (answers are deterministic).
        ASSERT_FALSE(be_->shie_lookup(round % 2 ? b_ : a_, batch));
        for (const auto& it : batch) {
            approx += (it.hit_flags & DRM_VREX_HIT_APPROX) != 0;
            misses += !(it.hit_flags & DRM_VREX_HIT);
            pooled += (it.hit_flags & DRM_VREX_HIT) && it.stream != (round % 2 ? b_ : a_);
        }
        // Every kind of answer occurred, else the comparison proves little.
        EXPECT_GT(hits, 20u) << "round " << round;
        EXPECT_GT(approx, 0u) << "round " << round;
        EXPECT_GT(misses, 0u) << "round " << round;
        EXPECT_GT(pooled, 0u) << "round " << round << ": no pool-scoped hit on the other stream";
    }
}

TEST_P(LookupBatch, QueriesTheDeviceRefusesAreMissesAsAlone) {
    // The never-framed stream: PAST_ONLY is refused by the device (a miss), pool scope still finds
    // the other streams' entries.
    std::vector<drm_vrex_shie_lookup_item> batch;
    std::uint32_t past_only = 0;
    for (std::uint32_t i = 0; i < 80; i++) {
        drm_vrex_shie_lookup_item q = i % 7 == 6 ? temporal() : similar();
        past_only += (q.flags & DRM_VREX_LOOKUP_PAST_ONLY) != 0;
        batch.push_back(q);
    }
    ASSERT_GT(past_only, 0u);
    EXPECT_GT(check(fresh_, batch), 0u);
    for (const auto& it : batch) {
        if (it.flags & DRM_VREX_LOOKUP_PAST_ONLY || it.kind == DRM_VREX_LOOKUP_TEMPORAL) {
            EXPECT_EQ(it.hit_flags, 0u);
        }
    }
}

TEST_P(LookupBatch, OneMalformedItemRefusesTheWholeBatch) {
    struct Spoil {
        const char* what;
        void (*apply)(drm_vrex_shie_lookup_item&);
    };
    const Spoil spoils[] = {
        {"radius 32", [](drm_vrex_shie_lookup_item& q) { q.radius = DRM_VREX_MAX_RADIUS + 1; }},
        {"region 16", [](drm_vrex_shie_lookup_item& q) { q.region = DRM_VREX_REGIONS; }},
        {"unknown flag", [](drm_vrex_shie_lookup_item& q) { q.flags = 0x80; }},
        {"frame offset on a similarity item", [](drm_vrex_shie_lookup_item& q) { q.frame_offset = -1; }},
        {"unknown kind", [](drm_vrex_shie_lookup_item& q) { q.kind = 7; }},
        {"pad", [](drm_vrex_shie_lookup_item& q) { q.pad = 1; }},
    };
    for (const Spoil& sp : spoils) {
        std::vector<drm_vrex_shie_lookup_item> batch;
        for (std::uint32_t i = 0; i < 100; i++) batch.push_back(i % 4 == 3 ? temporal() : similar());
        for (auto& it : batch) {
            it.hit_flags = 0xdead;  // the caller's bytes stay as they were
            it.block = 0xbeef;
        }
        sp.apply(batch[90]);
        const std::vector<drm_vrex_shie_lookup_item> before = batch;
        const drm_vrex_stats s0 = stats();
        EXPECT_EQ(be_->shie_lookup(a_, batch), kInval) << sp.what;
        const drm_vrex_stats s1 = stats();
        EXPECT_EQ(0, std::memcmp(before.data(), batch.data(), batch.size() * sizeof(batch[0]))) << sp.what;
        EXPECT_EQ(s0.lookups, s1.lookups) << sp.what << ": no lookup ran";
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, LookupBatch, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex
