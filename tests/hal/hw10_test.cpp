// Hardware 1.0 through the HAL, the same suite on every backend (docs/hardware.md "Hardware 1.0"):
// DeviceInfo::hw_version says 1.0; a batch holding a similarity query by tier or with more than one
// candidate fails with EOPNOTSUPP and a message naming the revision, and none of it runs; queries of
// before (any tier, nearest only or one candidate, temporal) answer as on 1.1; FrameInfo::
// region_motion is kRegionMotionUnknown in every region. On 1.1 the same calls are served (the
// control). The emulation presents both revisions (VREX_EMU_HW_VERSION); the kernel backend the
// one the guest's device is: VREX_EXPECT_HW=1.0 after scripts/qemu/init.sh reloaded vrex_sim.ko
// with hw_version=1.0, else 1.1.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends.hpp"
#include "device_impl.hpp"
#include "panned_texture.hpp"
#include "vrex/hal.hpp"

namespace vrex {
namespace {

constexpr std::uint32_t kW = test::kPanW, kH = test::kPanH;

std::string name_of(std::uint32_t v) {
    return std::to_string(v >> 16) + "." + std::to_string(v & 0xffff);
}

// VREX_EMU_HW_VERSION for one scope, the previous value restored after.
class EmuRevision {
  public:
    explicit EmuRevision(const char* v) {
        if (const char* old = std::getenv(kVar)) old_ = old;
        if (v)
            setenv(kVar, v, 1);
        else
            unsetenv(kVar);
    }
    ~EmuRevision() {
        if (old_)
            setenv(kVar, old_->c_str(), 1);
        else
            unsetenv(kVar);
    }
    EmuRevision(const EmuRevision&) = delete;
    EmuRevision& operator=(const EmuRevision&) = delete;

