#include "report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "error.hpp"
#include "png.hpp"
#include "svg_plot.hpp"

namespace vrex::pipeline {
namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& p, std::string_view data) {
    std::ofstream f(p, std::ios::binary);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!f) throw Failure(FailureKind::runtime, "cannot write " + p.string());
}

double mib(std::uint64_t b) {
    return static_cast<double>(b) / (1024.0 * 1024.0);
}

// The frame in grey with each region outlined: green = KV reused, red = KV computed.
std::vector<std::uint8_t> annotated_rgb(const AnnotatedFrame& a) {
    const LumaFrame& l = a.luma;
    std::vector<std::uint8_t> rgb(std::size_t{l.width} * l.height * 3);
    for (std::size_t i = 0; i < l.px.size(); i++) rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = l.px[i];
    for (std::uint32_t r = 0; r < kRegions; r++) {
        const RegionRect rc = region_rect(l.width, l.height, r);
        const bool reused = a.regions[r].reused;
        const std::uint8_t col[3] = {static_cast<std::uint8_t>(reused ? 40 : 230),
                                     static_cast<std::uint8_t>(reused ? 220 : 40), 40};
        const std::uint32_t t = reused ? 3 : 1;
        for (std::uint32_t y = rc.y; y < rc.y + rc.h; y++)
            for (std::uint32_t x = rc.x; x < rc.x + rc.w; x++) {
                const bool edge =
                    x < rc.x + t || x >= rc.x + rc.w - t || y < rc.y + t || y >= rc.y + rc.h - t;
                if (!edge) continue;
                std::uint8_t* p = &rgb[(std::size_t{y} * l.width + x) * 3];
                p[0] = col[0];
                p[1] = col[1];
                p[2] = col[2];
            }
    }
    return rgb;
}

// A font size (px) at which @chars characters of sans-serif fit in a region @width px wide: about
// 0.62 em per character (digits and spaces of DejaVu Sans / Liberation Sans), 10 px of padding.
double label_font_px(std::uint32_t width, std::size_t chars) {
    const double fit =
        (static_cast<double>(width) - 10.0) / (0.62 * static_cast<double>(std::max<std::size_t>(chars, 1)));
    return std::clamp(fit, 7.0, 13.0);
}

std::string frame_figure(const AnnotatedFrame& a, const std::string& png_b64) {
    const LumaFrame& l = a.luma;
    std::string o = fmt::format(
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
        "{1}\" "
        "font-family=\"sans-serif\" font-size=\"13\"><image width=\"{0}\" height=\"{1}\" "
        "href=\"data:image/png;base64,{2}\"/>\n",
        l.width, l.height, png_b64);
    std::uint32_t reused = 0;
    for (std::uint32_t r = 0; r < kRegions; r++) {
        const RegionMark& m = a.regions[r];
        if (!m.reused) continue;
        reused++;
        const RegionRect rc = region_rect(l.width, l.height, r);
        // Two lines sized to the region: one line at 13 px ran past an 80 px region (320x240
        // video), under the next region's label, hiding the source frame and the ~dN mark.
        const std::string psnr = fmt::format("{:.1f} dB", m.psnr);
        const std::string src = fmt::format("s{} f{}{}", m.src_stream, m.src_frame,
                                            m.approximate ? fmt::format(" ~d{}", m.distance) : "");
        const double font = label_font_px(rc.w, std::max(psnr.size(), src.size()));
        o += fmt::format(
            "<g class=\"reused\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{:.1f}\" "
            "fill=\"rgba(0,0,0,0.6)\"/>"
            "<text x=\"{}\" font-size=\"{:.1f}\" fill=\"#7f7\"><tspan y=\"{:.1f}\">{}</tspan>"
            "<tspan x=\"{}\" y=\"{:.1f}\">{}</tspan></text></g>\n",
            rc.x + 3, rc.y + 3, rc.w - 6, 2 * font + 6, rc.x + 5, font, rc.y + 3 + font + 1, psnr, rc.x + 5,
            rc.y + 3 + 2 * font + 2, src);
    }
    o += fmt::format(
        "</svg><figcaption>stream {}, frame {} (step {}): {} of 16 regions reused (green, label = "
        "PSNR to the reused region, source stream/frame, ~dN = approximate similarity hit at "
        "Hamming distance N); red = KV computed for this frame.</figcaption></figure>\n",
        a.stream, a.frame, a.step, reused);
    return o;
}

std::string cell_ratio(const nlohmann::json& f, const char* group, const char* key) {
    return f.is_null() ? std::string("&ndash;") : fmt::format("{:.3f}x", f[group][key].get<double>());
}

