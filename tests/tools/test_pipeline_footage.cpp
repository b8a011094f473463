// The pipeline on a short real clip (the first 60 frames of vtest.avi re-encoded to H.264), two
// concurrent streams on an audited emulated device. Proves the memory accounting, that no lookup
// ever returns a retired block and that no block is released while a frame of the temporal window
// (the context the same-window baseline keeps) still references it, with the window ledger and
// with the device's zombie rule alone. Skips when the footage cannot be fetched (scripts/fetch-footage.sh).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "audit_backend.hpp"
#include "device_impl.hpp"
#include "pipeline/pipeline.hpp"

namespace {

namespace fs = std::filesystem;
using namespace vrex::pipeline;

std::string shell_out(const std::string& cmd) {
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
        char buf[512];
        while (std::fgets(buf, sizeof(buf), p)) out += buf;
        if (pclose(p) != 0) return {};
    }
    return out;
}

// vtest.avi's first 60 frames as H.264, made once per build tree.
std::string short_h264_clip() {
    const fs::path clip = fs::path(VREX_TEST_BINARY_DIR) / "vtest-60.mp4";
    if (fs::exists(clip)) return clip;
    const std::string env =
        shell_out("bash " VREX_SOURCE_DIR "/scripts/fetch-footage.sh --clip VTEST 2>/dev/null");
    const auto at = env.find("VREX_VTEST_AVI=");
    if (at == std::string::npos) return {};
    const std::string avi = env.substr(at + 15, env.find('\n', at) - at - 15);
    const fs::path tmp = clip.string() + ".tmp.mp4";
    const std::string cmd = "ffmpeg -nostdin -v error -y -i '" + avi +
                            "' -frames:v 60 -c:v libx264 -preset veryfast "
                            "-crf 23 -pix_fmt yuv420p '" +
                            tmp.string() + "'";
    if (std::system(cmd.c_str()) != 0) return {};
    fs::rename(tmp, clip);
    return clip;
}

}  // namespace

class PipelineFootage : public ::testing::TestWithParam<bool> {};

TEST_P(PipelineFootage, AccountingBaselineWindowAndNoRetiredBlockOnTwoH264Streams) {
    const bool window_release = GetParam();
    const std::string clip = short_h264_clip();
    if (clip.empty())
        GTEST_SKIP() << "footage unavailable (scripts/fetch-footage.sh failed or ffmpeg/libx264 missing)";

    vrex::BackendOptions bo;
    bo.emu_banks = 16;
    bo.emu_bank_size = 64ull << 20;
    auto inner = vrex::find_backend_factory("emulated")->open(bo);
    ASSERT_TRUE(inner) << inner.error().message();
    auto audit_owned = std::make_unique<vrex::test::AuditBackend>(std::move(*inner));
    vrex::test::AuditBackend& audit = *audit_owned;
    auto dev = vrex::adopt_backend(std::move(audit_owned));
    ASSERT_TRUE(dev);
    audit.window_frames = (*dev)->info().zombie_frames + 1;

    PipelineOptions opt;
    opt.window_release = window_release;
    opt.annotate = 2;
    const StreamSource sources[] = {{clip, 0, false}, {clip, 20, true}};
    opt.max_frames = 50;
    const RunResult r = run_pipeline(*dev, sources, opt);

    ASSERT_EQ(r.streams.size(), 2u);
    EXPECT_EQ(r.streams[0].codec, "h264");
    EXPECT_EQ(r.streams[0].width, 768u);
    EXPECT_EQ(r.frames, 100u);
    EXPECT_EQ(r.streams[1].frames, 50u);  // 40 frames left after the offset, then it wraps
    ASSERT_EQ(r.samples.size(), 50u);

    // Resident bytes are the live blocks: pipeline, allocator, device counter and bank registers agree.
    EXPECT_EQ(r.accounting_mismatches, 0u) << r.first_mismatch;
    const std::uint64_t per_frame =
        std::uint64_t{kRegions} * opt.model.tokens_per_region * opt.model.bytes_per_token();
    EXPECT_EQ(r.frame_kv_bytes, per_frame);
    for (const StepSample& s : r.samples) {
        EXPECT_EQ(s.resident_bytes, s.live_blocks * r.block_bytes) << "step " << s.step;
        std::uint64_t banks = 0;
        for (std::uint64_t b : s.bank_kv_bytes) banks += b;
        EXPECT_EQ(banks, s.resident_bytes) << "step " << s.step;
        // Append-only baseline: every region of every frame so far.
        EXPECT_EQ(s.baseline_bytes, s.frames * per_frame) << "step " << s.step;
    }
    EXPECT_EQ(r.allocations - r.released, r.samples.back().live_blocks);
    EXPECT_EQ(audit.live.size(), r.samples.back().live_blocks);

    // Zombies were released and looked up around, and no lookup returned one.
    EXPECT_GT(audit.releases, 100u);
    EXPECT_GT(audit.lookup_hits, 1000u);
    EXPECT_EQ(audit.hits_on_released, 0u);
    EXPECT_EQ(audit.hits_on_unknown, 0u);
    EXPECT_EQ(audit.released_in_window, 0u);
    if (window_release) {
        // Every release was the ledger's: the device's zombie rule never had to step in.
        EXPECT_EQ(r.window_released, r.released);
    } else {
        EXPECT_EQ(r.window_released, 0u);
    }

    // Reuse happened, every reused region passed the guard, and memory stayed far below the baseline.
    EXPECT_GT(r.reused, 0u);
    for (double p : r.reused_psnr) EXPECT_GE(p, opt.policy.psnr_guard_db);
    EXPECT_LT(r.resident_bytes_peak(), r.baseline_bytes_peak());
    EXPECT_EQ(r.annotated.size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Release, PipelineFootage, ::testing::Bool(), [](const auto& info) {
    return info.param ? std::string("WindowLedger") : std::string("ZombieRuleOnly");
});