  private:
    static constexpr const char* kVar = "VREX_EMU_HW_VERSION";
    std::optional<std::string> old_;
};

class HwRevision : public ::testing::TestWithParam<std::string> {
  protected:
    // The revisions this run presents on the backend (see the top of the file).
    std::vector<std::uint32_t> revisions() const {
        if (GetParam() == "emulated") return {kHwVersion1_0, kHwVersion1_1};
        const char* e = std::getenv("VREX_EXPECT_HW");
        return {e && std::string_view(e) == "1.0" ? kHwVersion1_0 : kHwVersion1_1};
    }
    std::shared_ptr<Device> open(std::uint32_t v) {
        EmuRevision env(v == kHwVersion1_0 ? "1.0" : "1.1");
        auto be = test::open_backend(GetParam());
        EXPECT_NE(be, nullptr);
        if (!be) return nullptr;
        auto d = adopt_backend(std::move(be));
        EXPECT_TRUE(d) << d.error_message();
        return d ? *d : nullptr;
    }
};

// A stream with two blocks of region 3: block 0 of frame 0, block 1 of frame 1 (the same picture: the
// same fingerprint, distance 0 to both); frame 2, the picture panned 2 px, is open.
struct Scene {
    std::shared_ptr<KvAllocator> alloc;
    std::unique_ptr<Stream> s;
    KvBlock blocks[2];
    Fingerprint fp;
    std::array<std::uint8_t, 16> motion[3];
};

void build(const std::shared_ptr<Device>& dev, Scene& sc) {
    auto a = KvAllocator::create(dev, ModelGeometry{2, 2, 64, DType::fp16, 16});
    ASSERT_TRUE(a) << a.error_message();
    sc.alloc = *a;
    auto s = sc.alloc->create_stream();
    ASSERT_TRUE(s) << s.error_message();
    sc.s = std::move(*s);
    for (std::uint32_t t = 0; t < 3; t++) {
        const auto px = test::panned_texture(3, t == 2 ? 2 : 0);  // frame 2 panned: every region moves
        auto f = sc.s->begin_frame(LumaView{px.data(), kW, kH, kW});
        ASSERT_TRUE(f) << f.error_message();
        sc.motion[t] = f->region_motion;
        if (t == 0) sc.fp = f->fp;
        if (t == 2) break;
        auto b = sc.s->allocate(3);
        ASSERT_TRUE(b) << b.error_message();
        sc.blocks[t] = *b;
        ASSERT_TRUE(sc.s->end_frame());
    }
}

TEST_P(HwRevision, DeviceInfoSaysTheRevision) {
    for (std::uint32_t v : revisions()) {
        SCOPED_TRACE("hardware " + name_of(v));
        auto dev = open(v);
        ASSERT_NE(dev, nullptr);
        EXPECT_EQ(dev->info().hw_version, v);
        if (GetParam() == "emulated") {
            EXPECT_EQ(dev->description().find("hardware 1.0") != std::string::npos, v == kHwVersion1_0)
                << dev->description();
        }
    }
}

TEST_P(HwRevision, TierAndCandidateQueriesNeedHardware11) {
    for (std::uint32_t v : revisions()) {
        SCOPED_TRACE("hardware " + name_of(v));
        auto dev = open(v);
        ASSERT_NE(dev, nullptr);
        Scene sc;
        build(dev, sc);
        if (HasFatalFailure()) return;
        const Query plain = Query::similar(3, sc.fp, 10);
        const Query asks[] = {
            Query::similar(3, sc.fp, 10).in_tier(Tier::device),
            Query::similar(3, sc.fp, 10).in_tier(Tier::host), Query::similar(3, sc.fp, 10).nearest(2),
            Query::similar(3, sc.fp, 10, Scope::stream, true).in_tier(Tier::device).nearest(8)};
        for (const Query& q : asks) {
            const Query batch[] = {plain, Query::temporal(3, -1), q};
            auto before = dev->stats();
            ASSERT_TRUE(before) << before.error_message();
            auto got = sc.s->retrieve_batch(batch);
            auto after = dev->stats();
            ASSERT_TRUE(after) << after.error_message();
            if (v == kHwVersion1_1) {
                ASSERT_TRUE(got) << got.error_message();
                EXPECT_TRUE((*got)[0].hit);
                EXPECT_EQ((*got)[2].hit, q.tier != Tier::host) << "no host-tier entry here";
                EXPECT_EQ((*got)[2].candidates.size(), q.candidates ? 2u : 0u);
                EXPECT_EQ(after->lookups, before->lookups + 3);
                continue;
            }
            ASSERT_FALSE(got);
            EXPECT_EQ(got.error(), std::errc::operation_not_supported);
            EXPECT_NE(got.error_message().find("query 2"), std::string::npos) << got.error_message();
            EXPECT_NE(got.error_message().find("the device is hardware 1.0"), std::string::npos)
                << got.error_message();
            EXPECT_EQ(after->lookups, before->lookups) << "none of the batch ran";
            EXPECT_EQ(after->cmd_errors, before->cmd_errors);
        }
    }
}

TEST_P(HwRevision, QueriesOfBeforeAnswerAsOn11) {
    std::vector<std::vector<std::uint32_t>> answers;  // per revision: the blocks found, in query order
    for (std::uint32_t v : revisions()) {
        SCOPED_TRACE("hardware " + name_of(v));
        auto dev = open(v);
        ASSERT_NE(dev, nullptr);
        Scene sc;
        build(dev, sc);
        if (HasFatalFailure()) return;
        const Query batch[] = {Query::similar(3, sc.fp, 31), Query::temporal(3, -1), Query::temporal(3, -2),
                               Query::similar(3, sc.fp, 31, Scope::stream, true).nearest(1),
                               Query::similar(3, sc.fp, 31).in_tier(Tier::any)};
        auto got = sc.s->retrieve_batch(batch);
        ASSERT_TRUE(got) << got.error_message();
        ASSERT_EQ(got->size(), 5u);
        const auto ours = [&](const Retrieval& r) {
            return r.hit && (r.block.id == sc.blocks[0].id || r.block.id == sc.blocks[1].id);
        };
        EXPECT_TRUE(ours((*got)[0]));
        EXPECT_EQ((*got)[0].distance, 0u);
        EXPECT_EQ((*got)[1].block.id, sc.blocks[1].id);
        EXPECT_EQ((*got)[2].block.id, sc.blocks[0].id);
        ASSERT_EQ((*got)[3].candidates.size(), 1u);
        EXPECT_TRUE(ours((*got)[3].candidates[0]));
        EXPECT_FALSE((*got)[3].candidates[0].host_tier);
        EXPECT_TRUE(ours((*got)[4]));
        answers.emplace_back();
        for (const Retrieval& r : *got) answers.back().push_back(r.hit ? r.block.id : ~0u);
        EXPECT_TRUE(sc.s->end_frame());
    }
    if (answers.size() == 2) {
        EXPECT_EQ(answers[0], answers[1]) << "1.0 and 1.1 with the same history";
    }
}

TEST_P(HwRevision, RegionMotionIsUnknownOn10) {
    for (std::uint32_t v : revisions()) {
        SCOPED_TRACE("hardware " + name_of(v));
        auto dev = open(v);
        ASSERT_NE(dev, nullptr);
        Scene sc;
        build(dev, sc);
        if (HasFatalFailure()) return;
        EXPECT_EQ(sc.s->frame().region_motion, sc.motion[2]);
        for (std::uint32_t t = 0; t < 3; t++) {
            SCOPED_TRACE("frame " + std::to_string(t));
            for (std::uint8_t m : sc.motion[t]) {
                if (v == kHwVersion1_0)
                    EXPECT_EQ(m, kRegionMotionUnknown);
                else
                    EXPECT_EQ(m > 0, t == 2) << "measured: still twice, then the pan in every region";
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, HwRevision, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

// The emulation's option: anything but 1.0 and 1.1 (or unset/empty) is refused with the variable named.
TEST(EmulatedHwVersion, ABadValueIsRefusedNamingTheVariable) {
    for (const char* bad : {"2.0", "1", "1.10", "v1.0"}) {
        EmuRevision env(bad);
        DeviceOptions o;
        o.backend = BackendChoice::emulated;
        auto d = Device::open(o);
        ASSERT_FALSE(d) << bad;
        EXPECT_EQ(d.error(), std::errc::invalid_argument);
        EXPECT_NE(d.error_message().find(std::string("VREX_EMU_HW_VERSION=\"") + bad + "\""),
                  std::string::npos)
            << d.error_message();
        EXPECT_NE(d.error_message().find("valid: 1.0, 1.1"), std::string::npos) << d.error_message();
    }
    for (const char* good : {"", "1.1", "1.0"}) {
        EmuRevision env(good);
        DeviceOptions o;
        o.backend = BackendChoice::emulated;
        auto d = Device::open(o);
        ASSERT_TRUE(d) << good << ": " << d.error_message();
        EXPECT_EQ((*d)->info().hw_version, std::string_view(good) == "1.0" ? kHwVersion1_0 : kHwVersion1_1);
    }
}

}  // namespace
}  // namespace vrex
