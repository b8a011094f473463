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
    // Rows 1..9 cover the 4-row tiles and every tail; 20 columns a 16-column tile and a tail; 48
    // and 80 the 32-column tiles of the AVX-512 path (where the CPU has it) with 16 columns past them.
    for (std::size_t rows = 1; rows <= 9; rows++)
        for (const std::size_t n : {16UL, 20UL, 48UL, 80UL})
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

// The RoPE tables of decoder.rope_tables at distance @d (negative too): cos then sin, [hd / 2] each.
std::vector<float> rope_at(std::int64_t d, std::size_t hd) {
    std::vector<float> r(hd);
    for (std::size_t i = 0; i < hd / 2; i++) {
        const double ang = static_cast<double>(d) * std::pow(1000.0, -static_cast<double>(i) * 2.0 / hd);
        r[i] = static_cast<float>(std::cos(ang));
        r[hd / 2 + i] = static_cast<float>(std::sin(ang));
    }
    return r;
}

// decoder.rotate in double: pairs (i, i + hd / 2) by the angle of position @pos.
std::vector<double> rotated(const float* x, std::int64_t pos, std::size_t hd) {
    std::vector<double> y(hd);
    for (std::size_t i = 0; i < hd / 2; i++) {
        const double ang = static_cast<double>(pos) * std::pow(1000.0, -static_cast<double>(i) * 2.0 / hd);
        y[i] = x[i] * std::cos(ang) - x[hd / 2 + i] * std::sin(ang);
        y[hd / 2 + i] = x[i] * std::sin(ang) + x[hd / 2 + i] * std::cos(ang);
    }
    return y;
}

