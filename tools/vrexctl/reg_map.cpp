#include "reg_map.hpp"

#include <fmt/format.h>

extern "C" {
#include "vrex_regs.h"
}

namespace vrexctl {
namespace {

std::string bits(std::uint32_t v, std::initializer_list<std::pair<std::uint32_t, const char*>> names) {
    std::string o;
    for (const auto& [bit, name] : names)
        if (v & bit) {
            if (!o.empty()) o += '|';
            o += name;
        }
    return o.empty() ? "-" : o;
}

std::string f_id(std::uint32_t v) {
    return v == VREX_ID_VALUE ? "\"VREX\"" : "unexpected (want 0x56524558)";
}
std::string f_version(std::uint32_t v) {
    return fmt::format("major={} minor={}", v >> 16, v & 0xffff);
}
std::string f_caps(std::uint32_t v) {
    return bits(v, {{VREX_CAP_FCC, "FCC"},
                    {VREX_CAP_SHIE, "SHIE"},
                    {VREX_CAP_POOLED, "POOLED"},
                    {VREX_CAP_PREDICT_SLOTS, "PREDICT_SLOTS"},
                    {VREX_CAP_RESV, "RESV"}});
}
std::string f_irq(std::uint32_t v) {
    return bits(
        v,
        {{VREX_IRQ_CMD_DONE, "CMD_DONE"}, {VREX_IRQ_CMD_ERROR, "CMD_ERROR"}, {VREX_IRQ_ZOMBIES, "ZOMBIES"}});
}
std::string f_kib(std::uint32_t v) {
    return fmt::format("{} MiB", v / 1024.0);
}
std::string f_status(std::uint32_t v) {
    return bits(v, {{VREX_STATUS_BUSY, "BUSY"}, {VREX_STATUS_DONE, "DONE"}, {VREX_STATUS_ERROR, "ERROR"}}) +
           fmt::format(" ERRNO={}", (v & VREX_STATUS_ERRNO_MASK) >> VREX_STATUS_ERRNO_SHIFT);
}
std::string f_resflags(std::uint32_t v) {
    return bits(v, {{VREX_RESF_HIT, "HIT"},
                    {VREX_RESF_APPROX, "APPROX"},
                    {VREX_RESF_OPENED, "OPENED"},
                    {VREX_RESF_CONFLICT, "CONFLICT"}});
}
std::string f_signed(std::uint32_t v) {
    return fmt::format("{}", static_cast<std::int32_t>(v));
}
std::string f_ratio(std::uint32_t v) {
    return fmt::format("{:.4f}", v / 65536.0);
}
std::string f_pool(std::uint32_t v) {
    if (v == 0xffffffffu) return "free";
    return v >= 0x10000u ? fmt::format("private pool of stream {}", v - 0x10000u) : fmt::format("pool {}", v);
}

}  // namespace

std::vector<RegDesc> register_map(std::uint32_t banks, std::uint32_t groups) {
    std::vector<RegDesc> m = {
        {VREX_REG_ID, "ID", f_id},
        {VREX_REG_VERSION, "VERSION", f_version},
        {VREX_REG_CAPS, "CAPS", f_caps},
        {VREX_REG_BANK_COUNT, "BANK_COUNT", nullptr},
        {VREX_REG_BANK_SIZE_KB, "BANK_SIZE_KB", f_kib},
        {VREX_REG_IRQ_STATUS, "IRQ_STATUS", f_irq},
        {VREX_REG_IRQ_MASK, "IRQ_MASK", f_irq},
        {VREX_REG_SHIE_CAPACITY, "SHIE_CAPACITY", nullptr},
        {VREX_REG_MAX_STREAMS, "MAX_STREAMS", nullptr},
        {VREX_REG_BLOCK_CAPACITY, "BLOCK_CAPACITY", nullptr},
        {VREX_REG_ZOMBIE_FRAMES, "ZOMBIE_FRAMES", nullptr},
        {VREX_REG_GROUP_BANKS, "GROUP_BANKS", nullptr},
        {VREX_REG_SCRATCH, "SCRATCH", nullptr},
        {VREX_REG_STATUS, "STATUS", f_status},
        {VREX_REG_RES_FLAGS, "RES_FLAGS", f_resflags},
        {VREX_REG_RES_BLOCK, "RES_BLOCK", nullptr},
        {VREX_REG_RES_DISTANCE, "RES_DISTANCE", nullptr},
        {VREX_REG_RES_FRAME, "RES_FRAME", nullptr},
        {VREX_REG_RES_GROUP, "RES_GROUP", nullptr},
        {VREX_REG_RES_COUNT, "RES_COUNT", nullptr},
        {VREX_REG_FCC_CENTRE_MOTION, "FCC_CENTRE_MOTION", nullptr},
        {VREX_REG_FCC_STATIC_RATIO, "FCC_STATIC_RATIO", nullptr},
        {VREX_REG_FCC_ROI_DX, "FCC_ROI_DX", f_signed},
        {VREX_REG_FCC_ROI_DY, "FCC_ROI_DY", f_signed},
        {VREX_REG_FCC_MOVING_BLOCKS, "FCC_MOVING_BLOCKS", nullptr},
    };
    static const char* counters[VREX_CNT_NUM] = {"LOOKUPS",   "EXACT_HITS",     "APPROX_HITS", "MISSES",
                                                 "EVICTIONS", "BANK_CONFLICTS", "INSERTS",     "REMOVES",
                                                 "FRAMES",    "LIVE_ENTRIES",   "LIVE_BLOCKS", "CMD_ERRORS"};
    for (std::uint32_t i = 0; i < VREX_CNT_NUM; i++) {
        m.push_back({VREX_REG_CNT_LO(i), fmt::format("CNT_{}_LO", counters[i]), nullptr});
        m.push_back({VREX_REG_CNT_HI(i), fmt::format("CNT_{}_HI", counters[i]), nullptr});
    }
    // ReSV unit (docs/hw/resv.md): reads 0 on a device without it (CAPS lacks RESV).
    m.insert(m.end(), {{VREX_REG_RES_TOKENS, "RES_TOKENS", nullptr},
                       {VREX_REG_RES_CLUSTERS, "RES_CLUSTERS", nullptr},
                       {VREX_REG_RES_HEAD_TOKENS, "RES_HEAD_TOKENS", nullptr},
                       {VREX_REG_RESV_SEED_LO, "RESV_SEED_LO", nullptr},
                       {VREX_REG_RESV_SEED_HI, "RESV_SEED_HI", nullptr},
                       {VREX_REG_RESV_DIM, "RESV_DIM", nullptr},
                       {VREX_REG_RESV_TH, "RESV_TH", nullptr},
                       {VREX_REG_RESV_RATIO, "RESV_RATIO", f_ratio},
                       {VREX_REG_RESV_MODE, "RESV_MODE", nullptr},
                       {VREX_REG_RESV_TOKENS_PER_BLOCK, "RESV_TOKENS_PER_BLOCK", nullptr},
                       {VREX_REG_RESV_BYTES_PER_TOKEN, "RESV_BYTES_PER_TOKEN", nullptr},
                       {VREX_REG_RESV_HEADS, "RESV_HEADS", nullptr},
                       {VREX_REG_RESV_MAX_TOKENS, "RESV_MAX_TOKENS", nullptr},
                       {VREX_REG_RESV_MAX_CLUSTERS, "RESV_MAX_CLUSTERS", nullptr}});
    static const char* resv_counters[VREX_RESV_CNT_NUM] = {"KEYS",           "CLUSTERS",       "SELECTS",
                                                           "TOKENS_SCANNED", "TOKENS_SELECTED", "BYTES_SELECTED",
                                                           "RANGES"};
    for (std::uint32_t i = 0; i < VREX_RESV_CNT_NUM; i++) {
        m.push_back({VREX_REG_RESV_CNT_LO(i), fmt::format("RESV_CNT_{}_LO", resv_counters[i]), nullptr});
        m.push_back({VREX_REG_RESV_CNT_HI(i), fmt::format("RESV_CNT_{}_HI", resv_counters[i]), nullptr});
    }
    for (std::uint32_t b = 0; b < banks && b < 64; b++)
        m.push_back({VREX_REG_BANK_KB(b), fmt::format("BANK_KB({})", b), nullptr});
    for (std::uint32_t b = 0; b < banks && b < 64; b++)
        m.push_back({VREX_REG_BANK_BLOCKS(b), fmt::format("BANK_BLOCKS({})", b), nullptr});
    for (std::uint32_t g = 0; g < groups && g < 64; g++)
        m.push_back({VREX_REG_GROUP_POOL(g), fmt::format("GROUP_POOL({})", g), f_pool});
    return m;
}

}  // namespace vrexctl
