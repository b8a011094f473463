// Differential test: one scripted workload on real footage (vtest, the plaza camera) runs on the
// kernel backend and on the emulation, and the canonical outputs must be byte-identical:
// fingerprints, FCC features, bank groups, SHIE insert/lookup results, released blocks, per-bank
// occupancy and counter deltas. Block ids are renumbered by first appearance (opaque ids; the
// kernel's id space is device-wide and may have been used by earlier files); everything else is
// compared raw.
//
// Frames: --clip=PATH (a stream of binary PGM frames, from test_differential_clip.sh; the QEMU
// guests get one in their initramfs), else the cached vtest.gray (scripts/fetch-footage.sh --gray)
// downscaled 4x in-process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "backends.hpp"
#include "frames.hpp"
#include "kernel_backend.hpp"
#include "test_kernel_options.hpp"

namespace vrex {
namespace {

struct Clip {
    std::uint32_t width = 0, height = 0;
    std::vector<std::vector<std::uint8_t>> frames;
};

constexpr std::uint32_t kFrames = 60;

// A scripted workload: its canonical output on @be for clip @c, ending in an "ERROR" line where it failed.
using Workload = std::string (*)(Backend& be, const Clip& c);

// Binary PGM ("P5 w h 255" + w*h bytes), back to back.
std::optional<Clip> read_pgm_stream(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    Clip c;
    std::string magic;
    while (c.frames.size() < kFrames && in >> magic) {
        std::uint32_t w, h, maxval;
        if (magic != "P5" || !(in >> w >> h >> maxval) || maxval != 255) return std::nullopt;
        in.get();  // the single whitespace before the raster
        if ((c.width && (w != c.width || h != c.height)) || !w || !h) return std::nullopt;
        c.width = w;
        c.height = h;
        std::vector<std::uint8_t> px(std::size_t{w} * h);
        if (!in.read(reinterpret_cast<char*>(px.data()), static_cast<std::streamsize>(px.size())))
            return std::nullopt;
        c.frames.push_back(std::move(px));
    }
    return c;
}

// The cached full-size footage, 4x4 box-averaged.
std::optional<Clip> vtest_downscaled() {
    auto f = test::Footage::vtest();
    if (!f) return std::nullopt;
    Clip c;
    c.width = f->width() / 4;
    c.height = f->height() / 4;
    std::vector<std::uint8_t> full;
    for (std::uint32_t i = 0; i < kFrames && f->read(i, full); i++) {
        std::vector<std::uint8_t> px(std::size_t{c.width} * c.height);
        for (std::uint32_t y = 0; y < c.height; y++)
            for (std::uint32_t x = 0; x < c.width; x++) {
                unsigned sum = 0;
                for (std::uint32_t dy = 0; dy < 4; dy++)
                    for (std::uint32_t dx = 0; dx < 4; dx++)
                        sum += full[std::size_t{y * 4 + dy} * f->width() + x * 4 + dx];
                px[std::size_t{y} * c.width + x] = static_cast<std::uint8_t>(sum / 16);
            }
        c.frames.push_back(std::move(px));
    }
    return c;
}

const std::optional<Clip>& clip() {
    static const std::optional<Clip> c = [] {
        const std::string& path = test::clip_path();
        return path.empty() ? vtest_downscaled() : read_pgm_stream(path);
    }();
    return c;
}

#define WL_CHECK(expr)                                           \
    do {                                                         \
        if (auto ec_ = (expr)) {                                 \
            out << "ERROR " #expr ": " << ec_.message() << "\n"; \
            return out.str();                                    \
        }                                                        \
    } while (0)

std::string fp_hex(const __u64 (&fp)[2]) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(fp[1]),
                  static_cast<unsigned long long>(fp[0]));
    return buf;
}

