// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// FCC fingerprint unit: downscale, motion search, features, encoding and locality on synthetic frames.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <vector>

extern "C" {
#include "fcc_fingerprint.h"
}

namespace {

// A luma plane with its own stride; padding bytes are filled with a marker the unit must never sample.
struct Plane {
    u32 width;
    u32 height;
    u32 stride;
    std::vector<u8> pix;

    Plane(u32 w, u32 h, u32 s, u8 padding = 0)
        : width(w), height(h), stride(s), pix(size_t{s} * h, padding) {}
    u8& at(u32 x, u32 y) { return pix[size_t{y} * stride + x]; }
    u8 at(u32 x, u32 y) const { return pix[size_t{y} * stride + x]; }
};

// Smooth random texture: value noise on a coarse lattice, bilinearly interpolated. @cell is the lattice
// pitch in pixels; the texture is defined on unbounded integer coordinates so it can be shifted.
class Texture {
  public:
    explicit Texture(uint32_t seed, int cell = 4) : cell_(cell) {
        std::mt19937 rng(seed);
        for (auto& v : lattice_) v = static_cast<uint8_t>(rng() & 0xff);
    }

    u8 operator()(int x, int y) const {
        const int cx = floordiv(x), cy = floordiv(y);
        const int fx = x - cx * cell_, fy = y - cy * cell_;
        const int a = node(cx, cy), b = node(cx + 1, cy), c = node(cx, cy + 1), d = node(cx + 1, cy + 1);
        const int top = a * (cell_ - fx) + b * fx, bottom = c * (cell_ - fx) + d * fx;
        return static_cast<u8>((top * (cell_ - fy) + bottom * fy) / (cell_ * cell_));
    }

  private:
    static constexpr int kSide = 256;
    int floordiv(int v) const { return v >= 0 ? v / cell_ : -((-v + cell_ - 1) / cell_); }
    int node(int x, int y) const {
        return lattice_[size_t(((y % kSide) + kSide) % kSide) * kSide +
                        size_t(((x % kSide) + kSide) % kSide)];
    }

    int cell_;
    std::array<uint8_t, kSide * kSide> lattice_{};
};

Plane textured_plane(const Texture& tex, u32 w, u32 h, int shift_x = 0, int shift_y = 0) {
    Plane p(w, h, w);
    for (u32 y = 0; y < h; y++)
        for (u32 x = 0; x < w; x++) p.at(x, y) = tex(int(x) - shift_x, int(y) - shift_y);
    return p;
}

vrex_fcc_image textured_grid(const Texture& tex, int shift_x = 0, int shift_y = 0) {
    vrex_fcc_image img{};
    for (int y = 0; y < VREX_FCC_H; y++)
        for (int x = 0; x < VREX_FCC_W; x++) img.pix[y * VREX_FCC_W + x] = tex(x - shift_x, y - shift_y);
    return img;
}

struct FrameResult {
    int ret;
    vrex_fp fp;
    struct vrex_fcc_features feat;
    struct vrex_fcc_motion mv;
};

FrameResult fingerprint(const Plane& p, const vrex_fcc_image* prev, vrex_fcc_image& cur) {
    FrameResult r{};
    r.ret =
        vrex_fcc_fingerprint(p.pix.data(), p.width, p.height, p.stride, prev, &cur, &r.mv, &r.fp, &r.feat);
    return r;
}

// Fingerprint of a single frame with no predecessor (appearance plus "fully static" motion fields).
vrex_fp still_fp(const Plane& p) {
    vrex_fcc_image cur{};
    FrameResult r = fingerprint(p, nullptr, cur);
    EXPECT_EQ(r.ret, VREX_OK);
    return r.fp;
}

u32 distance(const vrex_fp& a, const vrex_fp& b) {
    return vrex_fp_distance(&a, &b);
}

}  // namespace

