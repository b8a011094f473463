// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// SHIE similarity lookup (lib/shie_table.c, multi-index hashing) against FAISS binary indexes, a plain
// linear popcount scan and a memory-bandwidth bound, on uniform random codes and on codes clustered
// around real-footage fingerprints. Every method's result sets are checked against FAISS
// IndexBinaryFlat on every configuration: a mismatch of an exact method fails the run (exit 1).
// Everything runs on one core: FAISS is pinned to one OpenMP thread, our lookup is single-threaded.
#include <omp.h>

#include <algorithm>
#include <ctime>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench_options.h"
#include "bench_record.h"
#include "codes.h"
#include "faiss_indexes.h"
#include "frames.h"
#include "linear_scan.h"
#include "shie_index.h"

namespace vrex::bench {
namespace {

constexpr uint32_t kRadius = VREX_SHIE_DEFAULT_RADIUS;
// Uniform queries are database codes with 0..30 flipped bits: about two thirds land within the radius of
// their source (and almost never of anything else), the rest are misses that must return nothing.
constexpr uint32_t kUniformQueryFlips = 30;
// Clustered database codes and queries are footage fingerprints with 0..8 flipped bits (sensor noise
// between near-identical frames of a static camera).
constexpr uint32_t kClusterFlips = 8;

struct Size {
    size_t n;
    size_t queries;            // uniform codes
    size_t clustered_queries;  // fewer: each returns a large share of a clustered table
};

struct Plan {
    std::vector<Size> sizes;
    double min_seconds;  // each method is repeated until it ran at least this long
    size_t bandwidth_bytes;
};

Plan plan_for(Mode m)
{
    switch (m) {
    case Mode::smoke: return {{{2000, 24, 24}}, 0.0, size_t{8} << 20};
    case Mode::quick: return {{{10000, 400, 100}, {100000, 150, 20}, {1000000, 40, 6}}, 0.1, size_t{256} << 20};
    case Mode::full: return {{{10000, 4000, 1000}, {100000, 1500, 200}, {1000000, 400, 40}}, 1.5, size_t{1} << 30};
    }
    return {};
}

std::string size_label(size_t n)
{
    if (n >= 1000000 && n % 1000000 == 0) return std::to_string(n / 1000000) + "M";
    if (n >= 1000 && n % 1000 == 0) return std::to_string(n / 1000) + "k";
    return std::to_string(n);
}

using Results = std::vector<std::vector<uint32_t>>;
// Runs every query once; fills results when given, returns the number of results.
using RunFn = std::function<size_t(std::span<const vrex_fp>, Results*)>;

struct Method {
    std::string name;
    bool exact;
    RunFn run;
};

struct Measured {
    std::string name;
    bool exact;
    double qps;
    double recall;       // |found ∩ truth| / |truth| over all queries
    bool identical;      // every result set equals FAISS IndexBinaryFlat's
    size_t false_hits;   // results outside the radius (never acceptable)
};

// CPU seconds of the whole process: every method runs on one thread, and CPU time (unlike wall time) is
// not inflated when other jobs share the machine's two cores.
double cpu_seconds()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double time_qps(const RunFn& run, std::span<const vrex_fp> queries, double min_seconds)
{
    volatile size_t sink = 0;
    size_t passes = 0;
    double t0 = cpu_seconds();
    double elapsed = 0.0;
    do {
        sink = sink + run(queries, nullptr);
        passes++;
        elapsed = cpu_seconds() - t0;
    } while (elapsed < min_seconds);
    return static_cast<double>(passes * queries.size()) / elapsed;
}

Measured measure(const Method& m, std::span<const vrex_fp> queries, const Results& truth, double min_seconds)
{
    Results got;
    m.run(queries, &got);
    Measured r{m.name, m.exact, 0.0, 1.0, true, 0};
    size_t want = 0, found = 0;
    for (size_t q = 0; q < queries.size(); q++) {
        const auto& t = truth[q];
        const auto& g = got[q];
        want += t.size();
        std::vector<uint32_t> common;
        std::set_intersection(t.begin(), t.end(), g.begin(), g.end(), std::back_inserter(common));
        found += common.size();
        r.false_hits += g.size() - common.size();
        if (g != t) {
            if (r.identical && m.exact)
                std::fprintf(stderr, "MISMATCH %s: query %zu returns %zu ids, FAISS Flat %zu (%zu in common)\n",
                             m.name.c_str(), q, g.size(), t.size(), common.size());
            r.identical = false;
        }
    }
    r.recall = want ? static_cast<double>(found) / static_cast<double>(want) : 1.0;
    r.qps = time_qps(m.run, queries, min_seconds);
    std::printf("  %-58s %12.1f queries/s  recall %.4f%s\n", m.name.c_str(), r.qps, r.recall,
                r.identical ? "  (identical to FAISS Flat)" : "");
    return r;
}

struct Workload {
    std::string dist;  // "uniform", "clustered-vtest", "clustered-synthetic"
    std::vector<vrex_fp> db;
    std::vector<vrex_fp> queries;
};

struct Bandwidth {
    double dram;  // bytes/s copying buffers far larger than the caches
};

// Returns false when an exact method disagreed with FAISS Flat.
bool run_workload(const Workload& w, const Plan& plan, const Bandwidth& bw, RecordSink& sink)
{
    const size_t n = w.db.size();
    const std::string prefix = "shie/" + w.dist + "/N=" + size_label(n) + ": ";
    std::printf("== %s N=%zu, %zu queries, radius %u\n", w.dist.c_str(), n, w.queries.size(), kRadius);

    const std::vector<FaissConfig> faiss_cfgs = {
        {FaissKind::flat, 0, 0, 0, true},
        {FaissKind::hash, 8, 0, 8, true},            // every one of the 256 buckets: exact
        {FaissKind::multihash, 16, 8, 2, true},      // pigeonhole: some 16-bit substring within 2
        {FaissKind::multihash, 16, 8, 1, false},     // FAISS's default nflip: misses results
        {FaissKind::hash, 16, 0, 2, false},          // one 16-bit hash, 2 flips: misses most results
    };
    std::vector<std::unique_ptr<FaissIndex>> faiss;
    faiss.reserve(faiss_cfgs.size());
    for (const auto& c : faiss_cfgs) faiss.push_back(std::make_unique<FaissIndex>(c, w.db));
    ShieIndex ours(w.db);

    std::vector<Method> methods;
    methods.push_back({"vrex SHIE find_range (MIH)", true, [&](auto qs, Results* out) {
                           return ours.range(ShieIndex::Path::mih, qs, kRadius, out);
                       }});
    methods.push_back({"vrex SHIE find_range_bruteforce (reference)", true, [&](auto qs, Results* out) {
                           return ours.range(ShieIndex::Path::bruteforce, qs, kRadius, out);
                       }});
    methods.push_back({"plain linear popcount scan (16 B/entry)", true, [&](auto qs, Results* out) {
                           std::vector<uint32_t> hits;
                           size_t total = 0;
                           if (out) out->assign(qs.size(), {});
                           for (size_t i = 0; i < qs.size(); i++) {
                               hits.clear();
                               linear_scan(w.db, qs[i], kRadius, hits);
                               total += hits.size();
                               if (out) (*out)[i] = hits;
                           }
                           return total;
                       }});
    for (const auto& f : faiss) {
        const FaissIndex* idx = f.get();
        methods.push_back({f->config().describe(), f->config().exact,
                           [idx](auto qs, Results* out) { return idx->range(qs, kRadius, out); }});
    }

    Results truth;
    faiss[0]->range(w.queries, kRadius, &truth);
    size_t total_hits = 0, hit_queries = 0;
    for (const auto& t : truth) {
        total_hits += t.size();
        hit_queries += !t.empty();
    }
    std::printf("  FAISS Flat truth: %zu results, %zu of %zu queries non-empty\n", total_hits, hit_queries,
                w.queries.size());

    std::vector<Measured> m;
    m.reserve(methods.size());
    for (const auto& method : methods) m.push_back(measure(method, w.queries, truth, plan.min_seconds));

    bool ok = true;
    for (const auto& r : m) {
        if (r.exact && !r.identical) {
            std::fprintf(stderr, "FAIL: %s is configured as exact but its result sets differ from FAISS Flat\n",
                         r.name.c_str());
            ok = false;
        }
        if (r.false_hits) {
            std::fprintf(stderr, "FAIL: %s returned %zu results beyond radius %u\n", r.name.c_str(), r.false_hits,
                         kRadius);
            ok = false;
        }
    }

    const Measured& our = m[0];
    const bool at_target_size = n >= 1000000;
    const bool uniform = w.dist == "uniform";
    char notes[256];
    std::snprintf(notes, sizeof(notes), "radius %u, %zu queries (%zu non-empty, %.1f results/query), one core%s",
                  kRadius, w.queries.size(), hit_queries, static_cast<double>(total_hits) / w.queries.size(),
                  our.identical ? ", result sets identical to FAISS Flat" : ", RESULT SETS DIFFER");
    auto record = [&](const std::string& what, const Measured& base, std::optional<double> target) {
        Record r;
        r.name = prefix + what;
        r.ours = our.qps;
        r.baseline = base.qps;
        r.unit = "queries/s";
        r.target = target;
        r.baseline_name = base.name;
        r.notes = notes;
        sink.add(r);
    };

    const Measured* fastest = nullptr;
    for (const auto& r : m) {
        if (r.name.starts_with("FAISS") && r.exact && (!fastest || r.qps > fastest->qps)) fastest = &r;
    }
    record("ours vs fastest exact FAISS index", *fastest,
           at_target_size ? std::optional<double>(uniform ? 100.0 : 20.0) : std::nullopt);
    for (const auto& r : m) {
        if (&r == &our || !r.exact) continue;
        std::optional<double> target;
        if (at_target_size && uniform && r.name.starts_with("plain linear")) target = 10.0;
        record("ours vs " + r.name, r, target);
    }

    // Memory-bandwidth bound of a linear scan: each query must stream n codes of 16 bytes.
    double bytes_per_query = static_cast<double>(n) * sizeof(vrex_fp);
    Record b;
    b.name = prefix + "ours vs linear-scan bandwidth bound (16 B/entry at DRAM copy bandwidth)";
    b.ours = our.qps;
    b.baseline = bw.dram / bytes_per_query;
    b.unit = "queries/s";
    b.baseline_name = "copy bandwidth / (N * 16 B)";
    char bn[160];
    std::snprintf(bn, sizeof(bn), "DRAM copy bandwidth %.2f GB/s; plain scan reaches %.0f%% of this bound", bw.dram / 1e9,
                  100.0 * m[2].qps / (bw.dram / bytes_per_query));
    b.notes = bn;
    sink.add(b);

    for (const auto& r : m) {
        if (r.exact) continue;
        Record rr;
        rr.name = prefix + "recall, ours vs inexact " + r.name;
        rr.ours = our.recall;
        rr.baseline = r.recall;
        rr.unit = "recall";
        rr.baseline_name = r.name;
        char nn[160];
        std::snprintf(nn, sizeof(nn), "inexact at radius %u: %.1f queries/s (ours %.1f), not a speed baseline", kRadius,
                      r.qps, our.qps);
        rr.notes = nn;
        sink.add(rr);
    }
    return ok;
}

std::vector<vrex_fp> footage_centres(const Options& opt, std::string& source)
{
    if (opt.has_footage() && opt.mode != Mode::smoke) {
        GrayClip clip(opt.gray, opt.width, opt.height);
        if (clip.ok()) {
            source = "clustered-vtest";
            return fingerprint_sequence(clip.frames(), [&](size_t i) { return clip.read(i); });
        }
        std::fprintf(stderr, "bench: cannot read footage %s\n", opt.gray.c_str());
        return {};
    }
    source = "clustered-synthetic";
    return fingerprint_sequence(200, [](size_t i) { return synthetic_frame(320, 240, static_cast<uint32_t>(i)); });
}

// How tight the footage's own clusters are: the pairwise distances between its fingerprints decide how
// many entries a clustered query returns.
void print_spread(std::span<const vrex_fp> fps)
{
    std::vector<uint32_t> hist(VREX_FP_BITS + 1);
    size_t pairs = 0;
    for (size_t i = 0; i < fps.size(); i++)
        for (size_t j = i + 1; j < fps.size(); j++, pairs++) hist[vrex_fp_distance(&fps[i], &fps[j])]++;
    auto quantile = [&](double f) {
        size_t want = static_cast<size_t>(f * static_cast<double>(pairs)), seen = 0;
        for (uint32_t d = 0; d <= VREX_FP_BITS; d++)
            if ((seen += hist[d]) > want) return d;
        return uint32_t{VREX_FP_BITS};
    };
    size_t within = 0;
    for (uint32_t d = 0; d <= kRadius; d++) within += hist[d];
    std::printf("footage fingerprints: pairwise Hamming p10 %u, median %u, p90 %u; %.1f%% of pairs within %u\n",
                quantile(0.1), quantile(0.5), quantile(0.9), pairs ? 100.0 * within / pairs : 0.0, kRadius);
}

int run(const Options& opt)
{
    omp_set_num_threads(1);
    const Plan plan = plan_for(opt.mode);
    RecordSink sink(opt.out);
    if (!sink.ok()) return 2;

    if (opt.mode != Mode::smoke && !opt.has_footage()) {
        std::fprintf(stderr, "bench: clustered codes need real footage: run scripts/fetch-footage.sh --gray and "
                             "pass --gray/--width/--height (scripts/bench.sh does)\n");
        return 2;
    }
    std::string cluster_source;
    std::vector<vrex_fp> centres = footage_centres(opt, cluster_source);
    if (centres.empty()) return 2;
    std::printf("clustered codes: %zu fingerprints from %s; FAISS radius offset %d\n", centres.size(),
                cluster_source.c_str(), faiss_radius_offset());
    print_spread(centres);

    Bandwidth bw{copy_bandwidth(plan.bandwidth_bytes, 0.5)};
    Record bwr;
    bwr.name = "memory/copy bandwidth: " + size_label(plan.bandwidth_bytes >> 20) + " MiB buffers (memcpy, one core)";
    bwr.ours = bw.dram / 1e9;
    bwr.unit = "GB/s";
    bwr.notes = "bytes copied per second, best pass; the basis of the linear-scan bound";
    sink.add(bwr);

    // --dist=uniform or --dist=clustered runs one distribution only (for profiling).
    bool want_uniform = true, want_clustered = true;
    for (const auto& a : opt.rest) {
        if (a == "--dist=uniform") want_clustered = false;
        else if (a == "--dist=clustered") want_uniform = false;
    }
    bool ok = true;
    uint64_t seed = 1;
    for (const Size& s : plan.sizes) {
        if (want_uniform) {
            Workload u{"uniform", uniform_codes(s.n, seed), {}};
            u.queries = noisy_copies(u.db, s.queries, kUniformQueryFlips, seed + 100);
            ok &= run_workload(u, plan, bw, sink);
        }
        if (want_clustered) {
            Workload c{cluster_source, noisy_copies(centres, s.n, kClusterFlips, seed + 200), {}};
            c.queries = noisy_copies(centres, s.clustered_queries, kClusterFlips, seed + 300);
            ok &= run_workload(c, plan, bw, sink);
        }
        seed += 1000;
    }
    std::printf("%s\n", ok ? "shie_vs_faiss: every exact method matched FAISS Flat" : "shie_vs_faiss: FAILED");
    return ok ? 0 : 1;
}

}  // namespace
}  // namespace vrex::bench

int main(int argc, char** argv)
{
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows up in logs as it happens
    vrex::bench::Options opt;
    if (!vrex::bench::parse_options(argc, argv, opt)) return 2;
    try {
        return vrex::bench::run(opt);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "shie_vs_faiss: %s\n", e.what());
        return 2;
    }
}
