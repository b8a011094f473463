#include "luma.hpp"

#include <cmath>

namespace vrex::pipeline {

RegionRect region_rect(std::uint32_t width, std::uint32_t height, std::uint32_t r) {
    const std::uint32_t cw = width / kGrid, ch = height / kGrid;
    const std::uint32_t col = r % kGrid, row = r / kGrid;
    RegionRect rc;
    rc.x = col * cw;
    rc.y = row * ch;
    rc.w = col == kGrid - 1 ? width - rc.x : cw;
    rc.h = row == kGrid - 1 ? height - rc.y : ch;
    return rc;
}

double psnr(const std::uint8_t* a, std::size_t a_stride, const std::uint8_t* b, std::size_t b_stride,
            std::uint32_t w, std::uint32_t h, std::uint32_t step) {
    // @a is sampled every @step pixels (a subsampled copy in @b has one pixel per sample).
    std::uint64_t sse = 0, n = 0;
    for (std::uint32_t y = 0, by = 0; y < h; y += step, by++) {
        const std::uint8_t* ra = a + std::size_t{y} * a_stride;
        const std::uint8_t* rb = b + std::size_t{by} * b_stride;
        for (std::uint32_t x = 0, bx = 0; x < w; x += step, bx++) {
            const int d = int{ra[x]} - int{rb[bx]};
            sse += static_cast<std::uint64_t>(d * d);
            n++;
        }
    }
    if (n == 0 || sse == 0) return kPsnrIdentical;
    const double mse = static_cast<double>(sse) / static_cast<double>(n);
    return std::min(kPsnrIdentical, 10.0 * std::log10(255.0 * 255.0 / mse));
}

}  // namespace vrex::pipeline