TEST(FccDownscale, ConstantPlaneOfAnySizeAndStrideGivesConstantGrid) {
    const std::array<std::array<u32, 3>, 8> shapes{{
        {64, 64, 64},
        {65, 97, 67},
        {127, 95, 128},
        {129, 97, 200},
        {1919, 1081, 1984},
        {8192, 64, 8192},
        {64, 8192, 80},
        {333, 4097, 4096},
    }};
    for (const auto& s : shapes) {
        // Padding bytes are 0: any read past the width would darken the grid.
        Plane p(s[0], s[1], s[2], 0);
        for (u32 y = 0; y < p.height; y++) std::fill_n(&p.at(0, y), p.width, u8{200});
        vrex_fcc_image out;
        std::memset(&out, 0x11, sizeof(out));
        ASSERT_EQ(vrex_fcc_downscale(p.pix.data(), p.width, p.height, p.stride, &out), VREX_OK)
            << s[0] << "x" << s[1];
        for (u8 v : out.pix) ASSERT_EQ(v, 200) << s[0] << "x" << s[1] << " stride " << s[2];
    }
}

TEST(FccDownscale, LargestFrameIsAccepted) {
    Plane p(VREX_FCC_MAX_DIM, VREX_FCC_MAX_DIM, VREX_FCC_MAX_DIM, 0);
    for (u32 y = 0; y < p.height; y++)
        for (u32 x = 0; x < p.width; x++) p.at(x, y) = y < p.height / 2 ? 10 : 240;
    vrex_fcc_image out{};
    ASSERT_EQ(vrex_fcc_downscale(p.pix.data(), p.width, p.height, p.stride, &out), VREX_OK);
    EXPECT_EQ(out.pix[0], 10);
    EXPECT_EQ(out.pix[(VREX_FCC_H / 2 - 1) * VREX_FCC_W + 5], 10);
    EXPECT_EQ(out.pix[(VREX_FCC_H / 2) * VREX_FCC_W + 5], 240);
    EXPECT_EQ(out.pix[VREX_FCC_H * VREX_FCC_W - 1], 240);
}

TEST(FccDownscale, RampKeepsOrientationOnOddSizesAndStrides) {
    // Horizontal ramp in an odd-sized plane with a 0xff-padded stride: rows of the grid must be
    // identical, non-decreasing, span dark to bright, and the padding must never leak in.
    Plane p(641, 359, 700, 0xff);
    for (u32 y = 0; y < p.height; y++)
        for (u32 x = 0; x < p.width; x++) p.at(x, y) = static_cast<u8>(x * 250 / (p.width - 1));
    vrex_fcc_image out{};
    ASSERT_EQ(vrex_fcc_downscale(p.pix.data(), p.width, p.height, p.stride, &out), VREX_OK);
    for (int y = 0; y < VREX_FCC_H; y++) {
        for (int x = 1; x < VREX_FCC_W; x++)
            ASSERT_GE(out.pix[y * VREX_FCC_W + x], out.pix[y * VREX_FCC_W + x - 1]);
        ASSERT_EQ(0, std::memcmp(&out.pix[y * VREX_FCC_W], &out.pix[0], VREX_FCC_W));
    }
    EXPECT_LE(out.pix[0], 2);
    EXPECT_GE(out.pix[VREX_FCC_W - 1], 246);
    EXPECT_LE(out.pix[VREX_FCC_W - 1], 250);
}

TEST(FccDownscale, AveragesSamplesSoPixelNoiseShrinks) {
    // Checkerboard of 0/200 at source resolution: each grid pixel averages 16 samples, so the grid
    // must be far flatter than the +-100 source swing.
    Plane p(1280, 720, 1280);
    for (u32 y = 0; y < p.height; y++)
        for (u32 x = 0; x < p.width; x++) p.at(x, y) = ((x ^ y) & 1) ? 200 : 0;
    vrex_fcc_image out{};
    ASSERT_EQ(vrex_fcc_downscale(p.pix.data(), p.width, p.height, p.stride, &out), VREX_OK);
    const auto [lo, hi] = std::minmax_element(std::begin(out.pix), std::end(out.pix));
    EXPECT_GE(*lo, 50);
    EXPECT_LE(*hi, 150);
}

