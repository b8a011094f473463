// Hand-written SVG charts for the report: self-contained, no plotting library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vrex::pipeline::svg {

struct Series {
    std::string name;
    std::string color;  // CSS colour
    std::vector<double> y;
};

struct LineChart {
    std::string title;
    std::string x_label;
    std::string y_label;
    std::vector<double> x;
    std::vector<Series> series;
    bool log_y = false;
    double y_min = 0.0;  // linear charts: lower bound (upper bound from the data, or y_max if > 0)
    double y_max = 0.0;
};

std::string line_chart(const LineChart& chart);

// Rows x columns of values in [0, 1] (e.g. bank x time occupancy), white -> dark red.
struct HeatMap {
    std::string title;
    std::string x_label;
    std::string y_label;
    std::vector<std::vector<double>> rows;  // rows[r][c]
    std::vector<double> x;                  // column positions (labels)
};

std::string heat_map(const HeatMap& map);

// Round axis ticks in [lo, hi] (steps of 1, 2 or 5 x 10^k; whole numbers only when @whole), at most
// @max_ticks of them.
std::vector<double> round_ticks(double lo, double hi, int max_ticks, bool whole);

// Escapes text for XML/HTML.
std::string escape(const std::string& s);

}  // namespace vrex::pipeline::svg
