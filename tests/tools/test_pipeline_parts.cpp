// Pipeline parts without video: region grid, PSNR, KV payload, reuse decisions, PNG, percentiles.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>

#include "pipeline/kv_payload.hpp"
#include "pipeline/luma.hpp"
#include "pipeline/metrics.hpp"
#include "pipeline/png.hpp"
#include "pipeline/reuse_policy.hpp"
#include "pipeline/window_ledger.hpp"

using namespace vrex::pipeline;

namespace {

LumaFrame pattern(std::uint32_t w, std::uint32_t h, int noise) {
    LumaFrame f{w, h, std::vector<std::uint8_t>(std::size_t{w} * h)};
    for (std::uint32_t y = 0; y < h; y++)
        for (std::uint32_t x = 0; x < w; x++)
            f.px[std::size_t{y} * w + x] =
                static_cast<std::uint8_t>((x * 3 + y * 5) % 200 + ((x ^ y) & 1) * noise);
    return f;
}

}  // namespace

TEST(Regions, TileThePlaneExactly) {
    std::uint64_t area = 0;
    for (std::uint32_t r = 0; r < kRegions; r++) {
        const RegionRect rc = region_rect(770, 579, r);
        area += std::uint64_t{rc.w} * rc.h;
        EXPECT_LE(rc.x + rc.w, 770u);
        EXPECT_LE(rc.y + rc.h, 579u);
    }
    EXPECT_EQ(area, 770u * 579u);
    EXPECT_EQ(region_rect(770, 579, 15).w, 770u - 3 * 192);
}

TEST(Psnr, IdenticalIsCappedAndNoiseLowersIt) {
    const LumaFrame a = pattern(64, 64, 0), b = pattern(64, 64, 8);
    EXPECT_EQ(psnr(a.px.data(), 64, a.px.data(), 64, 64, 64), kPsnrIdentical);
    // Half the pixels off by 8: MSE 32 -> 10 log10(255^2 / 32) = 33.1 dB.
    EXPECT_NEAR(psnr(a.px.data(), 64, b.px.data(), 64, 64, 64), 33.1, 0.1);
}

TEST(KvPayload, RoundTripsThroughABlockAndSubsamplesWhenSmall) {
    const LumaFrame f = pattern(256, 192, 0);
    std::vector<std::byte> big(64 * 1024), small(sizeof(PayloadHeader) + 1000);
    PayloadHeader h;
    h.stream = 2;
    h.frame = 7;
    h.step = 9;
    ASSERT_TRUE(write_payload(big, f, 5, h));
    ASSERT_TRUE(write_payload(small, f, 5, h));
    EXPECT_EQ(read_payload_header(big)->sub, 1u);
    EXPECT_GT(read_payload_header(small)->sub, 1u);
    EXPECT_EQ(read_payload_header(big)->frame, 7u);
    EXPECT_EQ(*payload_psnr(big, f, 5), kPsnrIdentical);
    EXPECT_EQ(*payload_psnr(small, f, 5), kPsnrIdentical);
    EXPECT_FALSE(payload_psnr(big, f, 6).has_value());  // a block of another region
    std::vector<std::byte> empty(4096);
    EXPECT_FALSE(read_payload_header(empty).has_value());
}