TEST(FccDownscale, RejectsBadInputAndLeavesOutputUntouched) {
    Plane p(256, 256, 256, 7);
    vrex_fcc_image out, before;
    std::memset(&out, 0xa5, sizeof(out));
    before = out;
    const u8* l = p.pix.data();
    EXPECT_EQ(vrex_fcc_downscale(nullptr, 256, 256, 256, &out), VREX_EINVAL);
    EXPECT_EQ(vrex_fcc_downscale(l, 256, 256, 256, nullptr), VREX_EINVAL);
    EXPECT_EQ(vrex_fcc_downscale(l, VREX_FCC_MIN_DIM - 1, 256, 256, &out), VREX_EINVAL);
    EXPECT_EQ(vrex_fcc_downscale(l, 256, VREX_FCC_MIN_DIM - 1, 256, &out), VREX_EINVAL);
    EXPECT_EQ(vrex_fcc_downscale(l, VREX_FCC_MAX_DIM + 1, 64, VREX_FCC_MAX_DIM + 1, &out), VREX_EINVAL);
    EXPECT_EQ(vrex_fcc_downscale(l, 64, VREX_FCC_MAX_DIM + 1, 64, &out), VREX_EINVAL);
    EXPECT_EQ(vrex_fcc_downscale(l, 0, 0, 0, &out), VREX_EINVAL);
    EXPECT_EQ(vrex_fcc_downscale(l, 256, 64, 255, &out), VREX_EINVAL);
    EXPECT_EQ(0, std::memcmp(&out, &before, sizeof(out)));
}

TEST(FccFingerprint, RejectsBadInputAndLeavesOutputsUntouched) {
    Plane p = textured_plane(Texture(1), 320, 240);
    vrex_fcc_image prev{}, cur;
    struct vrex_fcc_motion mv;
    vrex_fp fp;
    struct vrex_fcc_features feat;
    std::memset(&cur, 0x5a, sizeof(cur));
    std::memset(&fp, 0x5a, sizeof(fp));
    std::memset(&feat, 0x5a, sizeof(feat));
    const vrex_fcc_image cur0 = cur;
    const vrex_fp fp0 = fp;
    const u8* l = p.pix.data();

    EXPECT_EQ(vrex_fcc_fingerprint(nullptr, 320, 240, 320, &prev, &cur, &mv, &fp, &feat), VREX_EINVAL);
    EXPECT_EQ(vrex_fcc_fingerprint(l, 320, 240, 319, &prev, &cur, &mv, &fp, &feat), VREX_EINVAL);
    EXPECT_EQ(vrex_fcc_fingerprint(l, 320, 8193, 320, &prev, &cur, &mv, &fp, &feat), VREX_EINVAL);
    EXPECT_EQ(vrex_fcc_fingerprint(l, 320, 240, 320, &prev, nullptr, &mv, &fp, &feat), VREX_EINVAL);
    EXPECT_EQ(vrex_fcc_fingerprint(l, 320, 240, 320, &prev, &cur, nullptr, &fp, &feat), VREX_EINVAL);
    EXPECT_EQ(vrex_fcc_fingerprint(l, 320, 240, 320, &prev, &cur, &mv, nullptr, &feat), VREX_EINVAL);
    EXPECT_EQ(vrex_fcc_fingerprint(l, 320, 240, 320, &prev, &cur, &mv, &fp, nullptr), VREX_EINVAL);
    // prev aliasing cur would be overwritten by the downscale before the motion search reads it.
    EXPECT_EQ(vrex_fcc_fingerprint(l, 320, 240, 320, &cur, &cur, &mv, &fp, &feat), VREX_EINVAL);
    EXPECT_EQ(0, std::memcmp(&cur, &cur0, sizeof(cur)));
    EXPECT_EQ(0, std::memcmp(&fp, &fp0, sizeof(fp)));
}

TEST(FccFingerprint, IsDeterministic) {
    const Texture tex(7);
    const Plane a = textured_plane(tex, 640, 480), b = textured_plane(tex, 640, 480, 6, -3);
    vrex_fcc_image prev1{}, cur1{}, prev2{}, cur2{};
    const FrameResult r1a = fingerprint(a, nullptr, prev1), r1b = fingerprint(b, &prev1, cur1);
    const FrameResult r2a = fingerprint(a, nullptr, prev2), r2b = fingerprint(b, &prev2, cur2);
    ASSERT_EQ(r1b.ret, VREX_OK);
    EXPECT_TRUE(vrex_fp_equal(&r1a.fp, &r2a.fp));
    EXPECT_TRUE(vrex_fp_equal(&r1b.fp, &r2b.fp));
    EXPECT_EQ(0, std::memcmp(&r1b.mv, &r2b.mv, sizeof(r1b.mv)));
    EXPECT_EQ(0, std::memcmp(&r1b.feat, &r2b.feat, sizeof(r1b.feat)));
    EXPECT_EQ(0, std::memcmp(&cur1, &cur2, sizeof(cur1)));
}

