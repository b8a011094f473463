// The report's charts: axis ticks at round values, drawn where those values are.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/svg_plot.hpp"

using namespace vrex::pipeline;

namespace {

std::vector<double> steps(int n) {
    std::vector<double> x;
    for (int i = 0; i < n; i++) x.push_back(i);
    return x;
}

// The x of the axis label whose text is @label, or -1.
double label_x(const std::string& svg, const std::string& label) {
    const std::string tail = "\" text-anchor=\"middle\">" + label + "</text>";
    for (std::size_t at = svg.find(tail); at != std::string::npos; at = svg.find(tail, at + 1)) {
        const std::size_t y = svg.rfind("\" y=\"", at), x = svg.rfind("<text x=\"", at);
        if (x != std::string::npos && y != std::string::npos && y > x)
            return std::stod(svg.substr(x + 9, y - x - 9));
    }
    return -1;
}

}  // namespace

TEST(SvgTicks, RoundValuesAtMostTheLimit) {
    EXPECT_EQ(svg::round_ticks(0, 29, 7, true), (std::vector<double>{0, 5, 10, 15, 20, 25}));
    EXPECT_EQ(svg::round_ticks(0, 3, 7, true), (std::vector<double>{0, 1, 2, 3}));
    EXPECT_EQ(svg::round_ticks(0, 1000, 7, true), (std::vector<double>{0, 200, 400, 600, 800, 1000}));
    EXPECT_EQ(svg::round_ticks(3, 159, 7, true), (std::vector<double>{20, 40, 60, 80, 100, 120, 140}));
    const std::vector<double> f = svg::round_ticks(0, 1, 7, false);
    ASSERT_EQ(f.size(), 6u);
    for (std::size_t i = 0; i < f.size(); i++) EXPECT_NEAR(f[i], 0.2 * static_cast<double>(i), 1e-12);
    EXPECT_EQ(svg::round_ticks(4, 4, 7, true), (std::vector<double>{4}));
}

TEST(SvgTicks, LineChartLabelsSitAtTheirValue) {
    svg::LineChart c{"t", "step", "y", steps(30), {{"s", "#000", std::vector<double>(30, 1.0)}}};
    const std::string o = svg::line_chart(c);
    // 720 wide, 80 left and 20 right margins: step 5 of 0..29 at 80 + 5 / 29 * 620.
    EXPECT_EQ(label_x(o, "0"), 80) << "not \"-0\"";
    EXPECT_EQ(label_x(o, "5"), std::stod(fmt::format("{:.1f}", 80 + 5.0 / 29 * 620)));
    EXPECT_EQ(label_x(o, "25"), std::stod(fmt::format("{:.1f}", 80 + 25.0 / 29 * 620)));
    EXPECT_EQ(label_x(o, "6"), -1) << "no tick at 5.8 labelled 6";
}

TEST(SvgTicks, HeatMapLabelsSitUnderTheirColumn) {
    svg::HeatMap m{"t", "step", "bank", {std::vector<double>(30, 0.5)}, steps(30)};
    const std::string o = svg::heat_map(m);
    // 30 columns of 620 / 30 from x = 80: column 5's middle.
    EXPECT_EQ(label_x(o, "5"), std::stod(fmt::format("{:.1f}", 80 + 5.5 * 620 / 30)));
    EXPECT_EQ(label_x(o, "0"), std::stod(fmt::format("{:.1f}", 80 + 0.5 * 620 / 30)));
    EXPECT_EQ(label_x(o, "11"), -1);
}
