// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// FCC fingerprint locality on real camera footage (scripts/fetch-footage.sh): consecutive frames of a
// static camera must stay close, different scenes must be far apart. The measured distributions are
// printed so docs/hw/fcc.md can quote them.
//
// Footage: vtest.avi and tree.avi from Debian's opencv-doc package; vtest.avi comes from a University of
// Reading research dataset, acknowledged here as its terms ask. It is fetched at run time, never committed.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

extern "C" {
#include "fcc_fingerprint.h"
}

namespace {

constexpr u32 kNearRadius = 15;  // consecutive static-camera frames: at most this far
constexpr u32 kFarRadius = 20;   // different scenes: further than this

struct Clip {
    std::string gray;
    u32 width = 0;
    u32 height = 0;
    u32 frames = 0;
};

struct Footage {
    bool ok = false;
    std::string why;
    Clip vtest;
    Clip tree;
};

Footage fetch_footage() {
    Footage f;
    const std::string cmd = std::string(VREX_SOURCE_DIR) + "/scripts/fetch-footage.sh --gray";
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) {
        f.why = "cannot run " + cmd;
        return f;
    }
    std::map<std::string, std::string, std::less<>> kv;
    char line[1024];
    while (std::fgets(line, sizeof(line), pipe)) {
        std::string_view s(line);
        while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
        const auto eq = s.find('=');
        if (eq != std::string_view::npos)
            kv.emplace(std::string(s.substr(0, eq)), std::string(s.substr(eq + 1)));
    }
    const int status = pclose(pipe);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        f.why = cmd + " failed (see its message above; no network or no apt?)";
        return f;
    }
    auto clip = [&kv](const std::string& key) {
        Clip c;
        c.gray = kv["VREX_" + key + "_GRAY"];
        c.width = static_cast<u32>(std::stoul(kv["VREX_" + key + "_WIDTH"]));
        c.height = static_cast<u32>(std::stoul(kv["VREX_" + key + "_HEIGHT"]));
        c.frames = static_cast<u32>(std::stoul(kv["VREX_" + key + "_FRAMES"]));
        return c;
    };
    f.vtest = clip("VTEST");
    f.tree = clip("TREE");
    f.ok = true;
    return f;
}

const Footage& footage() {
    static const Footage f = fetch_footage();
    return f;
}

// Rewrites a frame into a different view of the same content (mirror, pan, ...).
using View = std::function<void(std::span<const u8> src, std::span<u8> dst, u32 w, u32 h)>;

void identity(std::span<const u8> src, std::span<u8> dst, u32, u32) {
    std::copy(src.begin(), src.end(), dst.begin());
}

void mirror(std::span<const u8> src, std::span<u8> dst, u32 w, u32 h) {
    for (u32 y = 0; y < h; y++)
        for (u32 x = 0; x < w; x++) dst[size_t{y} * w + x] = src[size_t{y} * w + (w - 1 - x)];
}

// Circular pan by a third of the width and a quarter of the height.
void pan(std::span<const u8> src, std::span<u8> dst, u32 w, u32 h) {
    for (u32 y = 0; y < h; y++)
        for (u32 x = 0; x < w; x++)
            dst[size_t{y} * w + x] = src[size_t{(y + h / 4) % h} * w + (x + w / 3) % w];
}

// Fingerprints every frame of @clip as one stream (prev = previous frame, as the device does).
std::vector<vrex_fp> fingerprint_clip(const Clip& clip, const View& view) {
    std::ifstream in(clip.gray, std::ios::binary);
    EXPECT_TRUE(in.good()) << clip.gray;
    const size_t frame_bytes = size_t{clip.width} * clip.height;
    std::vector<u8> raw(frame_bytes), frame(frame_bytes);
    vrex_fcc_image img[2];
    struct vrex_fcc_motion mv;
    struct vrex_fcc_features feat;
    std::vector<vrex_fp> fps;
    for (u32 i = 0; i < clip.frames; i++) {
        if (!in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(frame_bytes))) break;
        view(raw, frame, clip.width, clip.height);
        vrex_fp fp;
        const int ret = vrex_fcc_fingerprint(frame.data(), clip.width, clip.height, clip.width,
                                             i ? &img[(i - 1) & 1] : nullptr, &img[i & 1], &mv, &fp, &feat);
        EXPECT_EQ(ret, VREX_OK);
        fps.push_back(fp);
    }
    EXPECT_EQ(fps.size(), clip.frames) << clip.gray << " is shorter than announced";
    return fps;
}