TEST(FccMotion, RecoversSyntheticGlobalShift) {
    const Texture tex(3, 3);
    const vrex_fcc_image prev = textured_grid(tex);
    const std::array<std::array<int, 2>, 6> shifts{{{1, 0}, {0, -1}, {3, -2}, {-4, 4}, {4, -4}, {-2, 3}}};
    for (const auto& s : shifts) {
        const vrex_fcc_image cur = textured_grid(tex, s[0], s[1]);
        struct vrex_fcc_motion mv;
        vrex_fcc_motion(&cur, &prev, &mv);
        // Blocks whose matching source block lies inside the grid must find the exact vector.
        for (int by = 1; by < VREX_FCC_MBY - 1; by++) {
            for (int bx = 1; bx < VREX_FCC_MBX - 1; bx++) {
                const int m = by * VREX_FCC_MBX + bx;
                ASSERT_EQ(mv.dx[m], s[0]) << "block " << bx << "," << by;
                ASSERT_EQ(mv.dy[m], s[1]) << "block " << bx << "," << by;
                ASSERT_EQ(mv.sad[m], 0);
            }
        }
        struct vrex_fcc_features f;
        vrex_fcc_features(&mv, &f);
        EXPECT_GE(f.moving_blocks, u32((VREX_FCC_MBX - 2) * (VREX_FCC_MBY - 2)));
        EXPECT_LE(f.static_ratio, 200u);
    }
}

// The search as docs/hw/fcc.md defines it, with whole SADs and no shortcut: the zero vector, then
// rings 1..4 in raster order, a candidate kept only when its SAD plus the bias is strictly lower, the
// search ending once the best cost is at most the bias. vrex_fcc_motion (early-out SADs, two rows per
// vector instruction where the CPU has one) must give every macroblock the same vector and SAD.
struct RefVector {
    int dx, dy;
    u32 sad;
};

u32 ref_sad(const vrex_fcc_image& a, int ax, int ay, const vrex_fcc_image& b, int bx, int by) {
    u32 sad = 0;
    for (int y = 0; y < VREX_FCC_MB; y++)
        for (int x = 0; x < VREX_FCC_MB; x++)
            sad += u32(std::abs(int(a.pix[(ay + y) * VREX_FCC_W + ax + x]) -
                                int(b.pix[(by + y) * VREX_FCC_W + bx + x])));
    return sad;
}

RefVector ref_search(const vrex_fcc_image& cur, const vrex_fcc_image& prev, int bx, int by) {
    const int x0 = bx * VREX_FCC_MB, y0 = by * VREX_FCC_MB;
    RefVector best{0, 0, ref_sad(cur, x0, y0, prev, x0, y0)};
    const u32 bias = 96 + (best.sad >> 4);  // FCC_ZERO_BIAS + 1/16 of the zero SAD
    u32 cost = best.sad;
    for (int ring = 1; ring <= VREX_FCC_SEARCH && cost > bias; ring++)
        for (int dy = -ring; dy <= ring && cost > bias; dy++)
            for (int dx = -ring; dx <= ring && cost > bias; dx++) {
                if (std::max(std::abs(dx), std::abs(dy)) != ring) continue;
                const int px = x0 - dx, py = y0 - dy;
                if (px < 0 || py < 0 || px > VREX_FCC_W - VREX_FCC_MB || py > VREX_FCC_H - VREX_FCC_MB)
                    continue;
                const u32 sad = ref_sad(cur, x0, y0, prev, px, py);
                if (sad + bias < cost) {
                    cost = sad + bias;
                    best = {dx, dy, sad};
                }
            }
    return best;
}

