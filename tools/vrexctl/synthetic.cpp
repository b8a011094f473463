#include "synthetic.hpp"

namespace vrexctl {

std::vector<std::uint8_t> synthetic_luma(std::uint32_t width, std::uint32_t height, std::uint32_t t,
                                         std::uint32_t scene) {
    std::vector<std::uint8_t> px(std::size_t{width} * height);
    for (std::uint32_t y = 0; y < height; y++)
        for (std::uint32_t x = 0; x < width; x++) {
            const std::uint32_t u = x + 2 * t, v = y;
            px[std::size_t{y} * width + x] = static_cast<std::uint8_t>(
                ((u / 16 + scene * 5) * (v / 16 + 3 + scene) * 37 + (u ^ v)) & 0xff);
        }
    return px;
}

}  // namespace vrexctl
