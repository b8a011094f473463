// vrex::lcp::NativeDecoder's kernels against plain double-precision references, and the decoder's
// own rules that need no trained model (its equality with decoder.py: model/tests/test_native.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "native_kernels.hpp"
#include "vrex/lcp/native_decoder.hpp"

namespace vrex::lcp {
namespace {

std::vector<float> random_values(std::size_t n, unsigned seed) {
    std::mt19937 g(seed);
    std::normal_distribution<float> d;
    std::vector<float> v(n);
    for (auto& x : v) x = d(g);
    return v;
}

TEST(NativeKernels, MatmulEqualsTheDefinitionForEveryTileShape) {
    // Rows 1..9 cover the 4-row tiles and every tail; 20 columns a 16-column tile and a tail.
    for (std::size_t rows = 1; rows <= 9; rows++)
        for (const std::size_t n : {16UL, 20UL, 48UL})
            for (const bool acc : {false, true}) {
                const std::size_t k = 37, ldx = k + 3, ldy = n + 5;
                const auto x = random_values(rows * ldx, 1), w = random_values(k * n, 2);
                auto y = random_values(rows * ldy, 3);
                const auto y0 = y;
                native::matmul(x.data(), ldx, rows, w.data(), k, n, y.data(), ldy, acc);
                for (std::size_t r = 0; r < rows; r++)
                    for (std::size_t j = 0; j < ldy; j++) {
                        if (j >= n) {
                            EXPECT_EQ(y[r * ldy + j], y0[r * ldy + j]) << "wrote past the row";
                            continue;
                        }
                        double want = acc ? y0[r * ldy + j] : 0.0;
                        for (std::size_t i = 0; i < k; i++) want += double{x[r * ldx + i]} * w[i * n + j];
                        EXPECT_NEAR(y[r * ldy + j], want, 1e-4)
                            << rows << "x" << n << " at " << r << "," << j;
                    }
            }
}

TEST(NativeKernels, DotSoftmaxRotateAndNorm) {
    const auto a = random_values(35, 4), b = random_values(35, 5);
    double want = 0;
    for (std::size_t i = 0; i < a.size(); i++) want += double{a[i]} * b[i];
    EXPECT_NEAR(native::dot(a.data(), b.data(), a.size()), want, 1e-5);

    std::vector<float> s = {1.0F, -INFINITY, 3.0F, 0.5F};
    native::softmax(s.data(), s.size());
    const double z = std::exp(1.0) + std::exp(3.0) + std::exp(0.5);
    EXPECT_NEAR(s[0], std::exp(1.0) / z, 1e-6);
    EXPECT_EQ(s[1], 0.0F);
    EXPECT_NEAR(s[2], std::exp(3.0) / z, 1e-6);

    std::vector<float> x = {1, 2, 3, 4};  // pairs (0, 2) and (1, 3)
    const float cs[2] = {0.0F, 1.0F}, sn[2] = {1.0F, 0.0F};
    native::rotate(x.data(), cs, sn, 2);
    EXPECT_EQ(x, (std::vector<float>{-3, 2, 1, 4}));

    std::vector<float> y(4), w = {1, 1, 2, 2};
    const std::vector<float> r = {3, 4, 0, 0};
    native::rms_norm(r.data(), 4, 1, w.data(), 4, 0.0F, y.data(), 4);
    const float inv = 1.0F / std::sqrt(25.0F / 4.0F);
    EXPECT_FLOAT_EQ(y[0], 3 * inv);
    EXPECT_FLOAT_EQ(y[1], 4 * inv);
}

// attend_rows: a question's read over scattered cache rows (with repeats and out of order) against
// softmax(q . k + bias) . v in double, for every head_dim it specialises and one it does not.
TEST(NativeKernels, AttendRowsEqualsSoftmaxReadInDouble) {
    for (const std::size_t hd : {16UL, 32UL, 64UL, 24UL})
        for (const std::size_t m : {1UL, 7UL, 64UL, 260UL}) {
            const std::size_t rows_in_cache = 300;
            const auto k = random_values(rows_in_cache * hd, 20), v = random_values(rows_in_cache * hd, 21);
            const auto q = random_values(hd, 22), bias = random_values(m, 23);
            std::vector<std::int64_t> rows(m);
            for (std::size_t j = 0; j < m; j++)
                rows[j] = static_cast<std::int64_t>((j * 37 + 5) % rows_in_cache);
            std::vector<double> sd(m);
            double top = -INFINITY;
            for (std::size_t j = 0; j < m; j++) {
                double d = bias[j];
                for (std::size_t e = 0; e < hd; e++)
                    d += double{q[e]} * k[static_cast<std::size_t>(rows[j]) * hd + e];
                sd[j] = d;
                top = std::max(top, d);
            }
            double z = 0;
            for (auto& x : sd) z += (x = std::exp(x - top));
            std::vector<float> s(bias), out(hd + 1, 7.0F);
            native::attend_rows(q.data(), k.data(), v.data(), hd, rows.data(), m, s.data(), out.data());
            for (std::size_t e = 0; e < hd; e++) {
                double want = 0;
                for (std::size_t j = 0; j < m; j++)
                    want += sd[j] / z * v[static_cast<std::size_t>(rows[j]) * hd + e];
                EXPECT_NEAR(out[e], want, 1e-5) << "hd " << hd << " m " << m << " at " << e;
            }
            for (std::size_t j = 0; j < m; j++) EXPECT_NEAR(s[j], sd[j] / z, 1e-6) << "p[" << j << "]";
            EXPECT_EQ(out[hd], 7.0F) << "wrote past the output row";
        }
}

TEST(NativeKernels, RelBucketsAreDecoderPys) {
    // decoder.rel_bucket: 0, then floor(log2 |d|) + 1 clamped to 8 after, + 8 before the target.
    EXPECT_EQ(native::rel_bucket(0), 0U);
    EXPECT_EQ(native::rel_bucket(1), 1U);
    EXPECT_EQ(native::rel_bucket(3), 2U);
    EXPECT_EQ(native::rel_bucket(4), 3U);
    EXPECT_EQ(native::rel_bucket(127), 7U);
    EXPECT_EQ(native::rel_bucket(128), 8U);
    EXPECT_EQ(native::rel_bucket(100000), 8U);
    EXPECT_EQ(native::rel_bucket(-1), 9U);
    EXPECT_EQ(native::rel_bucket(-2), 10U);
    EXPECT_EQ(native::rel_bucket(-1000), 16U);
}

// A small random model: 2 layers, 2 heads over 1 KV head (grouped), 2 regions of 2 tokens.
NativeWeights small_model() {
    NativeWeights w;
    NativeConfig& c = w.c;
    c.feat_dim = 6;
    c.d_model = 8;
    c.layers = 2;
    c.heads = 2;
    c.kv_heads = 1;
    c.head_dim = 8;
    c.ffn = 12;
    c.regions = 2;
    c.tokens_per_region = 2;
    c.codes = 5;
    c.window = 2;
    c.question_reach = 1;
    c.rope_base = 1000.0;
    c.hash_bits = 32;
    w.rel_buckets = 17;
    unsigned seed = 10;
    auto rnd = [&](std::size_t n) { return random_values(n, seed++); };
    const std::size_t d = c.d_model, a = 16, kva = 8, n = 4;
    w.embed_w = rnd(c.feat_dim * d);
    w.embed_b = rnd(d);
    w.slot_embed = rnd(n * d);
    w.question_embed = rnd(c.regions * d);
    for (std::uint32_t l = 0; l < c.layers; l++)
        w.layers.push_back({rnd(d), rnd(d), rnd(d * a), rnd(d * kva), rnd(d * kva), rnd(a * d), rnd(d * 24),
                            rnd(12 * d), rnd(2 * 17), rnd(2 * 2 * n)});
    w.norm = rnd(d);
    w.head_w = rnd(d * c.feat_dim);
    w.head_b = rnd(c.feat_dim);
    w.logit_scale = 1.0F;
    w.gate = 0.5F;
    w.codebook_t = rnd(c.feat_dim * c.codes);
    w.planes_t = rnd(kva * 2 * 32);
    return w;
}

TEST(NativeDecoder, RefusesWeightsThatDoNotFitTheirConfig) {
    auto w = small_model();
    w.layers[1].wo.pop_back();
    try {
        NativeDecoder dec(w);
        FAIL() << "accepted a short wo";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("wo has 127 values, not 128"), std::string::npos) << e.what();
    }
    auto r = small_model();
    r.c.read_layer = 2;
    EXPECT_THROW(NativeDecoder{r}, std::invalid_argument);
}

TEST(NativeDecoder, AFullyReusedFrameIsItsBlocksAndABlindQuestionReadsNothing) {
    const NativeDecoder dec(small_model());
    const NativeConfig& c = dec.config();
    NativeScratch s;
    const std::size_t n = c.visual(), hd = c.head_dim, cap = 3 * n, block = 2 * 2 * 2 * hd;
    std::vector<float> k(c.layers * cap * hd, NAN), v(k.size(), NAN);
    const KvCacheView cache{k.data(), v.data(), cap};
    auto z = random_values(n * c.feat_dim, 30);
    std::vector<float> vis(n * c.d_model);
    dec.embed(z, vis);
    // Frame 0 computes both regions; frame 1 reuses them: its rows are the blocks' K rotated to
    // position 1 and their V, whatever the frame's tokens.
    std::vector<float> b0(block, NAN), b1(block, NAN);
    std::vector<float*> blocks = {b0.data(), b1.data()};
    const std::vector<std::uint32_t> both = {0, 1};
    dec.prefill(s, z, vis, both, blocks, cache, 0);
    for (float x : b0) ASSERT_FALSE(std::isnan(x));
    dec.prefill(s, random_values(z.size(), 31), vis, {}, blocks, cache, 1);
    const double inv = std::pow(1000.0, -2.0 / 8.0);
    for (std::size_t l = 0; l < c.layers; l++)
        for (std::size_t tok = 0; tok < n; tok++) {
            const float* bk = blocks[tok / 2] + (l * 2 * 2 + tok % 2) * hd;  // [L, 2, KVH=1, T=2, hd]
            const float* bv = bk + 2 * hd;
            const float* ck = k.data() + (l * cap + n + tok) * hd;
            const float* cv = v.data() + (l * cap + n + tok) * hd;
            EXPECT_NEAR(ck[0], bk[0] * std::cos(1.0) - bk[4] * std::sin(1.0), 1e-5);
            EXPECT_NEAR(ck[1], bk[1] * std::cos(inv) - bk[5] * std::sin(inv), 1e-5);
            for (std::size_t e = 0; e < hd; e++) EXPECT_EQ(cv[e], bv[e]);
        }
    // Layer 0's values are the tokens' features (value0), padded with zeros.
    for (std::size_t tok = 0; tok < n; tok++)
        for (std::size_t e = 0; e < hd; e++)
            EXPECT_EQ(v[tok * hd + e], e < c.feat_dim ? z[tok * c.feat_dim + e] : 0.0F);
    const std::vector<std::int64_t> region = {0, 1}, target = {1, 0}, toks = {-1, -1, 3, 5};
    const QuestionRead read{toks, 2};
    std::vector<float> logits(2 * c.codes, NAN);
    dec.ask(s, cache, 1, region, target, &read, logits);
    for (std::size_t i = 0; i < c.codes; i++) {
        EXPECT_EQ(logits[i], 0.0F) << "the blind question";
        EXPECT_TRUE(std::isfinite(logits[c.codes + i]) && logits[c.codes + i] != 0.0F);
    }
    const std::vector<std::int64_t> late = {8, 0};  // frame 2's token: not in the cache yet
    const QuestionRead bad{late, 1};
    EXPECT_THROW(dec.ask(s, cache, 1, region, target, &bad, logits), std::invalid_argument);
}

TEST(NativeDecoder, RewrittenPastRowsAreReadAfterCacheChanged) {
    const NativeDecoder dec(small_model());
    const NativeConfig& c = dec.config();
    const std::size_t n = c.visual(), hd = c.head_dim, cap = 3 * n, block = 2 * 2 * 2 * hd;
    std::vector<float> k(c.layers * cap * hd, 0.0F), v(k.size(), 0.0F);
    const KvCacheView cache{k.data(), v.data(), cap};
    NativeScratch s;
    std::vector<float> vis(n * c.d_model), b0(block), b1(block);
    std::vector<float*> blocks = {b0.data(), b1.data()};
    const std::vector<std::uint32_t> both = {0, 1};
    for (std::uint32_t t = 0; t < 2; t++) {
        const auto z = random_values(n * c.feat_dim, 40 + t);
        dec.embed(z, vis);
        dec.prefill(s, z, vis, both, blocks, cache, t);
    }
    const std::vector<std::int64_t> region = {0, 1}, target = {0, 1};
    std::vector<float> before(2 * c.codes), after(2 * c.codes), fresh(2 * c.codes);
    dec.ask(s, cache, 1, region, target, nullptr, before);  // reads (and transposes) frame 0's keys
    for (std::size_t i = 0; i < n * hd; i++) k[i] *= 3.0F;  // frame 0, layer 0: rewritten
    s.cache_changed();
    dec.ask(s, cache, 1, region, target, nullptr, after);
    NativeScratch other;
    dec.ask(other, cache, 1, region, target, nullptr, fresh);
    EXPECT_EQ(after, fresh);
    EXPECT_NE(after, before);
}

}  // namespace
}  // namespace vrex::lcp
