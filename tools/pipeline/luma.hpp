// Luma planes and the 4x4 region grid the SHIE indexes: the pipeline's "working luma" is the decoded
// Y plane at the video's own size; regions and their PSNR are computed on it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vrex/hal.hpp"

namespace vrex::pipeline {

inline constexpr std::uint32_t kGrid = 4;
inline constexpr std::uint32_t kRegions = kGrid * kGrid;

struct LumaFrame {
    std::uint32_t width = 0;
    std::uint32_t height = 0;
    std::vector<std::uint8_t> px;  // width * height bytes, packed

    LumaView view() const { return LumaView{px.data(), width, height, width}; }
};

struct RegionRect {
    std::uint32_t x = 0, y = 0, w = 0, h = 0;
};

// Region @r (row-major over the 4x4 grid) of a width x height plane; the last row and column absorb
// the remainder so the regions tile the plane exactly.
RegionRect region_rect(std::uint32_t width, std::uint32_t height, std::uint32_t r);

// PSNR in dB between two 8-bit planes of w x h pixels; identical planes give kPsnrIdentical.
inline constexpr double kPsnrIdentical = 99.0;
double psnr(const std::uint8_t* a, std::size_t a_stride, const std::uint8_t* b, std::size_t b_stride,
            std::uint32_t w, std::uint32_t h, std::uint32_t step = 1);

}  // namespace vrex::pipeline