// The workload: two streams (the clip forwards and backwards), per frame and stream: FCC, a temporal
// and a past-only similarity lookup for regions 0..3, then an insert per region that reuses the
// similar block when it is within Hamming 8 (ALIAS) or takes a new 16 KiB slot, then retire.
std::string run_workload(Backend& be, const Clip& c) {
    std::ostringstream out;
    std::map<std::uint32_t, std::uint32_t> canon;  // device block id -> order of first appearance
    auto block = [&canon](std::uint32_t id) {
        return canon.emplace(id, static_cast<std::uint32_t>(canon.size())).first->second;
    };
    auto info = be.device_info();
    auto stats0 = be.stats();
    auto banks0 = be.bank_info();
    if (!info || !stats0 || !banks0) return "ERROR device queries failed";
    const std::uint64_t all = info->bank_count >= 64 ? ~0ull : (1ull << info->bank_count) - 1;
    out << "device banks=" << info->bank_count << " group_banks=" << info->group_banks
        << " zombie_frames=" << info->zombie_frames << "\n";

    drm_vrex_bo_create staging{};
    staging.size = std::uint64_t{c.width} * c.height;
    staging.bank_mask = all;
    staging.flags = DRM_VREX_BO_STAGING;
    WL_CHECK(be.bo_create(staging));
    constexpr std::uint64_t kBlock = 16384;
    const std::uint32_t slots =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(96, info->bank_size / kBlock));
    drm_vrex_bo_create kv{};
    kv.size = slots * kBlock;
    kv.bank_mask = all;
    kv.flags = DRM_VREX_BO_KV;
    WL_CHECK(be.bo_create(kv));
    out << "bo staging bank=" << staging.bank << " kv bank=" << kv.bank << " slots=" << slots << "\n";
    std::vector<std::uint64_t> free_slots;
    for (std::uint32_t i = slots; i-- > 0;) free_slots.push_back(i * kBlock);

    std::uint32_t streams[2];
    for (auto& s : streams) {
        drm_vrex_stream_create sc{};
        WL_CHECK(be.stream_create(sc));
        s = sc.stream;
    }
    auto map = be.bo_map(staging.handle);
    if (!map) return out.str() + "ERROR map\n";

    std::vector<drm_vrex_released_block> released(slots + 8);
    const auto n = static_cast<std::uint32_t>(c.frames.size());
    for (std::uint32_t i = 0; i < n; i++) {
        for (std::uint32_t si = 0; si < 2; si++) {
            const std::uint32_t s = streams[si];
            const auto& px = c.frames[si == 0 ? i : n - 1 - i];
            std::memcpy(map->data(), px.data(), px.size());
            drm_vrex_frame_submit f{};
            f.stream = s;
            f.handle = staging.handle;
            f.width = f.stride = c.width;
            f.height = c.height;
            WL_CHECK(be.frame_submit(f));
            out << "F s" << si << " frame=" << f.frame << " fp=" << fp_hex(f.fp) << " group=" << f.group
                << " banks=" << f.bank_first << "+" << f.bank_count << " flags=" << f.result_flags
                << " centre=" << f.centre_motion << " static=" << f.static_ratio << " roi=" << f.roi_dx << ","
                << f.roi_dy << "\n";

            std::vector<drm_vrex_shie_lookup_item> q(8);
            for (std::uint32_t r = 0; r < 4; r++) {
                q[2 * r].kind = DRM_VREX_LOOKUP_TEMPORAL;
                q[2 * r].region = r;
                q[2 * r].frame_offset = -1;
                q[2 * r + 1].kind = DRM_VREX_LOOKUP_SIMILAR;
                q[2 * r + 1].region = r;
                q[2 * r + 1].fp[0] = f.fp[0];
                q[2 * r + 1].fp[1] = f.fp[1];
                q[2 * r + 1].radius = 20;
                q[2 * r + 1].flags = DRM_VREX_LOOKUP_PAST_ONLY;
            }
            WL_CHECK(be.shie_lookup(s, q));
            for (const auto& it : q) {
                out << " L k" << it.kind << " r" << it.region << " hit=" << it.hit_flags;
                if (it.hit_flags)
                    out << " d=" << it.distance << " b" << block(it.block) << " frame=" << it.frame
                        << " stream=" << (it.stream == s ? "self" : "other") << " off=" << it.offset
                        << " len=" << it.length << " fp=" << fp_hex(it.found_fp);
                out << "\n";
            }

            std::vector<drm_vrex_shie_insert_item> ins(4);
            for (std::uint32_t r = 0; r < 4; r++) {
                auto& it = ins[r];
                it.fp[0] = f.fp[0];
                it.fp[1] = f.fp[1];
                it.region = r;
                const auto& sim = q[2 * r + 1];
                if ((sim.hit_flags & DRM_VREX_HIT) && sim.distance <= 8) {
                    it.flags = DRM_VREX_INSERT_ALIAS;
                    it.block = sim.block;
                } else if (!free_slots.empty()) {
                    it.handle = kv.handle;
                    it.offset = free_slots.back();
                    it.length = kBlock;
                    free_slots.pop_back();
                } else {
                    out << " I r" << r << " no free slot\n";
                    it.flags = DRM_VREX_INSERT_ALIAS;  // dropped below
                    it.block = ~0u;
                }
            }
            std::erase_if(ins, [](const auto& it) { return it.block == ~0u; });
            if (!ins.empty()) WL_CHECK(be.shie_insert(s, ins));
            for (const auto& it : ins) {
                out << " I r" << it.region << " alias=" << (it.flags & DRM_VREX_INSERT_ALIAS)
                    << " result=" << it.result;
                if (it.result == 0)
                    out << " b" << block(it.block);
                else if (!(it.flags & DRM_VREX_INSERT_ALIAS))
                    free_slots.push_back(it.offset);
                out << "\n";
            }

            std::uint32_t count = 0;
            WL_CHECK(be.shie_retire(s, {}, released, count));
            for (std::uint32_t k = 0; k < count; k++) {
                out << " R b" << block(released[k].block) << " off=" << released[k].offset
                    << " reason=" << released[k].reason << "\n";
                free_slots.push_back(released[k].offset);
            }
        }
    }

    auto banks = be.bank_info();
    auto stats = be.stats();
    if (!banks || !stats) return out.str() + "ERROR final queries\n";
    for (std::uint32_t b = 0; b < banks->bank_count; b++)
        out << "bank " << b << " bo=" << banks->bo_bytes[b] - banks0->bo_bytes[b]
            << " kv=" << banks->kv_bytes[b] - banks0->kv_bytes[b]
            << " blocks=" << banks->kv_blocks[b] - banks0->kv_blocks[b]
            << " group_owned=" << banks->group_owned[b] << "\n";
    const std::pair<const char*, __u64 drm_vrex_stats::*> counters[] = {
        {"lookups", &drm_vrex_stats::lookups},         {"exact_hits", &drm_vrex_stats::exact_hits},
        {"approx_hits", &drm_vrex_stats::approx_hits}, {"misses", &drm_vrex_stats::misses},
        {"evictions", &drm_vrex_stats::evictions},     {"bank_conflicts", &drm_vrex_stats::bank_conflicts},
        {"inserts", &drm_vrex_stats::inserts},         {"removes", &drm_vrex_stats::removes},
        {"frames", &drm_vrex_stats::frames},           {"live_entries", &drm_vrex_stats::live_entries},
        {"live_blocks", &drm_vrex_stats::live_blocks}, {"cmd_errors", &drm_vrex_stats::cmd_errors}};
    for (const auto& [name, field] : counters)
        out << "counter " << name << " " << ((*stats).*field - (*stats0).*field) << "\n";

    for (const auto s : streams) WL_CHECK(be.stream_destroy(s));
    WL_CHECK(be.bo_destroy(kv.handle));
    WL_CHECK(be.bo_destroy(staging.handle));
    return out.str();
}