// The headline: this run and its control without the similarity lookup side by side.
std::string headline_table(const Comparison& c, const nlohmann::json& h) {
    const RunResult& r = c.run;
    const nlohmann::json& run = h["run"];
    const nlohmann::json& ctl = h["control"];
    const nlohmann::json& one = h["single_stream"];
    const nlohmann::json& one0 = h["single_stream_control"];
    const std::size_t n = r.streams.size();
    auto row = [](const std::string& k, const std::string& a, const std::string& b) {
        return fmt::format("<tr><th>{}</th><td>{}</td><td>{}</td></tr>\n", k, a, b);
    };
    auto blocks = [](const nlohmann::json& f) {
        return fmt::format(" ({} / {} blocks)", f["same_window"]["blocks_peak"].get<std::uint64_t>(),
                           f["same_window"]["baseline_blocks_peak"].get<std::uint64_t>());
    };
    auto pct = [](const nlohmann::json& f, double v) {
        return f.is_null() ? std::string("&ndash;") : fmt::format("{:.1f} %", 100.0 * v);
    };
    std::string t = fmt::format(
        "<p>V-Rex against a vLLM-style paged baseline fed the same frames and keeping the same "
        "{}-frame window (sliding-window attention), peaks over the run. The control reruns the same "
        "inputs without the similarity lookup (temporal lookups only): the difference is what the "
        "similarity lookup adds.</p>\n<table><tr><th>figure</th>"
        "<th>this run ({})</th><th>control: no similarity lookup</th></tr>\n",
        r.zombie_frames + 1,
        r.similarity ? fmt::format("similarity radius {}", r.radius) : "no similarity lookup");
    t += row(fmt::format("resident KV, {} stream{} / same-window baseline", n, n == 1 ? "" : "s"),
             cell_ratio(run, "same_window", "resident_bytes_ratio") + blocks(run),
             cell_ratio(ctl, "same_window", "resident_bytes_ratio"));
    if (n > 1)
        t += row(fmt::format("resident KV, stream 0 alone ({}) / same-window baseline",
                             svg::escape(r.streams[0].path)),
                 cell_ratio(one, "same_window", "resident_bytes_ratio") + blocks(one),
                 cell_ratio(one0, "same_window", "resident_bytes_ratio"));
    t += row("device memory held (slabs incl. free slots) / baseline pool",
             cell_ratio(run, "device_memory", "ratio") +
                 fmt::format(" ({:.1f} MiB / {:.1f} MiB)",
                             mib(run["device_memory"]["held_bytes_peak"].get<std::uint64_t>()),
                             mib(run["device_memory"]["baseline_pool_bytes"].get<std::uint64_t>())),
             cell_ratio(ctl, "device_memory", "ratio"));
    t += row("allocations placed outside the frame's bank group",
             pct(run, run["out_of_group"]["rate"].get<double>()) +
                 fmt::format(" ({} / {})", r.fallback_allocations, r.allocations),
             pct(ctl, ctl.is_null() ? 0.0 : ctl["out_of_group"]["rate"].get<double>()));
    t += row("reuse rate", pct(run, run["reuse_rate"].get<double>()),
             pct(ctl, ctl.is_null() ? 0.0 : ctl["reuse_rate"].get<double>()));
    t += row("of the regions: reused a block only the similarity lookup found",
             pct(run, run["reuse_by_lookup"]["similar_only"].get<double>()),
             pct(ctl, ctl.is_null() ? 0.0 : ctl["reuse_by_lookup"]["similar_only"].get<double>()));
    auto db = [](const nlohmann::json& f) {
        return f.is_null() ? std::string("&ndash;")
                           : fmt::format("{:.2f} dB", f["psnr_reused_p5_db"].get<double>());
    };
    t += row("reused-region PSNR p5", db(run), db(ctl));
    t += "</table>\n";
    if (n > 1)
        t += fmt::format("<p>All {} streams were active for {} of {} steps.</p>\n", n, r.all_active_steps(),
                         r.samples.size());
    return t;
}

}  // namespace