// attend_runs as the paged read uses it: @nq queries at position pos over runs of rows of blocks of
// several frames, read in place (pointers and offsets into [L][K, V][KVH][T][hd] blocks, runs
// partial, out of order, repeated, frames before and after pos), each query rotated per frame by
// its distance (R(pos - frame) q): against the softmax read over keys rotated explicitly to their
// frame's position and the query to pos, in double -- the RoPE identity the paged cache rests on.
// 1, 2, 3 and 5 queries: the 4-key x 2-query score tiles, an odd last query, and the value tiles.
TEST(NativeKernels, AttendRunsWithPerFrameQueriesEqualsTheReadOverRotatedKeys) {
    for (const std::size_t hd : {16UL, 32UL, 64UL, 24UL})
        for (const std::size_t nq : {1UL, 2UL, 3UL, 5UL}) {
            const std::size_t L = 2, kvh = 2, T = 4, block = L * 2 * kvh * T * hd, frames = 6, regions = 3;
            const std::int64_t pos = 3;
            std::vector<std::vector<float>> blocks;
            for (std::size_t b = 0; b < frames * regions; b++)
                blocks.push_back(random_values(block, static_cast<unsigned>(50 + b)));
            std::vector<std::vector<float>> q;
            for (std::size_t i = 0; i < nq; i++)
                q.push_back(random_values(hd, static_cast<unsigned>(24 + i)));
            // Frames 5, 0, 3, 2 (order of first read): their rotated query groups 0 .. 3.
            const std::vector<std::int64_t> frame_of = {5, 0, 3, 2};
            std::vector<float> qs(frame_of.size() * nq * hd);
            for (std::size_t k = 0; k < frame_of.size(); k++)
                for (std::size_t i = 0; i < nq; i++) {
                    float* qk = qs.data() + (k * nq + i) * hd;
                    std::copy(q[i].begin(), q[i].end(), qk);
                    const auto rope = rope_at(pos - frame_of[k], hd);
                    native::rotate(qk, rope.data(), rope.data() + hd / 2, hd / 2);
                }
            struct Pick {
                std::size_t query, region, row, rows;
            };
            const std::vector<Pick> picks = {{0, 2, 0, 4}, {1, 1, 1, 2}, {2, 0, 0, 4}, {2, 1, 3, 1},
                                             {0, 2, 0, 4}, {3, 2, 2, 2}, {1, 0, 0, 1}};
            std::vector<native::KeyRun> runs;
            for (const Pick& p : picks)
                runs.push_back(
                    {blocks[static_cast<std::size_t>(frame_of[p.query]) * regions + p.region].data(),
                     static_cast<std::uint32_t>(p.row), static_cast<std::uint32_t>(p.rows),
                     static_cast<std::uint32_t>(p.query)});
            const std::size_t l = 1, kv = 1, koff = ((l * 2) * kvh + kv) * T * hd,
                              voff = ((l * 2 + 1) * kvh + kv) * T * hd;
            std::vector<const float*> krow, vrow;
            std::vector<std::int64_t> kframe;
            for (const native::KeyRun& r : runs)
                for (std::size_t e = 0; e < r.rows; e++) {
                    krow.push_back(r.block + koff + (r.row + e) * hd);
                    vrow.push_back(r.block + voff + (r.row + e) * hd);
                    kframe.push_back(frame_of[r.query]);
                }
            const std::size_t m = krow.size(), ldo = hd + 3;
            const auto bias = random_values(nq * m, 25);
            std::vector<float> s(bias), out(nq * ldo, 7.0F);
            native::attend_runs(qs.data(), nq, koff, voff, hd, runs.data(), runs.size(), m, s.data(),
                                out.data(), ldo);
            for (std::size_t i = 0; i < nq; i++) {
                const auto qd = rotated(q[i].data(), pos, hd);
                std::vector<double> sd(m);
                double top = -INFINITY;
                for (std::size_t j = 0; j < m; j++) {
                    const auto kd = rotated(krow[j], kframe[j], hd);
                    double d = bias[i * m + j];
                    for (std::size_t e = 0; e < hd; e++) d += qd[e] * kd[e];
                    sd[j] = d;
                    top = std::max(top, d);
                }
                double z = 0;
                for (auto& x : sd) z += (x = std::exp(x - top));
                for (std::size_t e = 0; e < hd; e++) {
                    double want = 0;
                    for (std::size_t j = 0; j < m; j++) want += sd[j] / z * vrow[j][e];
                    EXPECT_NEAR(out[i * ldo + e], want, 1e-5)
                        << "hd " << hd << " query " << i << "/" << nq << " at " << e;
                }
                for (std::size_t j = 0; j < m; j++)
                    EXPECT_NEAR(s[i * m + j], sd[j] / z, 1e-5)
                        << "hd " << hd << " query " << i << " p[" << j << "]";
                for (std::size_t e = hd; e < ldo; e++)
                    EXPECT_EQ(out[i * ldo + e], 7.0F) << "wrote past query " << i << "'s output row";
            }
        }
}