TEST(FccMotion, EveryVectorAndSadIsTheReferenceSearchs) {
    std::mt19937 rng(26);
    for (int trial = 0; trial < 24; trial++) {
        // Textures of several scales, shifted, with noise of several strengths: static, flat, moving
        // and ambiguous blocks, so every exit of the search (no search, a tie, an early stop) occurs.
        const Texture tex(rng(), 2 + trial % 6);
        const int sx = int(rng() % 11) - 5, sy = int(rng() % 11) - 5, noise = trial % 4 * 6;
        vrex_fcc_image prev = textured_grid(tex), cur = textured_grid(tex, sx, sy);
        for (u8& v : cur.pix)
            v = u8(std::clamp(int(v) + (noise ? int(rng() % (noise + 1)) - noise / 2 : 0), 0, 255));
        if (trial % 5 == 4) std::swap(prev, cur);
        struct vrex_fcc_motion mv;
        vrex_fcc_motion(&cur, &prev, &mv);
        for (int by = 0; by < VREX_FCC_MBY; by++)
            for (int bx = 0; bx < VREX_FCC_MBX; bx++) {
                const int m = by * VREX_FCC_MBX + bx;
                const RefVector r = ref_search(cur, prev, bx, by);
                ASSERT_EQ(mv.dx[m], r.dx) << "trial " << trial << ", block " << bx << "," << by;
                ASSERT_EQ(mv.dy[m], r.dy) << "trial " << trial << ", block " << bx << "," << by;
                ASSERT_EQ(mv.sad[m], r.sad) << "trial " << trial << ", block " << bx << "," << by;
            }
    }
}

TEST(FccMotion, ShiftThroughFullPipelineIsRecovered) {
    // 512x384 source is exactly 4x the grid: a 12 px source shift is 3 grid px.
    const Texture tex(11, 12);
    const Plane a = textured_plane(tex, 512, 384), b = textured_plane(tex, 512, 384, 12, -8);
    vrex_fcc_image prev{}, cur{};
    ASSERT_EQ(fingerprint(a, nullptr, prev).ret, VREX_OK);
    const FrameResult r = fingerprint(b, &prev, cur);
    ASSERT_EQ(r.ret, VREX_OK);
    const int centre = (VREX_FCC_MBY / 2) * VREX_FCC_MBX + VREX_FCC_MBX / 2;
    EXPECT_EQ(r.mv.dx[centre], 3);
    EXPECT_EQ(r.mv.dy[centre], -2);
    // centre_motion is |(3,-2)| = 3.6 px, i.e. 58/16 px, over every centre block.
    EXPECT_EQ(r.feat.centre_motion, 58u);
}

TEST(FccMotion, StaticNoisyImageHasZeroMotion) {
    const Texture tex(5);
    const Plane a = textured_plane(tex, 640, 360);
    Plane b = a;
    std::mt19937 rng(9);
    for (u8& v : b.pix) v = static_cast<u8>(std::clamp(int(v) + int(rng() % 7) - 3, 0, 255));
    vrex_fcc_image prev{}, cur{};
    ASSERT_EQ(fingerprint(a, nullptr, prev).ret, VREX_OK);
    const FrameResult r = fingerprint(b, &prev, cur);
    ASSERT_EQ(r.ret, VREX_OK);
    for (int m = 0; m < VREX_FCC_NMB; m++) {
        ASSERT_EQ(r.mv.dx[m], 0) << m;
        ASSERT_EQ(r.mv.dy[m], 0) << m;
    }
    EXPECT_EQ(r.feat.static_ratio, 1000u);
    EXPECT_EQ(r.feat.moving_blocks, 0u);
    EXPECT_EQ(r.feat.centre_motion, 0u);
    EXPECT_EQ(r.feat.roi_dx, 0);
    EXPECT_EQ(r.feat.roi_dy, 0);
}

TEST(FccMotion, FlatImageWithNoiseHasZeroMotion) {
    // Flat regions match any vector equally well; the zero-vector margin must keep them still.
    Plane a(320, 240, 320), b(320, 240, 320);
    std::mt19937 rng(4);
    for (size_t i = 0; i < a.pix.size(); i++) {
        a.pix[i] = static_cast<u8>(120 + rng() % 9);
        b.pix[i] = static_cast<u8>(120 + rng() % 9);
    }
    vrex_fcc_image prev{}, cur{};
    ASSERT_EQ(fingerprint(a, nullptr, prev).ret, VREX_OK);
    const FrameResult r = fingerprint(b, &prev, cur);
    EXPECT_EQ(r.feat.moving_blocks, 0u);
    EXPECT_EQ(r.feat.static_ratio, 1000u);
}

