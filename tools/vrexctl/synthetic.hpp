// Synthetic luma frames for selftest and bench (no video needed): a textured scene that pans.
#pragma once

#include <cstdint>
#include <vector>

namespace vrexctl {

std::vector<std::uint8_t> synthetic_luma(std::uint32_t width, std::uint32_t height, std::uint32_t t,
                                         std::uint32_t scene = 0);

}  // namespace vrexctl