TEST(ReusePolicy, GuardAgeAndBestCandidate) {
    const LumaFrame then = pattern(256, 192, 0), now = pattern(256, 192, 8), far = pattern(256, 192, 60);
    std::vector<std::byte> a(64 * 1024), b(64 * 1024);
    PayloadHeader h;
    h.step = 10;
    ASSERT_TRUE(write_payload(a, then, 3, h));
    ASSERT_TRUE(write_payload(b, now, 3, h));
    vrex::Retrieval sim, tmp, miss;
    sim.hit = tmp.hit = true;
    sim.approximate = true;
    sim.distance = 4;
    sim.block.id = 1;
    sim.block.data = a;
    sim.block.view = a;
    tmp.block.id = 2;
    tmp.block.data = b;
    tmp.block.view = b;

    ReusePolicy p{30.0, 30};
    auto d = decide_reuse(p, now, 3, 12, sim, tmp);
    ASSERT_EQ(d.outcome, ReuseDecision::Outcome::reuse);
    EXPECT_EQ(d.block.id, 2u);  // the identical temporal block beats the 33 dB similar one
    EXPECT_FALSE(d.from_similar);

    d = decide_reuse(p, now, 3, 12, sim, miss);
    ASSERT_EQ(d.outcome, ReuseDecision::Outcome::reuse);
    EXPECT_TRUE(d.approximate);
    EXPECT_NEAR(d.psnr, 33.1, 0.1);

    EXPECT_EQ(decide_reuse(ReusePolicy{40.0, 30}, now, 3, 12, sim, miss).outcome,
              ReuseDecision::Outcome::guard_rejected);
    EXPECT_EQ(decide_reuse(p, far, 3, 12, sim, miss).outcome, ReuseDecision::Outcome::guard_rejected);
    EXPECT_EQ(decide_reuse(p, now, 3, 41, sim, miss).outcome, ReuseDecision::Outcome::too_old);
    EXPECT_EQ(decide_reuse(p, now, 3, 12, miss, miss).outcome, ReuseDecision::Outcome::no_candidate);
}

TEST(ReusePolicy, ChainKeepsThePreviousFramesBlockWhenItPasses) {
    const LumaFrame then = pattern(256, 192, 0), now = pattern(256, 192, 8);
    std::vector<std::byte> a(64 * 1024), b(64 * 1024);
    PayloadHeader h;
    h.step = 10;
    ASSERT_TRUE(write_payload(a, now, 3, h));   // similar: identical luma
    ASSERT_TRUE(write_payload(b, then, 3, h));  // temporal: 33 dB, passes a 30 dB guard
    vrex::Retrieval sim, tmp;
    sim.hit = tmp.hit = true;
    sim.block.id = 1;
    sim.block.data = a;
    sim.block.view = a;
    tmp.block.id = 2;
    tmp.block.data = b;
    tmp.block.view = b;

    ReusePolicy chain{30.0, 30, true};
    auto d = decide_reuse(chain, now, 3, 12, sim, tmp);
    ASSERT_EQ(d.outcome, ReuseDecision::Outcome::reuse);
    EXPECT_EQ(d.block.id, 2u);
    EXPECT_NEAR(d.psnr, 33.1, 0.1);

    ReusePolicy best{30.0, 30, false};
    EXPECT_EQ(decide_reuse(best, now, 3, 12, sim, tmp).block.id, 1u);
    // A temporal candidate below the guard never wins, chain or not.
    EXPECT_EQ(decide_reuse(ReusePolicy{35.0, 30, true}, now, 3, 12, sim, tmp).block.id, 1u);
}

// Both lookups offering the same block (a static region: the similarity lookup finds the previous
// frame's entry, usually at distance > 0) is a temporal reuse: the temporal lookup alone would have
// found it, whatever the radius. Crediting the similarity lookup made the demo say most reuse came
// from approximate similarity hits while a radius-0 control reused exactly as much.
TEST(ReusePolicy, ABlockBothLookupsOfferIsCreditedToTheTemporalLookup) {
    const LumaFrame then = pattern(256, 192, 0), now = pattern(256, 192, 8);
    std::vector<std::byte> a(64 * 1024);
    PayloadHeader h;
    h.step = 10;
    ASSERT_TRUE(write_payload(a, then, 3, h));
    vrex::Retrieval sim, tmp, miss;
    sim.hit = tmp.hit = true;
    sim.approximate = true;
    sim.distance = 6;
    sim.block.id = tmp.block.id = 7;
    sim.block.data = tmp.block.data = a;
    sim.block.view = tmp.block.view = a;

    for (const bool chain : {true, false}) {
        const auto d = decide_reuse(ReusePolicy{30.0, 30, chain}, now, 3, 12, sim, tmp);
        ASSERT_EQ(d.outcome, ReuseDecision::Outcome::reuse);
        EXPECT_EQ(d.block.id, 7u);
        EXPECT_FALSE(d.from_similar) << "chain " << chain;
        EXPECT_FALSE(d.approximate) << "chain " << chain;
    }
    // Only the similarity lookup offers it: a similarity reuse, approximate at distance 6.
    const auto d = decide_reuse(ReusePolicy{30.0, 30, true}, now, 3, 12, sim, miss);
    ASSERT_EQ(d.outcome, ReuseDecision::Outcome::reuse);
    EXPECT_TRUE(d.from_similar);
    EXPECT_TRUE(d.approximate);
    EXPECT_EQ(d.distance, 6u);
}