// Prints percentiles and a histogram (buckets of 4 bits); returns the fraction satisfying @pass.
double report(std::string_view name, std::vector<u32> d, const std::function<bool(u32)>& pass,
              std::string_view criterion) {
    std::sort(d.begin(), d.end());
    const auto pct = [&d](double p) { return d[static_cast<size_t>(p * double(d.size() - 1) + 0.5)]; };
    const auto ok = std::count_if(d.begin(), d.end(), pass);
    const double frac = double(ok) / double(d.size());
    std::printf("[footage] %.*s: n=%zu min=%u p5=%u p25=%u p50=%u p75=%u p95=%u max=%u; %.*s: %.1f%%\n",
                int(name.size()), name.data(), d.size(), d.front(), pct(0.05), pct(0.25), pct(0.5), pct(0.75),
                pct(0.95), d.back(), int(criterion.size()), criterion.data(), 100.0 * frac);
    std::map<u32, size_t> hist;
    for (u32 v : d) hist[v / 4]++;
    std::printf("[footage]   histogram:");
    for (const auto& [bucket, n] : hist) std::printf(" %u-%u:%zu", bucket * 4, bucket * 4 + 3, n);
    std::printf("\n");
    return frac;
}

class FootageFingerprint : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!footage().ok) GTEST_SKIP() << "real footage unavailable: " << footage().why;
    }
};

}  // namespace

TEST_F(FootageFingerprint, ConsecutiveStaticCameraFramesAreClose) {
    const Clip& v = footage().vtest;
    ASSERT_EQ(v.width, 768u);
    ASSERT_EQ(v.height, 576u);
    ASSERT_EQ(v.frames, 795u);
    const std::vector<vrex_fp> fps = fingerprint_clip(v, identity);
    std::vector<u32> d;
    for (size_t i = 1; i < fps.size(); i++) d.push_back(vrex_fp_distance(&fps[i - 1], &fps[i]));
    const double frac = report(
        "vtest consecutive frames", d, [](u32 x) { return x <= kNearRadius; }, "<= 15");
    EXPECT_GE(frac, 0.90);
}

TEST_F(FootageFingerprint, DifferentCameraScenesAreFar) {
    const Clip& t = footage().tree;
    ASSERT_EQ(t.frames, 68u);
    const std::vector<vrex_fp> v = fingerprint_clip(footage().vtest, identity);
    const std::vector<vrex_fp> tree = fingerprint_clip(t, identity);
    std::vector<u32> d;
    for (const vrex_fp& a : v)
        for (const vrex_fp& b : tree) d.push_back(vrex_fp_distance(&a, &b));
    const double frac = report(
        "vtest x tree (all pairs)", d, [](u32 x) { return x > kFarRadius; }, "> 20");
    EXPECT_GE(frac, 0.95);
}

TEST_F(FootageFingerprint, MirroredAndPannedViewsAreDifferentScenes) {
    const Clip& c = footage().vtest;
    const std::vector<vrex_fp> v = fingerprint_clip(c, identity);
    const std::vector<vrex_fp> m = fingerprint_clip(c, mirror);
    const std::vector<vrex_fp> p = fingerprint_clip(c, pan);
    ASSERT_EQ(v.size(), m.size());
    ASSERT_EQ(v.size(), p.size());
    std::vector<u32> dm, dp;
    for (size_t i = 0; i < v.size(); i++) {
        dm.push_back(vrex_fp_distance(&v[i], &m[i]));
        dp.push_back(vrex_fp_distance(&v[i], &p[i]));
    }
    const auto far = [](u32 x) { return x > kFarRadius; };
    EXPECT_GE(report("vtest x mirrored vtest (same frame)", dm, far, "> 20"), 0.95);
    EXPECT_GE(report("vtest x panned vtest (w/3, h/4; same frame)", dp, far, "> 20"), 0.95);
}
