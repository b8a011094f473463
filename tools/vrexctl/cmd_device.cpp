// vrexctl list / info / regs / banks / stats: read-only views of a device through the public HAL API.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "prometheus.hpp"
#include "reg_map.hpp"
#include "vrex/resv.hpp"

namespace vrexctl {
namespace {

nlohmann::json info_json(vrex::Device& dev) {
    const vrex::DeviceInfo& i = dev.info();
    return {{"backend", dev.backend_name()},
            {"device", dev.description()},
            {"hw_id", i.hw_id},
            {"hw_version", fmt::format("{}.{}", i.hw_version >> 16, i.hw_version & 0xffff)},
            {"caps",
             {{"fcc", i.caps.fcc},
              {"shie", i.caps.shie},
              {"pooled", i.caps.pooled},
              {"predict_slots", i.caps.predict_slots}}},
            {"bank_count", i.bank_count},
            {"bank_size", i.bank_size},
            {"group_banks", i.group_banks},
            {"max_streams", i.max_streams},
            {"shie_capacity", i.shie_capacity},
            {"block_capacity", i.block_capacity},
            {"zombie_frames", i.zombie_frames},
            {"max_batch", i.max_batch},
            {"fcc_min_dim", i.fcc_min_dim},
            {"fcc_max_dim", i.fcc_max_dim},
            {"simulated", i.simulated}};
}

vrex::DeviceBanks read_banks(vrex::Device& dev) {
    auto b = dev.banks();
    if (!b) fail("bank info", b.error());
    return *b;
}

void cmd_list(const GlobalOptions& g) {
    nlohmann::json backends = nlohmann::json::array();
    std::string selected;
    for (const vrex::BackendAvailability& f : vrex::list_backends()) {
        const bool avail = f.available;
        nlohmann::json b = {{"name", f.name}, {"available", avail}};
        if (f.name == "kernel") b["nodes"] = vrex::find_device_nodes();
        if (avail && selected.empty()) selected = f.name;
        backends.push_back(b);
    }
    if (g.json) {
        print_json({{"backends", backends}, {"auto", selected}});
        return;
    }
    for (const auto& b : backends) {
        fmt::print("{:<10} {}", b["name"].get<std::string>(),
                   b["available"].get<bool>() ? "available" : "not available");
        if (b.contains("nodes"))
            for (const auto& n : b["nodes"]) fmt::print("  {}", n.get<std::string>());
        fmt::print("\n");
    }
    fmt::print("auto selects: {}\n", selected.empty() ? "nothing" : selected);
}

void cmd_info(const GlobalOptions& g) {
    auto dev = open_device(g);
    nlohmann::json j = info_json(*dev);
    const vrex::DeviceBanks b = read_banks(*dev);
    std::uint64_t bo = 0, kv = 0, blocks = 0;
    for (const vrex::BankUsage& u : b.banks) {
        bo += u.bo_bytes;
        kv += u.kv_bytes;
        blocks += u.kv_blocks;
    }
    j["banks"] = {{"bo_bytes", bo}, {"kv_bytes", kv}, {"kv_blocks", blocks}};
    if (g.json) {
        print_json(j);
        return;
    }
    const vrex::DeviceInfo& i = dev->info();
    fmt::print("backend        {}: {}\n", dev->backend_name(), dev->description());
    fmt::print("hardware       id 0x{:08x}, version {}{}\n", i.hw_id, j["hw_version"].get<std::string>(),
               i.simulated ? ", simulated" : "");
    std::string caps;
    for (const auto& [k, v] : j["caps"].items())
        if (v.get<bool>()) {
            if (!caps.empty()) caps += ' ';
            caps += k;
        }
    fmt::print("capabilities   {}\n", caps);
    fmt::print("banks          {} x {} ({} banks per group, {} groups)\n", i.bank_count,
               human_bytes(i.bank_size), i.group_banks, i.group_banks ? i.bank_count / i.group_banks : 0);
    fmt::print("in use         {} in buffer objects, {} of KV in {} blocks\n", human_bytes(bo),
               human_bytes(kv), blocks);
    fmt::print("SHIE           {} entries, {} blocks, batch {}\n", i.shie_capacity, i.block_capacity,
               i.max_batch);
    fmt::print("streams        up to {}, zombie threshold {} frames\n", i.max_streams, i.zombie_frames);
    fmt::print("FCC            frames {}..{} pixels per side\n", i.fcc_min_dim, i.fcc_max_dim);
}

void cmd_regs(const GlobalOptions& g) {
    auto dev = open_device(g);
    const vrex::DeviceInfo& i = dev->info();
    nlohmann::json arr = nlohmann::json::array();
    for (const RegDesc& r : register_map(i.bank_count, i.group_banks ? i.bank_count / i.group_banks : 0)) {
        auto v = dev->read_register(r.offset);
        if (!v) {
            if (v.error() == std::errc::operation_not_permitted || v.error() == std::errc::permission_denied)
                throw ExitError(kExitRuntime,
                                "register read: " + v.error().message() + " (needs root: debugfs window)");
            fail(fmt::format("register read at 0x{:03x}", r.offset), v.error());
        }
        const std::string fields = r.fields ? r.fields(*v) : "";
        if (g.json)
            arr.push_back({{"offset", r.offset}, {"name", r.name}, {"value", *v}, {"fields", fields}});
        else
            fmt::print("0x{:03x}  {:<22} 0x{:08x}  {:>10}  {}\n", r.offset, r.name, *v, *v, fields);
    }
    if (g.json) print_json({{"backend", dev->backend_name()}, {"registers", arr}});
}

void cmd_banks(const GlobalOptions& g) {
    auto dev = open_device(g);
    const vrex::DeviceBanks b = read_banks(*dev);
    const vrex::DeviceInfo& i = dev->info();
    const std::uint32_t gb = i.group_banks ? i.group_banks : 1;
    nlohmann::json arr = nlohmann::json::array();
    for (std::uint32_t k = 0; k < b.banks.size(); k++) {
        const vrex::BankUsage& u = b.banks[k];
        const double used =
            i.bank_size ? static_cast<double>(u.bo_bytes) / static_cast<double>(i.bank_size) : 0;
        const double kv =
            i.bank_size ? static_cast<double>(u.kv_bytes) / static_cast<double>(i.bank_size) : 0;
        const std::uint32_t group = k / gb;
        const bool owned = group < b.group_owned.size() && b.group_owned[group];
        if (g.json) {
            arr.push_back({{"bank", k},
                           {"group", group},
                           {"group_owned", owned},
                           {"bo_bytes", u.bo_bytes},
                           {"kv_bytes", u.kv_bytes},
                           {"kv_blocks", u.kv_blocks},
                           {"bo_fraction", used},
                           {"kv_fraction", kv}});
            continue;
        }
        constexpr int kBar = 32;
        const int nb = static_cast<int>(std::lround(used * kBar)),
                  nk = std::min(nb, static_cast<int>(std::lround(kv * kBar)));
        fmt::print("bank {:2} g{:<2}{} [{}{}{}] {:>5.1f} %  BO {:>10}  KV {:>10} in {} blocks\n", k, group,
                   owned ? '*' : ' ', std::string(nk, '#'), std::string(nb - nk, '+'),
                   std::string(kBar - nb, '.'), 100.0 * used, human_bytes(u.bo_bytes),
                   human_bytes(u.kv_bytes), u.kv_blocks);
    }
    if (g.json)
        print_json({{"backend", dev->backend_name()}, {"bank_size", i.bank_size}, {"banks", arr}});
    else
        fmt::print("legend: # KV in use, + buffer memory without KV, . free; * = group in use\n");
}

// The ReSV unit's counters (the 0x800 block); null without the unit.
nlohmann::json resv_stats_json(vrex::Device& dev) {
    auto st = vrex::resv_stats(dev);
    if (!st) {
        if (st.error() == std::errc::operation_not_supported) return nullptr;
        fail("ReSV stats", st.error());
    }
    return {{"keys", st->keys},
            {"clusters", st->clusters},
            {"selects", st->selects},
            {"tokens_scanned", st->tokens_scanned},
            {"tokens_selected", st->tokens_selected},
            {"bytes_selected", st->bytes_selected},
            {"ranges", st->ranges},
            {"heads", st->heads},
            {"heads_in_use", st->heads_in_use},
            {"max_tokens", st->max_tokens},
            {"max_clusters", st->max_clusters}};
}

nlohmann::json stats_json(vrex::Device& dev) {
    auto st = dev.stats();
    if (!st) fail("stats", st.error());
    nlohmann::json resv = resv_stats_json(dev);
    nlohmann::json j = {{"backend", dev.backend_name()},
                        {"lookups", st->lookups},
                        {"exact_hits", st->exact_hits},
                        {"approx_hits", st->approx_hits},
                        {"misses", st->misses},
                        {"evictions", st->evictions},
                        {"bank_conflicts", st->bank_conflicts},
                        {"inserts", st->inserts},
                        {"removes", st->removes},
                        {"frames", st->frames},
                        {"live_entries", st->live_entries},
                        {"live_blocks", st->live_blocks},
                        {"cmd_errors", st->cmd_errors}};
    if (!resv.is_null()) j["resv"] = std::move(resv);
    return j;
}

}  // namespace

nlohmann::json device_stats_json(vrex::Device& dev) {
    return stats_json(dev);
}

void add_list(Command app, GlobalOptions& g) {
    app.subcommand("list", "list backends and vrex device nodes").callback([&g] { cmd_list(g); });
}

void add_info(Command app, GlobalOptions& g) {
    app.subcommand("info", "device capabilities, geometry and bank usage").callback([&g] { cmd_info(g); });
}

void add_regs(Command app, GlobalOptions& g) {
    app.subcommand("regs", "register dump with field names (kernel: needs CAP_SYS_ADMIN)").callback([&g] {
        cmd_regs(g);
    });
}

void add_banks(Command app, GlobalOptions& g) {
    app.subcommand("banks", "bank occupancy map").callback([&g] { cmd_banks(g); });
}

void add_stats(Command app, GlobalOptions& g) {
    auto format = std::make_shared<std::string>("human");
    Command c = app.subcommand("stats", "device counters");
    c.option("--format", *format, "human | json | prometheus")
        .one_of({"human", "json", "prometheus"})
        .show_default();
    c.callback([&g, format] {
        auto dev = open_device(g);
        if (*format == "prometheus") {
            fmt::print("{}", prometheus_metrics(*dev));
            return;
        }
        const nlohmann::json j = stats_json(*dev);
        if (g.json || *format == "json") {
            print_json(j);
            return;
        }
        for (const auto& [k, v] : j.items()) {
            if (v.is_object()) {  // a unit's block: "resv.keys" etc.
                for (const auto& [k2, v2] : v.items())
                    fmt::print("{:<22} {}\n", fmt::format("{}.{}", k, k2), v2.dump());
                continue;
            }
            fmt::print("{:<22} {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
        }
    });
}

}  // namespace vrexctl