// softmax and SwiGLU's SiLU take e^x 8 at a time (exp8): against double over the range they see,
// lengths with and without a tail of fewer than 8, masked keys (-inf) and values under fp32's range.
TEST(NativeKernels, SoftmaxAndSwigluEqualTheirDefinitionsInDouble) {
    for (const std::size_t n : {1UL, 7UL, 8UL, 64UL, 257UL}) {
        std::vector<float> s = random_values(n, static_cast<unsigned>(60 + n));
        for (std::size_t i = 0; i < n; i++) s[i] *= 12.0F;  // spreads of e^-80 and more
        if (n > 2) s[1] = -INFINITY;
        if (n > 3) s[2] = -200.0F;
        const std::vector<float> x = s;
        double top = -INFINITY, z = 0;
        for (const float v : x) top = std::max(top, double{v});
        for (const float v : x) z += std::exp(double{v} - top);
        native::softmax(s.data(), n);
        for (std::size_t i = 0; i < n; i++) {
            const double want = std::exp(double{x[i]} - top) / z;
            EXPECT_NEAR(s[i], want, 2e-7 + 4e-7 * want) << n << " at " << i;
        }
    }
    std::vector<float> bad = {0.5F, NAN, 1.0F};  // unwritten KV: the NaN reaches the output, as expf's did
    native::softmax(bad.data(), bad.size());
    for (const float v : bad) EXPECT_TRUE(std::isnan(v));
    const std::size_t rows = 2, f = 21;  // two 8-wide chunks and a tail of 5
    std::vector<float> g = random_values(rows * 2 * f, 70), out(rows * f, 7.0F);
    g[0] = 95.0F;   // e^-95: 0 in fp32
    g[1] = -95.0F;  // e^95: past fp32's range
    native::swiglu(g.data(), rows, f, out.data());
    for (std::size_t r = 0; r < rows; r++)
        for (std::size_t i = 0; i < f; i++) {
            const double a = g[r * 2 * f + i], b = g[r * 2 * f + f + i];
            const double want = a / (1.0 + std::exp(-a)) * b;
            EXPECT_NEAR(out[r * f + i], want, 1e-6 + 4e-7 * std::abs(want)) << r << "," << i;
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

// A fully reused frame writes nothing: its pages are its source's blocks, read where they are.
TEST(NativeDecoder, AFullyReusedFrameReadsItsSourceBlocksInPlace) {
    const NativeDecoder dec(small_model());
    const NativeConfig& c = dec.config();
    NativeScratch s;
    const std::size_t n = c.visual(), hd = c.head_dim, block = 2 * 2 * 2 * hd;
    auto z = random_values(n * c.feat_dim, 30);
    std::vector<float> vis(n * c.d_model);
    dec.embed(z, vis);
    std::vector<float> b0(block, NAN), b1(block, NAN);
    std::vector<float*> blocks = {b0.data(), b1.data()};
    std::vector<const float*> pages = {b0.data(), b1.data(), b0.data(),
                                       b1.data()};  // frame 1 aliases frame 0
    const std::vector<std::uint32_t> both = {0, 1};
    dec.prefill(s, z, vis, both, blocks, {pages}, 0);
    for (float x : b0) ASSERT_FALSE(std::isnan(x));
    // Layer 0's values are the tokens' features (value0), padded with zeros: [L, 2, KVH=1, T=2, hd].
    for (std::size_t tok = 0; tok < n; tok++)
        for (std::size_t e = 0; e < hd; e++)
            EXPECT_EQ(blocks[tok / 2][(2 + tok % 2) * hd + e],
                      e < c.feat_dim ? z[tok * c.feat_dim + e] : 0.0F);
    const auto before = b0;
    dec.prefill(s, random_values(z.size(), 31), vis, {}, blocks, {pages}, 1);
    EXPECT_EQ(b0, before) << "a reused block is only read";
    // Frame 1 read through its own copies of the blocks: the same answers.
    const std::vector<float> c0 = b0, c1 = b1;
    std::vector<const float*> copies = {b0.data(), b1.data(), c0.data(), c1.data()};
    const std::vector<std::int64_t> region = {0, 1}, target = {1, 0};
    std::vector<float> aliased(2 * c.codes), copied(2 * c.codes);
    dec.ask(s, {pages}, 1, region, target, nullptr, aliased);
    dec.ask(s, {copies}, 1, region, target, nullptr, copied);
    EXPECT_EQ(aliased, copied);
    const std::vector<std::int64_t> toks = {-1, -1, 3, 5};
    const QuestionRead read{toks, 2};
    std::vector<float> logits(2 * c.codes, NAN);
    dec.ask(s, {pages}, 1, region, target, &read, logits);
    for (std::size_t i = 0; i < c.codes; i++) {
        EXPECT_EQ(logits[i], 0.0F) << "the blind question";
        EXPECT_TRUE(std::isfinite(logits[c.codes + i]) && logits[c.codes + i] != 0.0F);
    }
    const std::vector<std::int64_t> late = {8, 0};  // frame 2's token: not in the pages yet
    const QuestionRead bad{late, 1};
    EXPECT_THROW(dec.ask(s, {pages}, 1, region, target, &bad, logits), std::invalid_argument);
    EXPECT_THROW(dec.prefill(s, z, vis, both, blocks, {std::span(pages).first(2)}, 1), std::invalid_argument)
        << "pages shorter than t + 1 frames";
}

// An unreadable page (a block whose device memory was given back, no copy staged) is refused by
// every reader, never read.
TEST(NativeDecoder, AnUnreadablePageIsRefused) {
    const NativeDecoder dec(small_model());
    const NativeConfig& c = dec.config();
    NativeScratch s;
    const std::size_t n = c.visual(), hd = c.head_dim, block = 2 * 2 * 2 * hd;
    const auto z = random_values(n * c.feat_dim, 32);
    std::vector<float> vis(n * c.d_model), b0(block), b1(block), b2(block), b3(block);
    dec.embed(z, vis);
    std::vector<float*> f0 = {b0.data(), b1.data()}, f1 = {b2.data(), b3.data()};
    std::vector<const float*> pages = {b0.data(), b1.data(), b2.data(), b3.data()};
    const std::vector<std::uint32_t> both = {0, 1}, first = {0};
    dec.prefill(s, z, vis, both, f0, {pages}, 0);
    pages[1] = nullptr;  // frame 0, region 1: gone
    std::vector<float> logits(c.codes);
    const std::vector<std::int64_t> region = {0}, target = {1}, frame1 = {4, 5}, frame0 = {0, 2};
    EXPECT_THROW(dec.prefill(s, z, vis, first, f1, {pages}, 1), std::invalid_argument) << "the window";
    EXPECT_THROW(dec.ask(s, {pages}, 1, region, target, nullptr, logits), std::invalid_argument)
        << "the reach";
    const QuestionRead bad{frame0, 2}, good{frame1, 2};
    EXPECT_THROW(dec.ask(s, {pages}, 1, region, target, &bad, logits), std::invalid_argument);
    dec.ask(s, {pages}, 1, region, target, &good, logits);  // reads frame 1 and region 0 only
    for (const float x : logits) EXPECT_TRUE(std::isfinite(x));
}

// Nothing read is kept: a block rewritten between two reads is read as it is now.
TEST(NativeDecoder, ARewrittenBlockIsReadAsItIsNow) {
    const NativeDecoder dec(small_model());
    const NativeConfig& c = dec.config();
    const std::size_t n = c.visual(), hd = c.head_dim, block = 2 * 2 * 2 * hd;
    NativeScratch s;
    std::vector<float> vis(n * c.d_model);
    std::vector<std::vector<float>> b(4, std::vector<float>(block));
    std::vector<const float*> pages = {b[0].data(), b[1].data(), b[2].data(), b[3].data()};
    const std::vector<std::uint32_t> both = {0, 1};
    for (std::uint32_t t = 0; t < 2; t++) {
        const auto z = random_values(n * c.feat_dim, 40 + t);
        dec.embed(z, vis);
        std::vector<float*> blocks = {b[2 * t].data(), b[2 * t + 1].data()};
        dec.prefill(s, z, vis, both, blocks, {pages}, t);
    }
    const std::vector<std::int64_t> region = {0, 1}, target = {0, 1};
    std::vector<float> before(2 * c.codes), after(2 * c.codes), fresh(2 * c.codes);
    dec.ask(s, {pages}, 1, region, target, nullptr, before);
    for (std::size_t i = 0; i < hd; i++) b[0][i] *= 3.0F;  // frame 0, region 0, layer 0's first K row
    dec.ask(s, {pages}, 1, region, target, nullptr, after);
    NativeScratch other;
    dec.ask(other, {pages}, 1, region, target, nullptr, fresh);
    EXPECT_EQ(after, fresh);
    EXPECT_NE(after, before);
}

}  // namespace
}  // namespace vrex::lcp