TEST(FccMotion, FirstFrameOfStreamIsFullyStatic) {
    vrex_fcc_image cur{};
    const FrameResult r = fingerprint(textured_plane(Texture(2), 320, 240), nullptr, cur);
    ASSERT_EQ(r.ret, VREX_OK);
    EXPECT_EQ(r.feat.static_ratio, 1000u);
    EXPECT_EQ(r.feat.moving_blocks, 0u);
    EXPECT_EQ(r.feat.centre_motion, 0u);
    // No motion: every motion thermometer field is at level 0 except the ROI fields at their middle.
    EXPECT_EQ(r.fp.w[0] & 0xffffu, 0u);
    EXPECT_EQ((r.fp.w[0] >> 16) & 0xffu, 0x0fu);
    EXPECT_EQ((r.fp.w[0] >> 24) & 0xffu, 0x0fu);
}

namespace {

// A static textured background with a textured w x h (grid px) object at grid position (ox, oy) that moves
// @step grid px to the right between two frames. Source 512x384 = 4x the grid.
struct MovingObjectScene {
    Texture background{21};
    Texture object{22, 3};
    int w;
    int h;

    Plane frame(int ox, int oy) const {
        Plane p(512, 384, 512);
        for (u32 y = 0; y < p.height; y++) {
            for (u32 x = 0; x < p.width; x++) {
                const int gx = int(x) / 4, gy = int(y) / 4;
                const bool in = gx >= ox && gx < ox + w && gy >= oy && gy < oy + h;
                p.at(x, y) = in ? object(gx - ox, gy - oy) : background(gx, gy);
            }
        }
        return p;
    }

    FrameResult run(int ox, int oy, int step) const {
        vrex_fcc_image prev{}, cur{};
        EXPECT_EQ(fingerprint(frame(ox, oy), nullptr, prev).ret, VREX_OK);
        const FrameResult r = fingerprint(frame(ox + step, oy), &prev, cur);
        EXPECT_EQ(r.ret, VREX_OK);
        return r;
    }
};

}  // namespace

TEST(FccFeatures, ObjectMovingInCentreLeavesBackgroundStatic) {
    // 40x32 object centred on the grid centre (64, 48) moving 2 px right: it fully covers the 4x4
    // macroblocks 6..9 x 4..7, which must all see (2, 0).
    const MovingObjectScene scene{.w = 40, .h = 32};
    const FrameResult r = scene.run(44, 32, 2);
    for (int by = 4; by <= 7; by++) {
        for (int bx = 6; bx <= 9; bx++) {
            EXPECT_EQ(r.mv.dx[by * VREX_FCC_MBX + bx], 2) << bx << "," << by;
            EXPECT_EQ(r.mv.dy[by * VREX_FCC_MBX + bx], 0) << bx << "," << by;
        }
    }
    EXPECT_GE(r.feat.centre_motion, 16u * 32u / 60u);
    EXPECT_EQ(r.feat.static_ratio, 1000u);
    EXPECT_GE(r.feat.moving_blocks, 16u);
    EXPECT_LE(std::abs(r.feat.roi_dx), 150);
    EXPECT_LE(std::abs(r.feat.roi_dy), 150);
}

TEST(FccFeatures, ObjectMovingInCornerIsBackgroundMotionOffCentre) {
    // 16x16 object in the top-left corner, outside the centre region.
    const MovingObjectScene scene{.w = 16, .h = 16};
    const struct vrex_fcc_features f = scene.run(2, 2, 2).feat;
    EXPECT_EQ(f.centre_motion, 0u);
    EXPECT_LT(f.static_ratio, 1000u);
    EXPECT_GT(f.moving_blocks, 0u);
    EXPECT_LT(f.roi_dx, -600);
    EXPECT_LT(f.roi_dy, -600);
}

TEST(FccFeatures, ExactValuesFromHandMadeVectors) {
    struct vrex_fcc_motion mv {};
    // Rightmost block of row 5 (background) moving (4, 0); centre block (8, 6) moving (0, -1).
    mv.dx[5 * VREX_FCC_MBX + 15] = 4;
    mv.dy[6 * VREX_FCC_MBX + 8] = -1;
    struct vrex_fcc_features f;
    vrex_fcc_features(&mv, &f);
    EXPECT_EQ(f.moving_blocks, 2u);
    EXPECT_EQ(f.centre_motion, 16u / 60u);  // one centre block of |mv| = 1 px over 60 centre blocks
    EXPECT_EQ(f.static_ratio, 131u * 1000u / 132u);
    // Energies 16 at x offset +60, y -4 and 1 at x +4, y +4 (grid px from the centre).
    EXPECT_EQ(f.roi_dx, (16 * 60 + 1 * 4) * 1000 / (17 * 64));
    EXPECT_EQ(f.roi_dy, (16 * -4 + 1 * 4) * 1000 / (17 * 48));
}