// The ReSV workload: keys are 32-pixel patches (8 x 4, mean removed) of the clip's first frames, a
// grid of them per frame hashed into two heads with different seeds, radii, ratios and modes; each
// frame, a batch selects for a query patch on both heads as token and as block ranges. A truncation
// and a batch that overflows a head (ENOSPC, nothing added) are part of it. Printed: tokens and
// clusters after every batch, every selection's outputs and the ranges it wrote, counter deltas.
std::string run_resv_workload(Backend& be, const Clip& c) {
    std::ostringstream out;
    constexpr std::uint32_t kDim = 32, kPw = 8, kPh = 4, kGx = 12, kGy = 9, kResvFrames = 20;
    constexpr std::uint64_t kMaxRanges = 2048;
    auto stats0 = be.resv_stats();
    if (!stats0) return "ERROR resv_stats: " + stats0.error().message();
    // Room for a whole head's keys (the overflowing batch), then the query, then the ranges.
    const std::uint64_t kQuery = std::uint64_t{stats0->max_tokens} * kDim * 2, kOut = kQuery + 4096;
    out << "resv heads=" << stats0->heads << " max_tokens=" << stats0->max_tokens
        << " max_clusters=" << stats0->max_clusters << "\n";
    drm_vrex_bo_create bo{};
    bo.size = kOut + kMaxRanges * 8;
    bo.bank_mask = 1;
    WL_CHECK(be.bo_create(bo));
    auto map = be.bo_map(bo.handle);
    if (!map) return out.str() + "ERROR map\n";

    // Patch (x, y) of frame @px, 2-byte little-endian int16 at @dst.
    auto patch = [&c](const std::vector<std::uint8_t>& px, std::uint32_t x, std::uint32_t y, std::byte* dst) {
        int sum = 0;
        for (std::uint32_t dy = 0; dy < kPh; dy++)
            for (std::uint32_t dx = 0; dx < kPw; dx++) sum += px[std::size_t{y + dy} * c.width + x + dx];
        const int mean = sum / static_cast<int>(kDim);
        for (std::uint32_t i = 0; i < kDim; i++) {
            const int v = (px[std::size_t{y + i / kPw} * c.width + x + i % kPw] - mean) * 128;
            const auto q = static_cast<std::int16_t>(std::clamp(v, -32767, 32767));
            std::memcpy(dst + 2 * i, &q, 2);
        }
    };

    drm_vrex_resv_head_create heads[2]{};
    heads[0].params.seed = 11;
    heads[0].params.th = 7;
    heads[0].params.ratio = 19661;  // 0.3
    heads[0].params.mode = DRM_VREX_RESV_MODE_MASS;
    heads[0].params.tokens_per_block = 16;
    heads[1].params.seed = 99;
    heads[1].params.th = 4;
    heads[1].params.ratio = 32768;  // 0.5
    heads[1].params.mode = DRM_VREX_RESV_MODE_TOKENS;
    heads[1].params.tokens_per_block = 8;
    for (auto& h : heads) {
        h.params.dim = kDim;
        h.params.bytes_per_token = 4 * kDim;
        for (std::uint32_t d = 0; d < DRM_VREX_RESV_LUT_SIZE; d++)
            h.params.lut[d] = static_cast<std::uint16_t>(65535u >> std::min(d, 16u));
        WL_CHECK(be.resv_head_create(h));
    }

    const std::uint32_t sx = (c.width - kPw) / (kGx - 1), sy = (c.height - kPh) / (kGy - 1);
    const auto frames = std::min<std::uint32_t>(kResvFrames, static_cast<std::uint32_t>(c.frames.size()));
    for (std::uint32_t f = 0; f < frames; f++) {
        const auto& px = c.frames[f];
        std::uint32_t n = 0;
        for (std::uint32_t gy = 0; gy < kGy; gy++)
            for (std::uint32_t gx = 0; gx < kGx; gx++)
                patch(px, gx * sx, gy * sy, map->data() + std::size_t{n++} * kDim * 2);
        for (std::uint32_t hi = 0; hi < 2; hi++) {
            drm_vrex_resv_hash h{};
            h.head = heads[hi].head;
            h.count = n;
            h.handle = bo.handle;
            WL_CHECK(be.resv_hash(h));
            out << "H f" << f << " h" << hi << " tokens=" << h.tokens << " clusters=" << h.clusters << "\n";
        }
        if (f == 10) {
            WL_CHECK(be.resv_truncate(heads[0].head, 500));
            out << "T h0 keep=500\n";
            // More keys than head 1 has room for: refused whole.
            drm_vrex_resv_hash h{};
            h.head = heads[1].head;
            h.count = stats0->max_tokens;
            h.handle = bo.handle;
            const std::error_code ec = be.resv_hash(h);
            out << "O h1 " << (ec ? ec.message() : "accepted") << "\n";
        }
        // The query: the patch at the frame's centre, moving with the frame index.
        patch(px, (c.width - kPw) / 2 + f % 8, (c.height - kPh) / 2, map->data() + kQuery);
        drm_vrex_resv_select_item items[4]{};
        for (std::uint32_t i = 0; i < 4; i++) {
            auto& it = items[i];
            it.head = heads[i / 2].head;
            it.flags = i % 2 ? DRM_VREX_RESV_SELECT_BLOCKS : 0;
            it.query_handle = bo.handle;
            it.query_offset = kQuery;
            it.out_handle = bo.handle;
            it.out_offset = kOut + i * (kMaxRanges / 4) * 8;
            it.max_ranges = kMaxRanges / 4;
        }
        WL_CHECK(be.resv_select(items));
        for (std::uint32_t i = 0; i < 4; i++) {
            const auto& it = items[i];
            out << "S f" << f << " h" << i / 2 << (it.flags ? " blocks" : " tokens")
                << " ranges=" << it.ranges << " tokens=" << it.tokens << " clusters=" << it.clusters
                << " qhash=" << it.qhash << " cutoff=" << it.cutoff << " head_tokens=" << it.head_tokens
                << " :";
            for (std::uint32_t r = 0; r < std::min(it.ranges, it.max_ranges); r++) {
                std::uint32_t fc[2];
                std::memcpy(fc, map->data() + it.out_offset + r * 8, 8);
                out << " " << fc[0] << "+" << fc[1];
            }
            out << "\n";
        }
    }
    auto stats = be.resv_stats();
    if (!stats) return out.str() + "ERROR final resv_stats\n";
    const std::pair<const char*, __u64 drm_vrex_resv_stats::*> counters[] = {
        {"keys", &drm_vrex_resv_stats::keys},
        {"clusters", &drm_vrex_resv_stats::clusters},
        {"selects", &drm_vrex_resv_stats::selects},
        {"tokens_scanned", &drm_vrex_resv_stats::tokens_scanned},
        {"tokens_selected", &drm_vrex_resv_stats::tokens_selected},
        {"bytes_selected", &drm_vrex_resv_stats::bytes_selected},
        {"ranges", &drm_vrex_resv_stats::ranges}};
    for (const auto& [name, field] : counters)
        out << "counter " << name << " " << ((*stats).*field - (*stats0).*field) << "\n";
    out << "heads_in_use " << stats->heads_in_use - stats0->heads_in_use << "\n";
    for (const auto& h : heads) WL_CHECK(be.resv_head_destroy(h.head));
    WL_CHECK(be.bo_destroy(bo.handle));
    return out.str();
}

