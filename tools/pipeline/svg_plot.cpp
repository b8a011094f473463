#include "svg_plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace vrex::pipeline::svg {
namespace {

constexpr double kW = 720, kH = 300, kL = 80, kR = 20, kT = 36, kB = 48;

std::string tick_label(double v) {
    if (v != 0 && (std::fabs(v) >= 1e4 || std::fabs(v) < 1e-2)) return fmt::format("{:.0e}", v);
    if (v == std::floor(v)) return fmt::format("{:.0f}", v);
    return fmt::format("{:.2g}", v);
}

}  // namespace

// Round ticks: every multiple of 1, 2 or 5 times a power of ten in [lo, hi], the finest such spacing
// that gives at most @max_ticks (5 equal parts of 0..29 put "6" at 5.8 and "17" at 17.4).
// @whole: the axis counts things (steps), so no fractional tick.
std::vector<double> round_ticks(double lo, double hi, int max_ticks, bool whole) {
    if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi) || max_ticks < 2) return {lo};
    double mag = std::pow(10.0, std::floor(std::log10((hi - lo) / max_ticks)));
    for (;; mag *= 10)
        for (double m : {1.0, 2.0, 5.0}) {
            const double step = m * mag;
            if (whole && step < 1) continue;
            const double first = std::ceil(lo / step - 1e-9), last = std::floor(hi / step + 1e-9);
            if (last - first + 1 > max_ticks) continue;
            const int n = static_cast<int>(last - first) + 1;
            std::vector<double> t;
            t.reserve(static_cast<std::size_t>(n));
            for (int i = 0; i < n; i++) t.push_back((first + i) * step + 0.0);  // ceil(-1e-9) is -0
            return t;
        }
}

namespace {

std::string frame_open(const std::string& title, const std::string& xl, const std::string& yl) {
    return fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
        "fill=\"white\"/>\n"
        "<text x=\"{2}\" y=\"20\" font-size=\"15\" font-weight=\"bold\">{3}</text>\n"
        "<text x=\"{4}\" y=\"{5}\" text-anchor=\"middle\">{6}</text>\n"
        "<text transform=\"translate(16,{7}) rotate(-90)\" text-anchor=\"middle\">{8}</text>\n",
        kW, kH, kL, escape(title), kL + (kW - kL - kR) / 2, kH - 8, escape(xl), kT + (kH - kT - kB) / 2,
        escape(yl));
}

// White (empty) to red (full): the share @v (0..1) of a bank that live KV occupies.
std::string heat_color(double v) {
    return fmt::format("rgb(255,{},{})", static_cast<int>(255 - 200 * v), static_cast<int>(255 - 235 * v));
}

}  // namespace

std::string escape(const std::string& s) {
    std::string o;
    for (char c : s) {
        switch (c) {
            case '<':
                o += "&lt;";
                break;
            case '>':
                o += "&gt;";
                break;
            case '&':
                o += "&amp;";
                break;
            case '"':
                o += "&quot;";
                break;
            default:
                o += c;
        }
    }
    return o;
}

std::string line_chart(const LineChart& c) {
    double xmin = c.x.empty() ? 0 : c.x.front(), xmax = c.x.empty() ? 1 : c.x.back();
    if (xmax <= xmin) xmax = xmin + 1;
    double ymin = c.y_min, ymax = c.y_max;
    double lo = INFINITY, hi = 0;
    for (const Series& s : c.series)
        for (double v : s.y) {
            if (c.log_y && v <= 0) continue;
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    if (c.log_y) {
        ymin = std::isfinite(lo) ? std::pow(10.0, std::floor(std::log10(lo))) : 1;
        ymax = hi > 0 ? std::pow(10.0, std::ceil(std::log10(hi))) : 10;
        if (ymax <= ymin) ymax = ymin * 10;
    } else if (ymax <= 0) {
        ymax = hi > ymin ? hi * 1.05 : ymin + 1;
    }
    auto X = [&](double x) { return kL + (x - xmin) / (xmax - xmin) * (kW - kL - kR); };
    auto Y = [&](double y) {
        double f = c.log_y ? (std::log10(std::max(y, ymin)) - std::log10(ymin)) /
                                 (std::log10(ymax) - std::log10(ymin))
                           : (y - ymin) / (ymax - ymin);
        return kH - kB - std::clamp(f, 0.0, 1.0) * (kH - kT - kB);
    };
    std::string o = frame_open(c.title, c.x_label, c.y_label);
    // Axes and ticks.
    o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n",
                     kL, kT, kW - kL - kR, kH - kT - kB);
    std::vector<double> yt;
    if (c.log_y) {
        // One tick per decade, counted with an integer (a float loop counter accumulates error).
        for (int decade = 0; ymin * std::pow(10.0, decade) <= ymax * 1.0001; decade++)
            yt.push_back(ymin * std::pow(10.0, decade));
    } else {
        for (int i = 0; i <= 4; i++) yt.push_back(ymin + (ymax - ymin) * i / 4);
    }
    for (double v : yt)
        o += fmt::format(
            "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
            "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
            kL, kW - kR, Y(v), kL - 4, Y(v) + 4, tick_label(v));
    const bool whole = std::all_of(c.x.begin(), c.x.end(), [](double v) { return v == std::floor(v); });
    for (double v : round_ticks(xmin, xmax, 7, whole))
        o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", X(v), kH - kB + 16,
                         tick_label(v));
    // Series (at most ~1000 points each).
    int li = 0;
    for (const Series& s : c.series) {
        const std::size_t n = std::min(s.y.size(), c.x.size());
        const std::size_t stride = std::max<std::size_t>(1, n / 1000);
        std::string pts;
        for (std::size_t i = 0; i < n; i += stride)
            pts += fmt::format("{:.1f},{:.1f} ", X(c.x[i]), Y(s.y[i]));
        o += fmt::format(
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" "
            "points=\"{}\"><title>{}</title></polyline>\n",
            s.color, pts, escape(s.name));
        o += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"4\" fill=\"{}\"/><text x=\"{}\" "
            "y=\"{}\">{}</text>\n",
            kL + 10, kT + 10 + 16 * li, s.color, kL + 26, kT + 15 + 16 * li, escape(s.name));
        li++;
    }
    return o + "</svg>\n";
}