TEST(FccRegionMotion, HandMadeVectorsGiveEachRegionItsMeanMagnitude) {
    struct vrex_fcc_motion mv {};
    // Region 0 (macroblocks 0..3 x 0..2): one block (1, 0); region 6 (8..11 x 3..5): all 12 (3, 4);
    // region 15 (12..15 x 9..11): one block (4, 4) and one out-of-range vector clamped to (4, -4).
    mv.dx[0 * VREX_FCC_MBX + 2] = 1;
    for (int by = 3; by < 6; by++)
        for (int bx = 8; bx < 12; bx++) {
            mv.dx[by * VREX_FCC_MBX + bx] = 3;
            mv.dy[by * VREX_FCC_MBX + bx] = 4;
        }
    mv.dx[11 * VREX_FCC_MBX + 15] = 4;
    mv.dy[11 * VREX_FCC_MBX + 15] = 4;
    mv.dx[9 * VREX_FCC_MBX + 12] = 9;
    mv.dy[9 * VREX_FCC_MBX + 12] = -7;
    u8 m[VREX_FCC_REGIONS];
    std::memset(m, 0xee, sizeof(m));
    vrex_fcc_region_motion(&mv, m);
    for (int r = 0; r < VREX_FCC_REGIONS; r++) {
        if (r == 0) {
            EXPECT_EQ(m[r], 16 / 12);  // one block moving 1 px: the smallest non-zero reading
        } else if (r == 6) {
            EXPECT_EQ(m[r], 80);  // |(3, 4)| = 5 px = 80/16 in every block
        } else if (r == 15) {
            EXPECT_EQ(m[r], 2 * 91 / 12);  // two blocks of |(4, 4)| (the clamp): table value 91
        } else {
            EXPECT_EQ(m[r], 0) << r;
        }
    }
}

TEST(FccRegionMotion, ObjectMovingInOneRegionMarksThatRegionOnly) {
    // 24x16 grid-px object in region 5 (grid x 32..63, y 24..47) moving 2 px right; the background
    // is static, so only the regions the object's blocks lie in read motion.
    const MovingObjectScene scene{.w = 24, .h = 16};
    const FrameResult r = scene.run(36, 28, 2);
    u8 m[VREX_FCC_REGIONS];
    vrex_fcc_region_motion(&r.mv, m);
    EXPECT_GE(m[5], 2 * 32 / 12);  // at least the 2 blocks the object fully covers see 2 px
    for (int reg = 0; reg < VREX_FCC_REGIONS; reg++) {
        if (reg != 5) {
            EXPECT_EQ(m[reg], 0) << reg;
        }
    }
}

TEST(FccRegionMotion, GlobalPanMovesEveryRegionAndAStillFrameNone) {
    const Texture tex(33);
    const vrex_fcc_image prev = textured_grid(tex), panned = textured_grid(tex, 3, 1);
    struct vrex_fcc_motion mv {};
    u8 m[VREX_FCC_REGIONS];
    vrex_fcc_motion(&panned, &prev, &mv);
    vrex_fcc_region_motion(&mv, m);
    // |(3, 1)| = 3.16 px = 51/16 where the search found it; edge blocks whose window leaves the grid
    // may stay at zero, so every region reads motion and interior ones the full shift.
    for (int r = 0; r < VREX_FCC_REGIONS; r++) EXPECT_GT(m[r], 0) << r;
    EXPECT_EQ(m[5], 51);
    EXPECT_EQ(m[10], 51);
    vrex_fcc_motion(&prev, &prev, &mv);
    vrex_fcc_region_motion(&mv, m);
    for (int r = 0; r < VREX_FCC_REGIONS; r++) EXPECT_EQ(m[r], 0) << r;
}