std::string write_report(const std::string& dir_name, const Comparison& c) {
    const RunResult& r = c.run;
    const fs::path dir(dir_name);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Failure(FailureKind::runtime, "cannot create " + dir.string() + ": " + ec.message());
    nlohmann::json j = r.to_json();
    j["headline"] = c.to_json();
    const std::string headline = headline_table(c, j["headline"]);

    std::vector<double> x, resident, baseline, window, live, bblocks, wblocks, reuse;
    std::vector<std::vector<double>> banks(r.bank_count);
    for (const StepSample& s : r.samples) {
        x.push_back(s.step);
        resident.push_back(mib(s.resident_bytes));
        baseline.push_back(mib(s.baseline_bytes));
        window.push_back(mib(s.window_bytes));
        live.push_back(static_cast<double>(s.live_blocks));
        bblocks.push_back(static_cast<double>(s.baseline_blocks));
        wblocks.push_back(static_cast<double>(s.window_blocks));
        reuse.push_back(s.regions ? 100.0 * s.reused / s.regions : 0.0);
        for (std::uint32_t b = 0; b < r.bank_count && b < s.bank_kv_bytes.size(); b++)
            banks[b].push_back(
                r.bank_size ? static_cast<double>(s.bank_kv_bytes[b]) / static_cast<double>(r.bank_size) : 0);
    }
    // Reuse rate as a moving average over 10 steps, so the trend is readable.
    std::vector<double> reuse_avg(reuse.size());
    for (std::size_t i = 0; i < reuse.size(); i++) {
        const std::size_t from = i >= 9 ? i - 9 : 0;
        double s = 0;
        for (std::size_t k = from; k <= i; k++) s += reuse[k];
        reuse_avg[i] = s / static_cast<double>(i - from + 1);
    }

    const std::string memory = svg::line_chart({"Resident KV memory (log scale)",
                                                "step (one frame per stream)",
                                                "MiB",
                                                x,
                                                {{"V-Rex resident KV", "#1a7f37", resident},
                                                 {"append-only paged baseline", "#cf222e", baseline},
                                                 {"paged baseline, same window", "#8250df", window}},
                                                true});
    const std::string blocks = svg::line_chart({"Managed KV blocks (log scale)",
                                                "step",
                                                "blocks",
                                                x,
                                                {{"V-Rex live blocks", "#1a7f37", live},
                                                 {"append-only paged baseline", "#cf222e", bblocks},
                                                 {"paged baseline, same window", "#8250df", wblocks}},
                                                true});
    svg::LineChart rc{"Reuse rate (moving average over 10 steps)", "step", "% of regions reused", x,
                      {{"reused regions", "#0969da", reuse_avg}},  false};
    rc.y_max = 100;
    const std::string reuse_svg = svg::line_chart(rc);
    const std::string banks_svg =
        svg::heat_map({"Bank occupancy (live KV bytes / bank size)", "step", "bank", banks, x});
    write_file(dir / "memory.svg", memory);
    write_file(dir / "blocks.svg", blocks);
    write_file(dir / "reuse.svg", reuse_svg);
    write_file(dir / "banks.svg", banks_svg);
    write_file(dir / "summary.json", j.dump(2) + "\n");

    std::string frames;
    for (const AnnotatedFrame& a : r.annotated) {
        const auto png = encode_png_rgb(a.luma.width, a.luma.height, annotated_rgb(a));
        const std::string name = fmt::format("frame-s{}-f{}.png", a.stream, a.frame);
        write_file(dir / name, std::string_view(reinterpret_cast<const char*>(png.data()), png.size()));
        frames += frame_figure(a, base64(png));
    }

    auto row = [](const std::string& k, const std::string& v, const std::string& target = "") {
        return fmt::format("<tr><th>{}</th><td>{}</td><td>{}</td></tr>\n", svg::escape(k), svg::escape(v),
                           svg::escape(target));
    };
    auto pct = [](double v) { return fmt::format("{:.1f} %", 100.0 * v); };
    std::string table;
    table += row("backend", fmt::format("{} — {}", r.backend, r.device));
    table += row("model", fmt::format("{}; {} tokens/region, {} B/token, block {} KiB", r.model,
                                      r.tokens_per_region, r.bytes_per_token, r.block_bytes >> 10));
    table += row("streams / frames", fmt::format("{} / {}", r.streams.size(), r.frames));
    table += row("reuse rate", pct(j["reuse_rate"]), ">= 50 %");
    table += row("approximate-hit rate (similarity lookups)", pct(j["approx_hit_rate"]));
    table += row("similarity hits on the temporal lookup's block",
                 fmt::format("{} of {}", r.similar_hits_temporal_block, r.similar_hits));
    table += row("reused a block only the similarity lookup found",
                 fmt::format("{} of {} reused regions", r.reused_similar, r.reused));
    table += row("reused-region PSNR p5 / p50 / min",
                 fmt::format("{:.2f} / {:.2f} / {:.2f} dB (guard {:.1f} dB)",
                             j["psnr_reused_p5_db"].get<double>(), j["psnr_reused_p50_db"].get<double>(),
                             j["psnr_reused_min_db"].get<double>(), r.psnr_guard_db),
                 ">= 30 dB");
    table += row("HAL latency per frame p50 / p99",
                 fmt::format("{:.1f} / {:.1f} us", j["latency_us_p50"].get<double>(),
                             j["latency_us_p99"].get<double>()));
    table += row("FCC (begin_frame) at 1080p equivalent",
                 fmt::format("{:.0f} frames/s", j["fcc_1080p_fps_equiv"].get<double>()), ">= 1000 frames/s");
    table +=
        row("device", fmt::format("{} banks x {} MiB, zombie threshold {} frames, {} fallback allocations",
                                  r.bank_count, r.bank_size >> 20, r.zombie_frames, r.fallback_allocations));
    table +=
        row("out-of-group placements", fmt::format("{} of {} allocations ({:.1f} %)", r.fallback_allocations,
                                                   r.allocations, 100.0 * r.out_of_group_rate()));
    table += row("accounting", r.accounting_mismatches
                                   ? "MISMATCH: " + r.first_mismatch
                                   : "resident bytes = live blocks x block size at every step");
    std::string inputs;
    for (const StreamInfo& s : r.streams)
        inputs += fmt::format(
            "<li>{} ({} {}x{}, {:.1f} fps), from frame {}, {} frames{}; reuse {:.1f} % ({} regions reused "
            "from another stream)</li>\n",
            svg::escape(s.path), svg::escape(s.codec), s.width, s.height, s.fps, s.start_frame, s.frames,
            s.cut_path.empty() ? ""
                               : fmt::format(", cut at frame {} to {}", s.cut_at, svg::escape(s.cut_path)),
            100.0 * s.reuse_rate(), s.reused_cross_stream);
    const std::string footnote = fmt::format(
        "<p id=\"footnote\"><small>Footnote: against an <em>append-only</em> paged baseline (every token of "
        "every frame ever seen stays resident) the resident KV peak is {:.1f} MiB / {:.1f} MiB = {:.4f}x and "
        "managed blocks {} / {} = {:.4f}x. That baseline grows without bound while V-Rex keeps a window, so "
        "the ratio is met by construction for any clip longer than the window; it is not the "
        "headline.</small></p>",
        mib(r.resident_bytes_peak()), mib(r.baseline_bytes_peak()), j["resident_bytes_ratio"].get<double>(),
        r.live_blocks_peak(), r.baseline_blocks_peak(), j["managed_blocks_ratio"].get<double>());

    const std::string html =
        fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>V-Rex run report</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}}