std::size_t count(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (std::size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) n++;
    return n;
}

// "" when equal, else the first differing line of each.
std::string first_difference(const std::string& a, const std::string& b) {
    std::istringstream sa(a), sb(b);
    std::string la, lb;
    for (int line = 1;; line++) {
        const bool ga = static_cast<bool>(std::getline(sa, la)), gb = static_cast<bool>(std::getline(sb, lb));
        if (!ga && !gb) return {};
        if (ga != gb || la != lb)
            return "line " + std::to_string(line) + ":\n  A: " + (ga ? la : "<end>") +
                   "\n  B: " + (gb ? lb : "<end>");
    }
}

std::uint64_t fnv1a(const std::string& s) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
    return h;
}

TEST(Differential, ClipIsRealMovingFootage) {
    if (!clip()) GTEST_SKIP() << "no footage: give --clip=PATH or run scripts/fetch-footage.sh --gray";
    ASSERT_EQ(clip()->frames.size(), kFrames);
    EXPECT_GE(clip()->width, 64u);
    std::uint64_t changed = 0;
    for (std::size_t i = 0; i + 1 < clip()->frames.size(); i++)
        changed += clip()->frames[i] != clip()->frames[i + 1];
    EXPECT_GT(changed, kFrames / 2) << "consecutive frames differ (people walking)";
}

