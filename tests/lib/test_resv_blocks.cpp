// Position-aware WiCSum over blocks (lib/resv.c vrex_resv_select_blocks) against a C++ reference:
// every block's weight summed in 128-bit arithmetic, the blocks stably sorted heaviest first, the
// shortest prefix whose sum reaches ratio x total. Many seeds, with ties and zero position weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

extern "C" {
#include "resv.h"
}

namespace {

struct Query {
    std::vector<uint32_t> hash, pos;
    std::vector<uint16_t> lut;
    uint32_t n = 0, tpb = 1, qhash = 0, ratio = 0;
};

std::vector<uint32_t> reference(const Query& q) {
    const uint32_t nb = q.n / q.tpb;
    std::vector<unsigned __int128> w(nb, 0);
    unsigned __int128 total = 0;
    for (uint32_t i = 0; i < q.n; i++) {
        const auto d = static_cast<uint32_t>(std::popcount(q.hash[i] ^ q.qhash));
        w[i / q.tpb] += static_cast<unsigned __int128>(q.lut[d]) * q.pos[i];
        total += static_cast<unsigned __int128>(q.lut[d]) * q.pos[i];
    }
    std::vector<uint32_t> order(nb);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return w[a] > w[b]; });
    std::vector<uint32_t> out;
    unsigned __int128 cum = 0;
    for (uint32_t b : order) {
        if (total == 0 || cum * VREX_RESV_RATIO_ONE >= total * q.ratio) break;
        cum += w[b];
        out.push_back(b);
    }
    return out;
}

std::vector<uint32_t> select(const Query& q, int* rc) {
    std::vector<uint64_t> scratch(q.n / std::max(q.tpb, 1u) + 1);
    std::vector<uint32_t> out(q.n + 1);
    uint32_t nsel = 0;
    *rc = vrex_resv_select_blocks(q.hash.data(), q.pos.data(), q.n, q.tpb, q.qhash, q.lut.data(), q.ratio,
                                  scratch.data(), out.data(), static_cast<uint32_t>(out.size()), &nsel);
    out.resize(*rc ? 0 : nsel);
    return out;
}

Query random_query(std::mt19937_64& rng) {
    Query q;
    q.tpb = 1 + static_cast<uint32_t>(rng() % 8);
    q.n = q.tpb * (1 + static_cast<uint32_t>(rng() % 200));
    q.qhash = static_cast<uint32_t>(rng());
    const uint32_t spread = 1 + static_cast<uint32_t>(rng() % 32);  // few distinct hashes: ties
    for (uint32_t i = 0; i < q.n; i++) {
        q.hash.push_back(q.qhash ^ static_cast<uint32_t>(rng() % spread) ^ (rng() % 3 ? 0u : 0xf0f0f0f0u));
        const uint64_t r = rng() % 4;
        q.pos.push_back(r == 0   ? 0u
                        : r == 1 ? VREX_RESV_POS_ONE
                                 : static_cast<uint32_t>(rng() % VREX_RESV_POS_ONE));
    }
    for (uint32_t d = 0; d < VREX_RESV_LUT_SIZE; d++) q.lut.push_back(static_cast<uint16_t>(rng() % 65536));
    q.ratio = static_cast<uint32_t>(rng() % (VREX_RESV_RATIO_ONE + 1));
    return q;
}

TEST(ResvBlocks, MatchesSortedPrefixReference) {
    for (uint64_t seed = 0; seed < 300; seed++) {
        std::mt19937_64 rng(seed);
        const Query q = random_query(rng);
        int rc = -1;
        const auto got = select(q, &rc);
        ASSERT_EQ(rc, 0) << "seed " << seed;
        EXPECT_EQ(got, reference(q)) << "seed " << seed;
    }
}

TEST(ResvBlocks, PositionWeightDecidesWhenHashesTie) {
    // Four blocks of two tokens, every key at the query's hash: the position table alone ranks them.
    Query q;
    q.n = 8;
    q.tpb = 2;
    q.hash.assign(8, 0x1234u);
    q.qhash = 0x1234u;
    q.lut.assign(VREX_RESV_LUT_SIZE, 1000);
    q.pos = {10, 10, 0, 0, VREX_RESV_POS_ONE, VREX_RESV_POS_ONE, 100, 100};
    q.ratio = VREX_RESV_RATIO_ONE / 2;
    int rc = -1;
    EXPECT_EQ(select(q, &rc), std::vector<uint32_t>{2});
    q.ratio = VREX_RESV_RATIO_ONE;  // everything of positive weight, heaviest first; block 1 weighs 0
    EXPECT_EQ(select(q, &rc), (std::vector<uint32_t>{2, 3, 0}));
    q.ratio = 0;
    EXPECT_TRUE(select(q, &rc).empty());
    q.ratio = VREX_RESV_RATIO_ONE;
    q.pos.assign(8, 0);  // no mass at all: nothing to select
    EXPECT_TRUE(select(q, &rc).empty());
    EXPECT_EQ(rc, 0);
}

TEST(ResvBlocks, CountsBeyondMaxAndRejectsBadInput) {
    Query q;
    q.n = 4;
    q.tpb = 1;
    q.hash.assign(4, 0);
    q.pos.assign(4, VREX_RESV_POS_ONE);
    q.lut.assign(VREX_RESV_LUT_SIZE, 7);
    q.ratio = VREX_RESV_RATIO_ONE;
    uint64_t scratch[4];
    uint32_t out[2] = {99, 99}, nsel = 0;
    ASSERT_EQ(vrex_resv_select_blocks(q.hash.data(), q.pos.data(), 4, 1, 0, q.lut.data(), q.ratio, scratch,
                                      out, 2, &nsel),
              0);
    EXPECT_EQ(nsel, 4u);  // all four, two written
    EXPECT_EQ(out[0], 0u);
    EXPECT_EQ(out[1], 1u);
    int rc = 0;
    Query bad = q;
    bad.tpb = 3;  // 4 tokens are not whole blocks of 3
    select(bad, &rc);
    EXPECT_EQ(rc, VREX_EINVAL);
    bad = q;
    bad.pos[2] = VREX_RESV_POS_ONE + 1;
    select(bad, &rc);
    EXPECT_EQ(rc, VREX_EINVAL);
    bad = q;
    bad.ratio = VREX_RESV_RATIO_ONE + 1;
    select(bad, &rc);
    EXPECT_EQ(rc, VREX_EINVAL);
    bad = q;
    bad.tpb = 0;
    select(bad, &rc);
    EXPECT_EQ(rc, VREX_EINVAL);
    EXPECT_EQ(vrex_resv_select_blocks(q.hash.data(), q.pos.data(), VREX_RESV_BLOCKS_MAX_TOKENS + 1, 1, 0,
                                      q.lut.data(), q.ratio, scratch, out, 2, &nsel),
              VREX_EINVAL);
}

}  // namespace
