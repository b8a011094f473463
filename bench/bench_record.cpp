// SPDX-License-Identifier: (GPL-2.0 OR MIT)
#include "bench_record.h"

#include <cmath>
#include <cstdio>
#include <string_view>

namespace vrex::bench {

std::optional<double> Record::ratio() const
{
    if (!baseline || *baseline <= 0.0) return std::nullopt;
    return ours / *baseline;
}

std::optional<bool> Record::met() const
{
    if (!target) return std::nullopt;
    const std::optional<double> v = target_on == TargetOn::ours ? std::optional<double>(ours) : ratio();
    if (!v) return false;
    return at_most ? *v <= *target : *v >= *target;
}

namespace {

std::string quote(std::string_view s)
{
    std::string out = "\"";
    for (char c : s) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof(buf), "\\u%04x", c);
                out += buf;
            } else {
                out += c;
            }
        }
    }
    return out + "\"";
}

std::string number(std::optional<double> v)
{
    if (!v || !std::isfinite(*v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.6g", *v);
    return buf;
}

}  // namespace

std::string to_json(const Record& r)
{
    auto met = r.met();
    std::string s = "{";
    s += "\"name\": " + quote(r.name);
    s += ", \"ours\": " + number(r.ours);
    s += ", \"baseline\": " + number(r.baseline);
    s += ", \"unit\": " + quote(r.unit);
    s += ", \"ratio\": " + number(r.ratio());
    s += ", \"target\": " + number(r.target);
    s += ", \"target_on\": " + quote(r.target_on == TargetOn::ratio ? "ratio" : "ours");
    s += ", \"target_sense\": " + quote(r.at_most ? "at_most" : "at_least");
    s += ", \"met\": " + std::string(met ? (*met ? "true" : "false") : "null");
    s += ", \"baseline_name\": " + quote(r.baseline_name);
    s += ", \"notes\": " + quote(r.notes);
    auto spread = [](const Stats& st) {
        return "{\"min\": " + number(st.min) + ", \"median\": " + number(st.median) + ", \"max\": " +
               number(st.max) + ", \"n\": " + std::to_string(st.n) + "}";
    };
    if (r.ours_spread) s += ", \"ours_spread\": " + spread(*r.ours_spread);
    if (r.baseline_spread) s += ", \"baseline_spread\": " + spread(*r.baseline_spread);
    for (const auto& [k, v] : r.tags) s += ", " + quote(k) + ": " + quote(v);
    for (const auto& [k, v] : r.values) s += ", " + quote(k) + ": " + number(v);
    return s + "}";
}

RecordSink::RecordSink(const std::string& path) : path_(path)
{
    if (!path_.empty()) file_.reset(std::fopen(path_.c_str(), "a"));
    if (!ok()) std::fprintf(stderr, "bench: cannot open %s for appending\n", path_.c_str());
}

void RecordSink::add(const Record& r)
{
    auto ratio = r.ratio();
    auto met = r.met();
    std::printf("RESULT %-70s ours %12.4g", r.name.c_str(), r.ours);
    if (r.baseline) std::printf("  base %12.4g", *r.baseline);
    std::printf(" %s", r.unit.c_str());
    if (ratio) std::printf("  ratio %8.3g", *ratio);
    if (met) std::printf("  target %g %s", *r.target, *met ? "MET" : "MISSED");
    std::printf("\n");
    std::fflush(stdout);
    if (file_) {
        std::fprintf(file_.get(), "%s\n", to_json(r).c_str());
        std::fflush(file_.get());
    }
}

}  // namespace vrex::bench