// One side of a comparison: the backend a workload runs on, and its name in messages.
struct Run {
    const char* name;
    Backend& backend;
};

// The differential shape: @workload on the clip once on each of two backends (two fresh emulations,
// or the kernel and the emulation), then neither run may have failed and the canonical outputs must
// be byte-identical. @label names the comparison in the printed summary; @a_out gets run A's output
// for the caller's checks of what the workload exercised (call under ASSERT_NO_FATAL_FAILURE then).
void expect_identical_runs(Workload workload, Run a, Run b, const char* label, std::string* a_out = nullptr) {
    const std::string ra = workload(a.backend, *clip());
    const std::string rb = workload(b.backend, *clip());
    ASSERT_EQ(ra.find("ERROR"), std::string::npos) << a.name << ": " << ra.substr(ra.find("ERROR"));
    ASSERT_EQ(rb.find("ERROR"), std::string::npos) << b.name << ": " << rb.substr(rb.find("ERROR"));
    std::printf("%s: clip of %zu frames, canonical output %zu bytes, fnv1a %s %016llx %s %016llx\n", label,
                clip()->frames.size(), ra.size(), a.name, static_cast<unsigned long long>(fnv1a(ra)), b.name,
                static_cast<unsigned long long>(fnv1a(rb)));
    EXPECT_EQ(first_difference(ra, rb), "") << "A = " << a.name << ", B = " << b.name;
    EXPECT_EQ(ra.size(), rb.size());
    EXPECT_TRUE(ra == rb);
    if (a_out) *a_out = ra;
}

