// vrexctl selftest: register and SHIE sanity on the chosen backend. Every check reports PASS, FAIL or
// SKIP; any FAIL exits with kExitCheckFailed.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "synthetic.hpp"

extern "C" {
#include "vrex_regs.h"
}

namespace vrexctl {
namespace {

class Checks {
  public:
    explicit Checks(bool json) : json_(json) {}
    void add(const std::string& name, bool ok, const std::string& detail = "") {
        record(name, ok ? "pass" : "fail", detail);
    }
    void skip(const std::string& name, const std::string& detail) { record(name, "skip", detail); }
    bool failed() const { return failed_; }
    const nlohmann::json& json() const { return all_; }

  private:
    void record(const std::string& name, const char* result, const std::string& detail) {
        failed_ |= std::string_view(result) == "fail";
        all_.push_back({{"check", name}, {"result", result}, {"detail", detail}});
        if (!json_)
            fmt::print("{:<5} {}{}\n",
                       std::string(result) == "pass"   ? "PASS"
                       : std::string(result) == "fail" ? "FAIL"
                                                       : "SKIP",
                       name, detail.empty() ? "" : "  (" + detail + ")");
    }
    bool json_;
    bool failed_ = false;
    nlohmann::json all_ = nlohmann::json::array();
};

void register_checks(vrex::Device& dev, Checks& c) {
    auto id = dev.read_register(VREX_REG_ID);
    if (!id &&
        (id.error() == std::errc::operation_not_permitted || id.error() == std::errc::permission_denied)) {
        c.skip("registers", "register reads need CAP_SYS_ADMIN");
        return;
    }
    auto rd = [&](std::uint32_t off) -> std::int64_t {
        auto v = dev.read_register(off);
        return v ? static_cast<std::int64_t>(*v) : -1;
    };
    const vrex::DeviceInfo& i = dev.info();
    c.add("register ID reads \"VREX\"", rd(VREX_REG_ID) == VREX_ID_VALUE,
          fmt::format("0x{:08x}", rd(VREX_REG_ID)));
    c.add("register VERSION major 1", (rd(VREX_REG_VERSION) >> 16) == 1,
          fmt::format("0x{:08x}", rd(VREX_REG_VERSION)));
    c.add("register CAPS has FCC and SHIE",
          (rd(VREX_REG_CAPS) & (VREX_CAP_FCC | VREX_CAP_SHIE)) == (VREX_CAP_FCC | VREX_CAP_SHIE));
    c.add("register BANK_COUNT matches the query", rd(VREX_REG_BANK_COUNT) == i.bank_count);
    c.add("register BANK_SIZE_KB matches the query",
          (rd(VREX_REG_BANK_SIZE_KB) << 10) == static_cast<std::int64_t>(i.bank_size));
    c.add("register ZOMBIE_FRAMES matches the query", rd(VREX_REG_ZOMBIE_FRAMES) == i.zombie_frames);
    c.add("register GROUP_BANKS matches the query", rd(VREX_REG_GROUP_BANKS) == i.group_banks);
    auto unaligned = dev.read_register(VREX_REG_ID + 2);
    c.add("unaligned register read is EINVAL",
          !unaligned && unaligned.error() == std::errc::invalid_argument);
    auto outside = dev.read_register(VREX_REG_WINDOW);
    c.add("read outside the register window is EINVAL",
          !outside && outside.error() == std::errc::invalid_argument);
}

void shie_checks(const std::shared_ptr<vrex::Device>& dev, Checks& c) {
    // One fp32 layer, one head, 64 dims, 64 tokens: a 32 KiB block.
    const vrex::ModelGeometry geom{1, 1, 64, vrex::DType::fp32, 64};
    auto alloc = vrex::KvAllocator::create(dev, geom);
    if (!alloc) fail("allocator", alloc.error());
    auto before = dev->stats();
    if (!before) fail("stats", before.error());
    auto stream = (*alloc)->create_stream();
    if (!stream) fail("stream", stream.error());
    vrex::Stream& s = **stream;
    constexpr std::uint32_t W = 160, H = 120, kRegion = 5;
    const vrex::DeviceInfo& i = dev->info();
    std::uint32_t lookups = 0;

    auto px = synthetic_luma(W, H, 0);
    auto f0 = s.begin_frame({px.data(), W, H, W});
    c.add("FCC: first frame is frame 0 in a valid bank group",
          f0 && f0->frame == 0 && f0->bank_count > 0 && f0->bank_first + f0->bank_count <= i.bank_count,
          f0 ? fmt::format("group {}, banks {}..{}", f0->group, f0->bank_first,
                           f0->bank_first + f0->bank_count - 1)
             : f0.error().message());
    if (!f0) return;
    auto blk = s.allocate(kRegion);
    c.add("allocate a KV block in the frame's group",
          blk && blk->bank >= f0->bank_first && blk->bank < f0->bank_first + f0->bank_count &&
              blk->data.size() == (*alloc)->block_bytes(),
          blk ? fmt::format("block {} in bank {}", blk->id, blk->bank) : blk.error().message());
    if (!blk) return;
    for (std::size_t k = 0; k < blk->data.size(); k++) blk->data[k] = static_cast<std::byte>(k * 7 + 1);
    auto t0 = s.retrieve_temporal(kRegion, 0);
    lookups++;
    c.add("temporal lookup returns the block with its data",
          t0 && t0->hit && t0->block.id == blk->id && t0->block.data.size() == blk->data.size() &&
              t0->block.data[100] == static_cast<std::byte>(701 & 0xff));
    auto sim = s.retrieve_similar(kRegion, f0->fp, 0);
    lookups++;
    c.add("similarity lookup at radius 0 is an exact hit",
          sim && sim->hit && !sim->approximate && sim->distance == 0 && sim->block.id == blk->id);
    auto miss = s.retrieve_temporal(kRegion + 1, 0);
    lookups++;
    c.add("lookup of an empty region misses", miss && !miss->hit);
    auto bad_region = s.allocate(16);
    c.add("region 16 is rejected with EINVAL",
          !bad_region && bad_region.error() == std::errc::invalid_argument);
    auto bad_offset = s.retrieve_temporal(0, 5);
    c.add("temporal offset +5 is rejected with EINVAL",
          !bad_offset && bad_offset.error() == std::errc::invalid_argument);
    auto e0 = s.end_frame();
    c.add("end_frame of a fresh block releases nothing", e0 && e0->count == 0);

    px = synthetic_luma(W, H, 1);
    auto f1 = s.begin_frame({px.data(), W, H, W});
    auto alias = f1 ? s.reuse(kRegion, *blk) : vrex::Result<void>(f1.error());
    auto now = s.retrieve_temporal(kRegion, 0), prev = s.retrieve_temporal(kRegion, -1);
    lookups += 2;
    c.add("alias insert: frames 0 and 1 point at the same block", alias && now && prev && now->hit &&
                                                                      prev->hit && now->block.id == blk->id &&
                                                                      prev->block.id == blk->id);
    const std::uint32_t z = i.zombie_frames;
    std::uint32_t released = 0;
    (void)s.end_frame();
    // Untouched for Z + 1 frames: the block is a zombie and goes with every entry pointing at it.
    for (std::uint32_t t = 2; t <= 2 + z; t++) {
        px = synthetic_luma(W, H, t);
        if (!s.begin_frame({px.data(), W, H, W})) break;
        auto n = s.end_frame();
        released += n ? n->count : 0;
    }
    c.add(fmt::format("zombie released after {} cold frames", z + 1), released == 1,
          fmt::format("{} released", released));
    auto gone = s.retrieve_similar(kRegion, f0->fp, 31);
    lookups++;
    c.add("no lookup returns the released block", gone && (!gone->hit || gone->block.id != blk->id));
    auto st = (*alloc)->stats();
    c.add("allocator holds no resident block afterwards",
          st && st->resident_blocks == 0 && st->resident_bytes == 0);
    auto after = dev->stats();
    c.add("device LOOKUPS counter advanced by the lookups made",
          after && after->lookups - before->lookups == lookups,
          after ? fmt::format("{} lookups", after->lookups - before->lookups) : "");
}

}  // namespace

void add_selftest(Command app, GlobalOptions& g) {
    app.subcommand("selftest", "register and SHIE sanity checks on the chosen backend").callback([&g] {
        auto dev = open_device(g);
        Checks c(g.json);
        register_checks(*dev, c);
        shie_checks(dev, c);
        if (g.json)
            print_json({{"backend", dev->backend_name()}, {"passed", !c.failed()}, {"checks", c.json()}});
        else
            fmt::print("selftest on {}: {}\n", dev->backend_name(), c.failed() ? "FAILED" : "passed");
        if (c.failed()) throw ExitError(kExitCheckFailed, "selftest failed");
    });
}

}  // namespace vrexctl
