// Pooled mode on four DIFFERENT real clips (vtest.avi, mire-2, mbt/cube, tree.avi; scripts/fetch-footage.sh)
// sharing one device and one pool: a scene cut spliced into one stream (mire-2 cut to the ViSP cube
// sequence of the same size) must move every other stream's reuse rate by less than 3 percentage
// points. The run is deterministic, so without the cut the others' reuse is reproduced exactly; what
// moves it is the cut stream's new content reaching the others through pool-scoped similarity lookups
// and shared bank groups. Positive control: the cut stream's own reuse does change. Skips when the
// footage cannot be fetched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "pipeline/pipeline.hpp"

namespace {

using namespace vrex::pipeline;

// VREX_<KEY>_PATH values printed by fetch-footage.sh; empty when it failed.
std::map<std::string, std::string> footage() {
    std::map<std::string, std::string> m;
    FILE* p = popen(
        "bash " VREX_SOURCE_DIR
        "/scripts/fetch-footage.sh --clip VTEST --clip MIRE --clip CUBE --clip TREE --clip VCUBE 2>/dev/null",
        "r");
    if (!p) return m;
    char buf[1024];
    while (std::fgets(buf, sizeof(buf), p)) {
        std::string line(buf);
        if (!line.empty() && line.back() == '\n') line.pop_back();
        const auto at = line.find("_PATH=");
        if (line.starts_with("VREX_") && at != std::string::npos)
            m[line.substr(5, at - 5)] = line.substr(at + 6);
    }
    if (pclose(p) != 0) m.clear();
    return m;
}

std::shared_ptr<vrex::Device> open_emulated() {
    vrex::DeviceOptions o;
    o.backend = vrex::BackendChoice::emulated;
    o.backend_options.emu_banks = 16;
    o.backend_options.emu_bank_size = 64ull << 20;
    auto dev = vrex::Device::open(o);
    EXPECT_TRUE(dev) << dev.error().message();
    return dev ? *dev : nullptr;
}

}  // namespace

TEST(PooledSceneCut, CutInOneStreamMovesTheOthersReuseByLessThan3Percent) {
    const auto clips = footage();
    for (const char* k : {"VTEST", "MIRE", "CUBE", "TREE", "VCUBE"})
        if (!clips.contains(k)) GTEST_SKIP() << "footage unavailable (scripts/fetch-footage.sh failed)";

    const StreamSource sources[] = {{clips.at("VTEST"), 0, false},
                                    {clips.at("MIRE"), 0, false},
                                    {clips.at("CUBE"), 0, false},
                                    {clips.at("TREE"), 0, false}};
    PipelineOptions opt;
    opt.pooled = true;
    opt.annotate = 0;
    opt.max_frames = 120;
    constexpr std::uint32_t kCutStream = 1, kCutAt = 40;

    auto dev = open_emulated();
    ASSERT_TRUE(dev);
    const RunResult plain = run_pipeline(dev, sources, opt);
    PipelineOptions cut_opt = opt;
    cut_opt.cuts.push_back({kCutStream, kCutAt, clips.at("VCUBE")});
    dev = open_emulated();
    ASSERT_TRUE(dev);
    const RunResult cut = run_pipeline(dev, sources, cut_opt);

    ASSERT_EQ(plain.accounting_mismatches, 0u) << plain.first_mismatch;
    ASSERT_EQ(cut.accounting_mismatches, 0u) << cut.first_mismatch;
    ASSERT_EQ(cut.streams.size(), 4u);
    // The cut happened: the stream went on with the spliced clip (40 + its 80 frames).
    EXPECT_EQ(cut.streams[kCutStream].cut_path, clips.at("VCUBE"));
    EXPECT_EQ(cut.streams[kCutStream].frames, 120u);
    // The four clips really are pooled: similarity lookups in pool scope ran for every stream.
    EXPECT_TRUE(cut.pooled);

    for (std::uint32_t s = 0; s < 4; s++) {
        const double before = plain.streams[s].reuse_rate(), after = cut.streams[s].reuse_rate();
        RecordProperty("stream" + std::to_string(s) + "_reuse_plain", std::to_string(before));
        RecordProperty("stream" + std::to_string(s) + "_reuse_cut", std::to_string(after));
        std::printf("stream %u: reuse %.4f without the cut, %.4f with it (cross-stream reused %lu / %lu)\n",
                    s, before, after, static_cast<unsigned long>(plain.streams[s].reused_cross_stream),
                    static_cast<unsigned long>(cut.streams[s].reused_cross_stream));
        if (s == kCutStream) {
            // Positive control: the measurement sees the cut where it happened.
            EXPECT_NE(before, after) << "the cut did not change its own stream's reuse";
            continue;
        }
        EXPECT_EQ(plain.streams[s].frames, cut.streams[s].frames);
        EXPECT_LT(std::fabs(after - before), 0.03)
            << "stream " << s << " moved by the cut in stream " << kCutStream;
    }
}