TEST(FccEncode, ScalarFieldsAreThermometerCodes) {
    const vrex_fcc_image img = textured_grid(Texture(8));
    struct vrex_fcc_features base {};
    base.static_ratio = 1000;
    vrex_fp ref;
    vrex_fcc_encode(&img, &base, &ref);
    u32 last = 0;
    // Distance to the still code grows monotonically with centre motion and saturates at 8 bits.
    for (u32 cm = 0; cm <= 96; cm += 2) {
        struct vrex_fcc_features f = base;
        f.centre_motion = cm;
        vrex_fp fp;
        vrex_fcc_encode(&img, &f, &fp);
        const u32 d = distance(ref, fp);
        EXPECT_GE(d, last);
        EXPECT_EQ(fp.w[1], ref.w[1]);  // appearance untouched
        last = d;
    }
    EXPECT_EQ(last, 8u);
    // ROI: opposite extremes are 8 bits apart; each step in between moves at most one bit.
    struct vrex_fcc_features l = base, r = base;
    l.roi_dx = -1000;
    r.roi_dx = 1000;
    vrex_fp fl, fr;
    vrex_fcc_encode(&img, &l, &fl);
    vrex_fcc_encode(&img, &r, &fr);
    EXPECT_EQ(distance(fl, fr), 8u);
    vrex_fp prev = fl;
    for (s32 x = -1000; x <= 1000; x += 50) {
        struct vrex_fcc_features f = base;
        f.roi_dx = x;
        vrex_fp fp;
        vrex_fcc_encode(&img, &f, &fp);
        EXPECT_LE(distance(prev, fp), 1u);
        prev = fp;
    }
}

TEST(FccLocality, SmallPerturbationsGiveSmallDistance) {
    const Texture tex(31, 32);
    const Plane a = textured_plane(tex, 640, 480);
    const vrex_fp fa = still_fp(a);

    Plane noisy = a, brighter = a, contrast = a;
    std::mt19937 rng(2);
    for (size_t i = 0; i < a.pix.size(); i++) {
        noisy.pix[i] = static_cast<u8>(std::clamp(int(a.pix[i]) + int(rng() % 17) - 8, 0, 255));
        brighter.pix[i] = static_cast<u8>(std::min(int(a.pix[i]) + 12, 255));
        contrast.pix[i] = static_cast<u8>(128 + (int(a.pix[i]) - 128) * 3 / 4);
    }
    EXPECT_LE(distance(fa, still_fp(noisy)), 4u);
    EXPECT_LE(distance(fa, still_fp(brighter)), 4u);
    EXPECT_LE(distance(fa, still_fp(contrast)), 4u);
    // A 2 px pan of the whole view moves the appearance only a little.
    EXPECT_LE(distance(fa, still_fp(textured_plane(tex, 640, 480, 2, 1))), 10u);
}

TEST(FccLocality, DistanceGrowsWithSceneDifference) {
    const Plane a = textured_plane(Texture(41, 24), 640, 480), b = textured_plane(Texture(42, 24), 640, 480);
    const vrex_fp fa = still_fp(a);
    u32 last = 0;
    // Blend a towards an unrelated scene b: 0 %, 25 %, 50 %, 75 %, 100 %.
    for (int pct = 0; pct <= 100; pct += 25) {
        Plane mix = a;
        for (size_t i = 0; i < a.pix.size(); i++)
            mix.pix[i] = static_cast<u8>((a.pix[i] * (100 - pct) + b.pix[i] * pct) / 100);
        const u32 d = distance(fa, still_fp(mix));
        EXPECT_GE(d + 2, last) << pct << "%";  // monotone up to the projections' sampling noise
        last = d;
    }
    EXPECT_GT(last, 20u);
}

TEST(FccLocality, UnrelatedScenesAreFarApart) {
    std::vector<vrex_fp> fps;
    for (uint32_t seed = 100; seed < 116; seed++)
        fps.push_back(still_fp(textured_plane(Texture(seed, 16), 480, 360)));
    u32 total = 0, pairs = 0;
    for (size_t i = 0; i < fps.size(); i++) {
        for (size_t j = i + 1; j < fps.size(); j++) {
            const u32 d = distance(fps[i], fps[j]);
            EXPECT_GT(d, 20u) << i << " vs " << j;
            total += d;
            pairs++;
        }
    }
    // Independent scenes: about half of the 96 appearance bits differ on average.
    EXPECT_GE(total / pairs, 38u);
    EXPECT_LE(total / pairs, 58u);
}
