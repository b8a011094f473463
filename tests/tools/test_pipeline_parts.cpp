// Pipeline parts without video: region grid, PSNR, KV payload, reuse decisions, PNG, percentiles.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>

#include "pipeline/kv_payload.hpp"
#include "pipeline/luma.hpp"
#include "pipeline/metrics.hpp"
#include "pipeline/png.hpp"
#include "pipeline/reuse_policy.hpp"

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
    tmp.block.id = 2;
    tmp.block.data = b;

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
