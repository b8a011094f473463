// SPDX-License-Identifier: (GPL-2.0 OR MIT)
#include "bench_record.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace vrex::bench {

std::optional<double> Record::ratio() const {
    if (paired_ratio) return paired_ratio;
    if (!baseline || *baseline <= 0.0) return std::nullopt;
    return ours / *baseline;
}

std::optional<bool> Record::met() const {
    if (!target) return std::nullopt;
    const std::optional<double> v = target_on == TargetOn::ours ? std::optional<double>(ours) : ratio();
    if (!v) return false;
    return at_most ? *v <= *target : *v >= *target;
}

namespace {

std::string quote(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
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

std::string number(std::optional<double> v) {
    if (!v || !std::isfinite(*v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.6g", *v);
    return buf;
}

}  // namespace

std::string to_json(const Record& r) {
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
        return "{\"min\": " + number(st.min) + ", \"median\": " + number(st.median) +
               ", \"max\": " + number(st.max) + ", \"n\": " + std::to_string(st.n) + "}";
    };
    if (r.ours_spread) s += ", \"ours_spread\": " + spread(*r.ours_spread);
    if (r.baseline_spread) s += ", \"baseline_spread\": " + spread(*r.baseline_spread);
    for (const auto& [k, v] : r.tags) s += ", " + quote(k) + ": " + quote(v);
    for (const auto& [k, v] : r.values) s += ", " + quote(k) + ": " + number(v);
    return s + "}";
}

namespace {

// Runnable tasks right now (procs_running of /proc/stat), or -1 when unreadable.
int procs_running() {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen("/proc/stat", "r"), std::fclose);
    if (!f) return -1;
    char line[256];
    while (std::fgets(line, sizeof(line), f.get()))
        if (std::strncmp(line, "procs_running ", 14) == 0) return std::atoi(line + 14);
    return -1;
}

double loadavg1() {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen("/proc/loadavg", "r"), std::fclose);
    double v = 0.0;
    if (!f || std::fscanf(f.get(), "%lf", &v) != 1) return 0.0;
    return v;
}

}  // namespace

LoadSampler::LoadSampler() {
    sample();
    thread_ = std::thread([this] {
        while (!stop_.load()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            sample();
        }
    });
}

LoadSampler::~LoadSampler() {
    stop_.store(true);
    thread_.join();
}

void LoadSampler::sample() {
    const int n = procs_running();
    if (n < 0) return;
    const std::lock_guard<std::mutex> lock(mu_);
    sum_ += n;
    max_ = std::max(max_, static_cast<double>(n));
    n_++;
}

LoadWindow LoadSampler::take() {
    sample();  // a short window still gets one sample of its own
    LoadWindow w;
    {
        const std::lock_guard<std::mutex> lock(mu_);
        w.samples = n_;
        w.mean = n_ ? sum_ / static_cast<double>(n_) : 0.0;
        w.max = max_;
        sum_ = max_ = 0.0;
        n_ = 0;
    }
    w.loadavg1 = loadavg1();
    const unsigned hc = std::thread::hardware_concurrency();
    w.cpus = hc ? hc : 1;
    return w;
}

RecordSink::RecordSink(const std::string& path) : path_(path) {
    if (!path_.empty()) file_.reset(std::fopen(path_.c_str(), "a"));
    if (!ok()) std::fprintf(stderr, "bench: cannot open %s for appending\n", path_.c_str());
}

Record RecordSink::add(const Record& in) {
    Record r = in;
    const LoadWindow lw = load_.take();
    r.values.emplace_back("load_running_mean", lw.mean);
    r.values.emplace_back("load_running_max", lw.max);
    r.values.emplace_back("load_samples", static_cast<double>(lw.samples));
    r.values.emplace_back("load_avg1", lw.loadavg1);
    r.values.emplace_back("cpus", static_cast<double>(lw.cpus));
    if (lw.noisy()) r.tags.emplace_back("noisy", "load");
    auto ratio = r.ratio();
    auto met = r.met();
    std::printf("RESULT %-70s ours %12.4g", r.name.c_str(), r.ours);
    if (r.baseline) std::printf("  base %12.4g", *r.baseline);
    std::printf(" %s", r.unit.c_str());
    if (ratio) std::printf("  ratio %8.3g", *ratio);
    if (met) std::printf("  target %g %s", *r.target, *met ? "MET" : "MISSED");
    std::printf("  load %.1f/%u%s\n", lw.mean, lw.cpus, lw.noisy() ? " NOISY" : "");
    std::fflush(stdout);
    if (file_) {
        std::fprintf(file_.get(), "%s\n", to_json(r).c_str());
        std::fflush(file_.get());
    }
    return r;
}

}  // namespace vrex::bench
