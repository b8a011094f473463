#include "prometheus.hpp"

#include <fmt/format.h>

#include "common.hpp"

namespace vrexctl {
namespace {

std::string label_escape(std::string_view s) {
    std::string o;
    for (char c : s) {
        if (c == '\\' || c == '"') o += '\\';
        if (c == '\n') {
            o += "\\n";
            continue;
        }
        o += c;
    }
    return o;
}

}  // namespace

std::string prometheus_metrics(vrex::Device& dev) {
    auto st = dev.stats();
    if (!st) fail("stats", st.error());
    auto banks = dev.banks();
    if (!banks) fail("bank info", banks.error());
    const std::string labels = fmt::format("backend=\"{}\"", label_escape(dev.backend_name()));
    std::string o;
    auto metric = [&](const char* name, const char* type, const char* help, std::uint64_t v) {
        o += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n{0}{{{3}}} {4}\n", name, help, type, labels, v);
    };
    metric("vrex_lookups_total", "counter", "SHIE lookups.", st->lookups);
    metric("vrex_exact_hits_total", "counter", "SHIE lookups that hit exactly.", st->exact_hits);
    metric("vrex_approx_hits_total", "counter", "SHIE similarity hits at Hamming distance > 0.",
           st->approx_hits);
    metric("vrex_misses_total", "counter", "SHIE lookups without a hit.", st->misses);
    metric("vrex_evictions_total", "counter", "Zombie KV blocks released.", st->evictions);
    metric("vrex_bank_conflicts_total", "counter", "Frames placed in a bank group owned by another pool.",
           st->bank_conflicts);
    metric("vrex_inserts_total", "counter", "SHIE inserts.", st->inserts);
    metric("vrex_removes_total", "counter", "KV blocks removed on request.", st->removes);
    metric("vrex_frames_total", "counter", "Frames fingerprinted by the FCC.", st->frames);
    metric("vrex_command_errors_total", "counter", "Device commands that failed.", st->cmd_errors);
    metric("vrex_live_entries", "gauge", "Live SHIE entries.", st->live_entries);
    metric("vrex_live_blocks", "gauge", "Live KV blocks.", st->live_blocks);
    metric("vrex_bank_size_bytes", "gauge", "Bytes per bank.", dev.info().bank_size);
    o += "# HELP vrex_bank_kv_bytes KV bytes the SHIE points into, per bank.\n# TYPE vrex_bank_kv_bytes "
         "gauge\n";
    for (std::size_t b = 0; b < banks->banks.size(); b++)
        o += fmt::format("vrex_bank_kv_bytes{{{},bank=\"{}\"}} {}\n", labels, b, banks->banks[b].kv_bytes);
    o += "# HELP vrex_bank_kv_blocks Live KV blocks per bank.\n# TYPE vrex_bank_kv_blocks gauge\n";
    for (std::size_t b = 0; b < banks->banks.size(); b++)
        o += fmt::format("vrex_bank_kv_blocks{{{},bank=\"{}\"}} {}\n", labels, b, banks->banks[b].kv_blocks);
    o +=
        "# HELP vrex_bank_bo_bytes Bytes of live buffer objects per bank.\n# TYPE vrex_bank_bo_bytes gauge\n";
    for (std::size_t b = 0; b < banks->banks.size(); b++)
        o += fmt::format("vrex_bank_bo_bytes{{{},bank=\"{}\"}} {}\n", labels, b, banks->banks[b].bo_bytes);
    return o;
}

}  // namespace vrexctl
