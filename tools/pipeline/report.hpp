// The run report: one self-contained HTML page (plots inline as SVG, frames inline as base64 PNG)
// plus the same plots and frames as files next to it, and summary.json.
#pragma once

#include <string>

#include "comparison.hpp"
#include "metrics.hpp"

namespace vrex::pipeline {

// Writes @dir/index.html, memory.svg, blocks.svg, reuse.svg, banks.svg, frame-*.png and
// summary.json (creating @dir). The summary leads with the same-window comparison of @c (all
// streams, stream 0 alone, device memory held, out-of-group placements, the control without the
// similarity lookup); plots and frames are of the main run. Returns the path of index.html. Throws
// Failure(runtime) on I/O errors.
std::string write_report(const std::string& dir, const Comparison& c);

}  // namespace vrex::pipeline
