// vrexctl monitor: device counters and bank occupancy, refreshed every --interval ms.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "common.hpp"

namespace vrexctl {
namespace {

struct MonitorArgs {
    std::uint32_t interval_ms = 1000;
    std::uint32_t count = 0;
};

void monitor(const GlobalOptions& g, const MonitorArgs& a) {
    auto dev = open_device(g);
    const bool tty = !g.json && isatty(STDOUT_FILENO);
    nlohmann::json prev;
    auto t_prev = std::chrono::steady_clock::now();
    for (std::uint32_t n = 0; a.count == 0 || n < a.count; n++) {
        if (n) std::this_thread::sleep_for(std::chrono::milliseconds(a.interval_ms));
        const auto now = std::chrono::steady_clock::now();
        nlohmann::json s = device_stats_json(*dev);
        auto banks = dev->banks();
        if (!banks) fail("bank info", banks.error());
        std::uint64_t kv = 0;
        nlohmann::json per_bank = nlohmann::json::array();
        for (const vrex::BankUsage& u : banks->banks) {
            kv += u.kv_bytes;
            per_bank.push_back(u.kv_bytes);
        }
        const double dt = std::chrono::duration<double>(now - t_prev).count();
        const double lookup_rate =
            n && dt > 0 ? (s["lookups"].get<double>() - prev["lookups"].get<double>()) / dt : 0.0;
        const double frame_rate =
            n && dt > 0 ? (s["frames"].get<double>() - prev["frames"].get<double>()) / dt : 0.0;
        s["sample"] = n;
        s["kv_bytes"] = kv;
        s["bank_kv_bytes"] = per_bank;
        s["lookups_per_s"] = lookup_rate;
        s["frames_per_s"] = frame_rate;
        if (g.json) {
            fmt::print("{}\n", s.dump());  // one object per line (NDJSON)
        } else {
            if (tty) fmt::print("\x1b[H\x1b[2J");
            fmt::print(
                "sample {:<5} frames {:<8} ({:.0f}/s)  lookups {:<10} ({:.0f}/s)  hits {}/{} approx  misses "
                "{}  "
                "evictions {}  live blocks {}  KV {}\n",
                n, s["frames"].get<std::uint64_t>(), frame_rate, s["lookups"].get<std::uint64_t>(),
                lookup_rate, s["exact_hits"].get<std::uint64_t>(), s["approx_hits"].get<std::uint64_t>(),
                s["misses"].get<std::uint64_t>(), s["evictions"].get<std::uint64_t>(),
                s["live_blocks"].get<std::uint64_t>(), human_bytes(kv));
        }
        std::fflush(stdout);
        prev = s;
        t_prev = now;
    }
}

}  // namespace

void add_monitor(Command app, GlobalOptions& g) {
    auto a = std::make_shared<MonitorArgs>();
    Command c = app.subcommand("monitor", "live device counters, refreshing");
    c.option("--interval", a->interval_ms, "refresh period in ms").show_default().range(1, 3600000);
    c.option("--count", a->count, "samples to take (0 = until interrupted)").show_default();
    c.callback([&g, a] { monitor(g, *a); });
}

}  // namespace vrexctl
