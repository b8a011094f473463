// GoogleTest of the C++ LCP layer (vrex::lcp) on real frames. VREX_LCP_GOLDEN names a directory made
// by `python3 -m vrex.export --weights random --out DIR --clip vtest.avi` (the ctest fixture
// model.lcp_cpp.golden): decoder.ts (the TorchScript step) and golden.pt (the frames' encoder tokens
// and luma, Decoder.forward's exact-KV logits, and the Python vrex.enable reuse run's logits).
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "vrex/lcp.hpp"

namespace {

using namespace vrex;

constexpr double kTol = 1e-4;  // fp32 logits of the same ops in another order

struct Golden {
    std::string dir;
    torch::Tensor tokens, luma, exact_ref, lcp_logits, lcp_reused, lcp_tokens, opts;
};

const Golden& golden() {
    static const Golden g = [] {
        const char* dir = std::getenv("VREX_LCP_GOLDEN");
        if (dir == nullptr) throw std::runtime_error("VREX_LCP_GOLDEN is not set (ctest sets it)");
        Golden out;
        out.dir = dir;
        torch::jit::Module m = torch::jit::load(out.dir + "/golden.pt");
        out.tokens = m.attr("tokens").toTensor();
        out.luma = m.attr("luma").toTensor().contiguous();
        out.exact_ref = m.attr("exact_ref").toTensor();
        out.lcp_logits = m.attr("lcp_logits").toTensor();
        out.lcp_reused = m.attr("lcp_reused").toTensor();
        out.lcp_tokens = m.attr("lcp_tokens").toTensor();
        out.opts = m.attr("opts").toTensor();
        return out;
    }();
    return g;
}

std::int64_t frames() {
    return golden().tokens.size(0);
}

LumaView luma(std::int64_t t) {
    const torch::Tensor& l = golden().luma;
    LumaView v;
    v.data = l[t].data_ptr<std::uint8_t>();
    v.height = static_cast<std::uint32_t>(l.size(1));
    v.width = static_cast<std::uint32_t>(l.size(2));
    v.stride = v.width;
    return v;
}

std::shared_ptr<Device> device(std::uint32_t zombie_frames = 0) {
    DeviceOptions o;
    o.backend = BackendChoice::emulated;
    o.backend_options.emu_zombie_frames = zombie_frames;
    auto d = Device::open(o);
    if (!d) throw std::runtime_error("open emulated device: " + d.error().message());
    return *d;
}

lcp::Options golden_options() {
    lcp::Options o;
    o.radius = static_cast<std::uint32_t>(golden().opts[0].item<std::int64_t>());
    o.guard_bits = static_cast<std::uint32_t>(golden().opts[1].item<std::int64_t>());
    o.max_age = static_cast<std::uint32_t>(golden().opts[2].item<std::int64_t>());
    return o;
}

std::shared_ptr<lcp::Session> session(const lcp::Options& o, std::uint32_t zombie_frames = 0) {
    return lcp::Session::enable(golden().dir + "/decoder.ts", device(zombie_frames), o);
}

double max_abs(const torch::Tensor& a, const torch::Tensor& b) {
    return (a - b).abs().max().item<double>();
}

class LcpCpp : public ::testing::Test {
  protected:
    void SetUp() override { at::set_num_threads(1); }
};

TEST_F(LcpCpp, ExactKvEqualsReference) {
    lcp::Options o;
    o.reuse = false;
    auto s = session(o);
    auto r = s->stream();
    for (std::int64_t t = 0; t < frames(); ++t) {
        const auto out = r->step(luma(t), golden().tokens[t]);
        EXPECT_EQ(out.stats.reused, 0U);
        EXPECT_EQ(out.stats.tokens, s->geometry().regions * (s->geometry().tokens_per_region + 1));
        EXPECT_LT(max_abs(out.logits, golden().exact_ref[t]), kTol) << "frame " << t;
    }
}

TEST_F(LcpCpp, ReuseRunEqualsPythonEnable) {
    auto s = session(golden_options());
    auto r = s->stream();
    std::int64_t reused = 0;
    for (std::int64_t t = 0; t < frames(); ++t) {
        const auto out = r->step(luma(t), golden().tokens[t]);
        EXPECT_EQ(out.stats.reused, golden().lcp_reused[t].item<std::int64_t>()) << "frame " << t;
        EXPECT_EQ(out.stats.tokens, golden().lcp_tokens[t].item<std::int64_t>()) << "frame " << t;
        EXPECT_LT(max_abs(out.logits, golden().lcp_logits[t]), kTol) << "frame " << t;
        reused += out.stats.reused;
    }
    // The golden clip must exercise reuse, or this test would only repeat the exact one.
    EXPECT_GT(reused, 0);
}

TEST_F(LcpCpp, KvTensorsAliasBlockMemory) {
    lcp::Options o;
    o.reuse = false;
    auto s = session(o);
    auto r = s->stream();
    r->step(luma(0), golden().tokens[0]);
    for (const KvBlock& b : r->last_frame()) {
        const torch::Tensor v = s->view(b, false);
        EXPECT_EQ(v.data_ptr(), static_cast<const void*>(b.view.data()));
        EXPECT_GT(v.abs().sum().item<double>(), 0.0);  // the module wrote the region's K/V there
    }
}

// Reuse skips prefill: a reused region's block is an earlier frame's, its bytes are not rewritten,
// and only the fresh regions' tokens go through the model.
TEST_F(LcpCpp, ReusedRegionsSkipPrefill) {
    auto s = session(golden_options());
    auto r = s->stream();
    const auto bytes = s->allocator().block_bytes();
    std::map<std::uint32_t, std::vector<std::byte>> snap;  // block id -> contents after its frame
    std::int64_t checked = 0;
    for (std::int64_t t = 0; t < frames(); ++t) {
        const auto out = r->step(luma(t), golden().tokens[t]);
        const auto& g = s->geometry();
        EXPECT_EQ(out.stats.tokens, (g.regions - out.stats.reused) * g.tokens_per_region + g.regions);
        const auto& blocks = r->last_frame();
        for (std::uint32_t reg = 0; reg < g.regions; ++reg) {
            const KvBlock& b = blocks[reg];
            if (out.stats.reused_region[reg]) {
                ASSERT_TRUE(snap.count(b.id)) << "reused block " << b.id << " was never computed";
                EXPECT_LT(r->computed_at(b.id), t);
                EXPECT_EQ(std::memcmp(snap[b.id].data(), b.view.data(), bytes), 0)
                    << "reused block rewritten";
                ++checked;
            } else {
                EXPECT_EQ(r->computed_at(b.id), t);
            }
            snap[b.id].assign(b.view.begin(), b.view.end());
        }
    }
    EXPECT_GT(checked, 0);
}

TEST_F(LcpCpp, AgeCapBoundsReuse) {
    lcp::Options o = golden_options();
    o.max_age = 1;
    auto s = session(o);
    auto r = s->stream();
    for (std::int64_t t = 0; t < frames(); ++t) {
        const auto out = r->step(luma(t), golden().tokens[t]);
        for (std::uint32_t reg = 0; reg < s->geometry().regions; ++reg)
            if (out.stats.reused_region[reg]) {
                EXPECT_GE(r->computed_at(r->last_frame()[reg].id), t - 1);
            }
    }
}

// The window ledger: the HAL holds exactly the blocks the window references; blocks leaving it are
// released, and their handles are stale from then on (never reused).
TEST_F(LcpCpp, WindowLedgerReleasesAndStaleHandlesAreRefused) {
    auto s = session(golden_options());
    auto r = s->stream();
    std::vector<KvBlock> first;
    for (std::int64_t t = 0; t < frames(); ++t) {
        r->step(luma(t), golden().tokens[t]);
        if (t == 0) first = r->last_frame();
        auto st = s->allocator().stats();
        ASSERT_TRUE(st);
        EXPECT_EQ(st->resident_blocks, r->resident_blocks()) << "frame " << t;
        EXPECT_LE(r->resident_blocks(), std::size_t{s->geometry().window} * s->geometry().regions);
    }
    ASSERT_GT(frames(), 2 * std::int64_t{s->geometry().window});
    std::size_t gone = 0;
    for (const KvBlock& b : first) {
        if (r->computed_at(b.id) == 0) continue;  // still referenced by the window (reused ever since)
        ++gone;
        ASSERT_TRUE(r->hal_stream().begin_frame(luma(0)));
        const Result<void> rr = r->hal_stream().reuse(0, b);
        EXPECT_EQ(rr.error(), make_error_code(errc::stale_handle));
        ASSERT_TRUE(r->hal_stream().end_frame());
    }
    EXPECT_GT(gone, 0U);
}

TEST_F(LcpCpp, ZombieThresholdBelowWindowIsRefused) {
    try {
        session(golden_options(), 1);
        FAIL() << "a device that ages blocks out inside the window was accepted";
    } catch (const lcp::Error& e) {
        EXPECT_NE(std::string(e.what()).find("zombie"), std::string::npos) << e.what();
    }
}

TEST_F(LcpCpp, BadInputIsAnError) {
    auto s = session(golden_options());
    auto r = s->stream();
    EXPECT_THROW(r->step(luma(0), torch::zeros({3, 3})), lcp::Error);
    EXPECT_THROW(lcp::Session::enable(golden().dir + "/missing.ts", device()), lcp::Error);
    lcp::Options bad;
    bad.radius = 40;
    EXPECT_THROW(lcp::Session::enable(golden().dir + "/decoder.ts", device(), bad), lcp::Error);
}

}  // namespace