table{{border-collapse:collapse}}th,td{{border:1px solid #ccc;padding:4px 8px;text-align:left}}
th{{background:#f4f4f4}}figure{{margin:1em 0}}svg{{max-width:100%;height:auto}}</style></head>
<body>
<h1>V-Rex run report</h1>
<section id="headline"><h2>Same-window comparison</h2>
{}</section>
<section id="summary"><h2>Details</h2>
<table><tr><th>figure</th><th>measured</th><th>target</th></tr>
{}</table>
{}</section>
<section id="inputs"><h2>Inputs</h2><ul>
{}</ul></section>
<section id="memory"><h2>Memory against the paged baseline</h2>
<p>The baseline is a vLLM-style paged allocator fed the same frames: every region of every frame appends
its tokens (append-only). The "same window" variant frees blocks older than the zombie window, i.e. it
keeps the same temporal context as V-Rex without any reuse.</p>
{}
{}</section>
<section id="reuse"><h2>Reuse over time</h2>
{}</section>
<section id="banks"><h2>Bank occupancy</h2>
{}</section>
<section id="frames"><h2>Annotated frames</h2>
{}</section>
<footer id="credits"><h2>Credits</h2>
<p>Footage (clips listed under Inputs, fetched at run time by scripts/fetch-footage.sh and never
committed to this repository; provenance and licences in docs/footage.md):
<code>vtest.avi</code> and <code>tree.avi</code> as shipped in Debian's <code>opencv-doc</code> package
(OpenCV sample data, examples/data); the vtest.avi sequence appears to come from a
University of Reading research dataset whose terms ask for acknowledgement: we gratefully acknowledge its authors.
<code>mire-2</code>, <code>mbt/cube</code> and <code>cube</code> are image sequences of the ViSP
dataset, Copyright Inria, GPL-2, as shipped in Debian's <code>visp-images-data</code> package.</p>
<p>Generated by vrexctl run.</p></footer>
</body></html>
)",
                    headline, table, footnote, inputs, memory, blocks, reuse_svg, banks_svg, frames);
    const fs::path page = dir / "index.html";
    write_file(page, html);
    return fs::absolute(page).string();
}

}  // namespace vrex::pipeline
