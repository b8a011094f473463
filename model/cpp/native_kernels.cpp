#include "native_kernels.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace vrex::lcp::native {

namespace {

constexpr std::size_t kCols = 16;  // output columns of a register tile
constexpr std::size_t kRows = 4;   // rows of a register tile

// One tile: @R rows x @C columns (C <= kCols) of y, the accumulators in a local array the compiler
// keeps in vector registers (fixed trip counts).
template <std::size_t R>
inline void tile(const float* x, std::size_t ldx, const float* w, std::size_t k, std::size_t n, float* y,
                 std::size_t ldy, bool accumulate) {
    float acc[R][kCols];
    for (std::size_t r = 0; r < R; r++)
        for (std::size_t j = 0; j < kCols; j++) acc[r][j] = accumulate ? y[r * ldy + j] : 0.0F;
    for (std::size_t i = 0; i < k; i++) {
        const float* wi = w + i * n;
        for (std::size_t r = 0; r < R; r++) {
            const float a = x[r * ldx + i];
            for (std::size_t j = 0; j < kCols; j++) acc[r][j] += a * wi[j];
        }
    }
    for (std::size_t r = 0; r < R; r++)
        for (std::size_t j = 0; j < kCols; j++) y[r * ldy + j] = acc[r][j];
}

// Columns past the last full tile (none for this model's widths, all multiples of 16).
void tail_columns(const float* x, std::size_t ldx, std::size_t rows, const float* w, std::size_t k,
                  std::size_t n, std::size_t j0, float* y, std::size_t ldy, bool accumulate) {
    for (std::size_t r = 0; r < rows; r++)
        for (std::size_t j = j0; j < n; j++) {
            float s = accumulate ? y[r * ldy + j] : 0.0F;
            for (std::size_t i = 0; i < k; i++) s += x[r * ldx + i] * w[i * n + j];
            y[r * ldy + j] = s;
        }
}

}  // namespace

void matmul(const float* x, std::size_t ldx, std::size_t rows, const float* w, std::size_t k, std::size_t n,
            float* y, std::size_t ldy, bool accumulate) {
    const std::size_t full = n - n % kCols;
    for (std::size_t j = 0; j < full; j += kCols) {
        std::size_t r = 0;
        for (; r + kRows <= rows; r += kRows)
            tile<kRows>(x + r * ldx, ldx, w + j, k, n, y + r * ldy + j, ldy, accumulate);
        switch (rows - r) {
            case 3:
                tile<3>(x + r * ldx, ldx, w + j, k, n, y + r * ldy + j, ldy, accumulate);
                break;
            case 2:
                tile<2>(x + r * ldx, ldx, w + j, k, n, y + r * ldy + j, ldy, accumulate);
                break;
            case 1:
                tile<1>(x + r * ldx, ldx, w + j, k, n, y + r * ldy + j, ldy, accumulate);
                break;
            default:
                break;
        }
    }
    if (full < n) tail_columns(x, ldx, rows, w, k, n, full, y, ldy, accumulate);
}

float dot(const float* a, const float* b, std::size_t n) {
    constexpr std::size_t kLanes = 8;
    float acc[kLanes] = {};
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (std::size_t l = 0; l < kLanes; l++) acc[l] += a[i + l] * b[i + l];
    float s = 0;
    for (; i < n; i++) s += a[i] * b[i];
    for (std::size_t l = 0; l < kLanes; l++) s += acc[l];
    return s;
}

void axpy(float s, const float* x, float* y, std::size_t n) {
    for (std::size_t i = 0; i < n; i++) y[i] += s * x[i];
}

void rms_norm(const float* x, std::size_t ldx, std::size_t rows, const float* w, std::size_t d, float eps,
              float* y, std::size_t ldy) {
    for (std::size_t r = 0; r < rows; r++) {
        const float* xr = x + r * ldx;
        const float ms = dot(xr, xr, d) / static_cast<float>(d);
        const float inv = 1.0F / std::sqrt(ms + eps);
        float* yr = y + r * ldy;
        for (std::size_t i = 0; i < d; i++) yr[i] = xr[i] * inv * w[i];
    }
}

void rotate(float* x, const float* cos, const float* sin, std::size_t half) {
    float* x2 = x + half;
    for (std::size_t i = 0; i < half; i++) {
        const float a = x[i], b = x2[i];
        x[i] = a * cos[i] - b * sin[i];
        x2[i] = a * sin[i] + b * cos[i];
    }
}

void softmax(float* s, std::size_t n) {
    const float m = *std::max_element(s, s + n);
    float sum = 0;
    for (std::size_t i = 0; i < n; i++) {
        s[i] = std::exp(s[i] - m);
        sum += s[i];
    }
    const float inv = 1.0F / sum;
    for (std::size_t i = 0; i < n; i++) s[i] *= inv;
}

void swiglu(const float* g, std::size_t rows, std::size_t f, float* out) {
    for (std::size_t r = 0; r < rows; r++) {
        const float* a = g + r * 2 * f;
        const float* b = a + f;
        float* o = out + r * f;
        for (std::size_t i = 0; i < f; i++) o[i] = a[i] / (1.0F + std::exp(-a[i])) * b[i];
    }
}

std::uint32_t rel_bucket(std::int64_t d) {
    if (d == 0) return 0;
    const std::uint64_t mag = static_cast<std::uint64_t>(d < 0 ? -d : d);
    // floor(log2 |d|) clamped to 7, plus 1: 1 .. 8 after the target, 9 .. 16 before it.
    const auto b = static_cast<std::uint32_t>(std::min<int>(std::bit_width(mag) - 1, 7)) + 1;
    return d > 0 ? b : b + 8;
}

}  // namespace vrex::lcp::native