std::string heat_map(const HeatMap& m) {
    std::string o = frame_open(m.title, m.x_label, m.y_label);
    const std::size_t rows = m.rows.size();
    const std::size_t cols = rows ? m.rows[0].size() : 0;
    if (!rows || !cols) return o + "</svg>\n";
    // At most ~300 columns: each cell shows the mean of the steps it covers.
    const std::size_t per = std::max<std::size_t>(1, (cols + 299) / 300);
    const std::size_t ncell = (cols + per - 1) / per;
    const double cw = (kW - kL - kR) / static_cast<double>(ncell);
    const double ch = (kH - kT - kB) / static_cast<double>(rows);
    for (std::size_t r = 0; r < rows; r++) {
        for (std::size_t k = 0; k < ncell; k++) {
            double sum = 0;
            std::size_t n = 0;
            for (std::size_t c = k * per; c < std::min(cols, (k + 1) * per); c++, n++) sum += m.rows[r][c];
            const double v = std::clamp(n ? sum / static_cast<double>(n) : 0.0, 0.0, 1.0);
            o += fmt::format(
                "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\"/>",
                kL + k * cw, kT + r * ch, cw + 0.3, ch + 0.3, heat_color(v));
        }
        o += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kL - 4,
                         kT + (r + 0.7) * ch, r);
    }
    o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n",
                     kL, kT, kW - kL - kR, kH - kT - kB);
    // The colour scale: without it a pale cell could be 5 % or 50 %.
    constexpr int kSteps = 5;
    constexpr double kSw = 18, kLegendX = kW - kR - kSteps * kSw - 40;
    for (int i = 0; i < kSteps; i++)
        o += fmt::format(
            "<rect x=\"{:.1f}\" y=\"10\" width=\"{}\" height=\"12\" fill=\"{}\" stroke=\"#ccc\" "
            "stroke-width=\"0.5\"/>",
            kLegendX + i * kSw, kSw, heat_color((i + 0.5) / kSteps));
    o += fmt::format(
        "\n<text x=\"{:.1f}\" y=\"20\" text-anchor=\"end\">0</text>"
        "<text x=\"{:.1f}\" y=\"20\">100 %</text>\n",
        kLegendX - 4, kLegendX + kSteps * kSw + 4);
    // A tick under the middle of the first column that holds its value (columns are in x order).
    const std::size_t nx = std::min(m.x.size(), cols);
    if (nx) {
        const bool whole =
            std::all_of(m.x.begin(), m.x.begin() + nx, [](double v) { return v == std::floor(v); });
        for (double v : round_ticks(m.x.front(), m.x[nx - 1], 7, whole)) {
            const auto c =
                static_cast<std::size_t>(std::lower_bound(m.x.begin(), m.x.begin() + nx, v) - m.x.begin());
            if (c == nx) continue;
            o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                             kL + (static_cast<double>(c) + 0.5) / static_cast<double>(per) * cw,
                             kH - kB + 16, tick_label(m.x[c]));
        }
    }
    return o + "</svg>\n";
}

}  // namespace vrex::pipeline::svg
