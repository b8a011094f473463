#pragma once

// A test frame for the FCC: structure in every 8x8 macroblock of the FCC's working grid (one pixel a
// grid pixel), panned @shift px, so that its motion search finds the shift in every block (a flat
// block would keep the zero vector).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vrex::test {

constexpr std::uint32_t kPanW = 128, kPanH = 96;

inline std::vector<std::uint8_t> panned_texture(std::uint32_t seed, std::uint32_t shift) {
    std::vector<std::uint8_t> px(std::size_t{kPanW} * kPanH);
    for (std::uint32_t y = 0; y < kPanH; y++)
        for (std::uint32_t x = 0; x < kPanW; x++) {
            const std::uint32_t xs = x + shift;
            px[std::size_t{y} * kPanW + x] =
                static_cast<std::uint8_t>((xs / 8 * 37 + y / 8 * 91 + seed * 53) ^ (xs * y * seed));
        }
    return px;
}

}  // namespace vrex::test