// The emulation a kernel run is compared with: the block workload's output names banks and groups,
// so its emulation takes the kernel device's geometry; the ReSV workload's runs on the default one.
enum class EmulatedGeometry { the_kernels, default_options };

// Kernel and emulation: @workload on the kernel backend and on an emulation is identical. Skips the
// test where there is no clip or no vrex device (the QEMU guests have both).
void expect_kernel_matches_emulation(Workload workload, const char* label, EmulatedGeometry geometry) {
    if (!clip()) GTEST_SKIP() << "no footage: give --clip=PATH or run scripts/fetch-footage.sh --gray";
    if (!kernel_backend_factory().available())
        GTEST_SKIP() << "no vrex device on this machine (runs in the QEMU guests)";
    auto kernel = test::open_backend("kernel");
    ASSERT_NE(kernel, nullptr);
    BackendOptions eo;
    if (geometry == EmulatedGeometry::the_kernels) {
        auto info = kernel->device_info();
        ASSERT_TRUE(info);
        eo.emu_banks = info->bank_count;
        eo.emu_bank_size = info->bank_size;
        eo.emu_group_banks = info->group_banks;
        eo.emu_zombie_frames = info->zombie_frames;
    }
    auto emu = find_backend_factory("emulated")->open(eo);
    ASSERT_TRUE(emu);
    expect_identical_runs(workload, {"kernel", *kernel}, {"emulated", **emu}, label);
}

// Determinism: two runs of @workload on two fresh emulations are identical; @out gets the first.
void expect_deterministic(Workload workload, const char* label, std::string& out) {
    auto first = test::open_backend("emulated");
    auto second = test::open_backend("emulated");
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    expect_identical_runs(workload, {"emulated", *first}, {"emulated again", *second}, label, &out);
}

TEST(Differential, WorkloadIsDeterministicAndNonTrivialOnTheEmulation) {
    if (!clip()) GTEST_SKIP() << "no footage: give --clip=PATH or run scripts/fetch-footage.sh --gray";
    std::string out;
    ASSERT_NO_FATAL_FAILURE(expect_deterministic(run_workload, "differential determinism", out));
    // The workload exercises what it claims to compare.
    EXPECT_EQ(count(out, "F s"), 2 * kFrames);
    EXPECT_GT(count(out, "hit=1 "), 10u) << "exact hits";
    EXPECT_GT(count(out, " alias=1 result=0"), 10u) << "reuse of similar blocks";
    EXPECT_GT(count(out, " alias=0 result=0"), 10u) << "new blocks";
    EXPECT_GT(count(out, "reason=1"), 4u) << "zombies released";
}

TEST(Differential, KernelAndEmulationProduceIdenticalResults) {
    expect_kernel_matches_emulation(run_workload, "differential", EmulatedGeometry::the_kernels);
}

TEST(Differential, ResvWorkloadIsDeterministicAndNonTrivialOnTheEmulation) {
    if (!clip()) GTEST_SKIP() << "no footage: give --clip=PATH or run scripts/fetch-footage.sh --gray";
    std::string out;
    ASSERT_NO_FATAL_FAILURE(expect_deterministic(run_resv_workload, "differential resv determinism", out));
    EXPECT_EQ(count(out, "S f"), 80u);
    EXPECT_EQ(count(out, "O h1 No space left on device"), 1u) << "the overflowing batch is refused";
    // Selections are proper subsets: neither nothing nor everything.
    std::size_t proper = 0;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
        unsigned tokens = 0, head = 0;
        const auto t = line.find(" tokens="), h = line.find("head_tokens=");
        if (line.rfind("S f", 0) != 0 || t == std::string::npos || h == std::string::npos) continue;
        tokens = static_cast<unsigned>(std::stoul(line.substr(t + 8)));
        head = static_cast<unsigned>(std::stoul(line.substr(h + 12)));
        proper += tokens > 0 && tokens < head;
    }
    EXPECT_GT(proper, 60u);
}

TEST(Differential, ResvKernelAndEmulationProduceIdenticalResults) {
    expect_kernel_matches_emulation(run_resv_workload, "differential resv",
                                    EmulatedGeometry::default_options);
}

}  // namespace
}  // namespace vrex