TEST(WindowLedger, ReleasesOnlyBlocksNoFrameOfTheWindowReferences) {
    WindowLedger l(6);  // Z = 5
    vrex::KvBlock b0, b1, b2;
    b0.id = 10;
    b1.id = 11;
    b2.id = 12;
    l.allocated(b0, 0, 0);
    l.allocated(b1, 0, 0);
    l.allocated(b2, 1, 2);
    l.referenced(11, 4);  // frame 4 aliases b1
    for (std::uint32_t step = 0; step < 6; step++) EXPECT_TRUE(l.take_due(0, step).empty()) << step;
    // After step 6 the window is steps 1..6: b0 (last used at 0) goes, b1 (used at 4) stays.
    auto due = l.take_due(0, 6);
    ASSERT_EQ(due.size(), 1u);
    EXPECT_EQ(due[0].id, 10u);
    EXPECT_TRUE(l.take_due(0, 6).empty());  // forgotten once handed out
    EXPECT_TRUE(l.take_due(0, 9).empty());  // b1 used at 4: needed through step 9
    EXPECT_EQ(l.take_due(0, 10).size(), 1u);
    // Only the owner gets its blocks.
    EXPECT_TRUE(l.take_due(0, 100).empty());
    EXPECT_EQ(l.take_due(1, 100).size(), 1u);
    EXPECT_EQ(l.tracked(), 0u);
    EXPECT_THROW(l.referenced(10, 20), std::logic_error);  // reuse of a released block
    l.allocated(b0, 0, 30);                                // the id comes back after its release
    EXPECT_THROW(l.allocated(b0, 0, 31), std::logic_error);
}

TEST(Png, ValidSignatureHeaderAndPixels) {
    std::vector<std::uint8_t> rgb(5 * 3 * 3);
    for (std::size_t i = 0; i < rgb.size(); i++) rgb[i] = static_cast<std::uint8_t>(i * 11);
    const auto png = encode_png_rgb(5, 3, rgb);
    ASSERT_GT(png.size(), 33u);
    EXPECT_EQ(std::memcmp(png.data(), "\x89PNG\r\n\x1a\n", 8), 0);
    EXPECT_EQ(std::memcmp(png.data() + 12, "IHDR", 4), 0);
    EXPECT_EQ(png[19], 5);  // width, big endian
    EXPECT_EQ(png[23], 3);  // height
    // IDAT inflates back to the filtered rows.
    const std::uint32_t idat_len = (png[33] << 24) | (png[34] << 16) | (png[35] << 8) | png[36];
    ASSERT_EQ(std::memcmp(png.data() + 37, "IDAT", 4), 0);
    std::vector<std::uint8_t> raw(3 * (1 + 15));
    uLongf n = raw.size();
    ASSERT_EQ(uncompress(raw.data(), &n, png.data() + 41, idat_len), Z_OK);
    ASSERT_EQ(n, raw.size());
    EXPECT_EQ(raw[0], 0);
    EXPECT_EQ(raw[1 + 4], rgb[4]);
    EXPECT_EQ(raw[16 + 1 + 2], rgb[15 + 2]);
    EXPECT_EQ(base64(std::vector<std::uint8_t>{'M', 'a'}), "TWE=");
}

TEST(Metrics, PercentilesInterpolate) {
    EXPECT_EQ(percentile({}, 0.5), 0.0);
    EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 0.5), 2.5);
    EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 0.0), 1.0);
    EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 1.0), 5.0);
}
