#include "native_kernels.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace vrex::lcp::native {

namespace {

// 8 floats as one value: GCC/clang lower it to the target's vectors (2 SSE or 1 AVX register on
// x86-64, 2 NEON registers on arm64) where the auto-vectoriser kept a tile's sums in memory.
typedef float V8 __attribute__((vector_size(32)));  // NOLINT(modernize-use-using): GCC attribute syntax

// Loads and stores as statements, not functions taking or returning V8: clang refuses a V8 across
// a call in code built without AVX (its ABI would change), even an inlined one.
#define VREX_LOAD8(dst, p) std::memcpy(&(dst), (p), sizeof(V8))
#define VREX_STORE8(p, src) std::memcpy((p), &(src), sizeof(V8))

constexpr std::size_t kCols = 16;  // output columns of a register tile (2 x 8)
constexpr std::size_t kRows = 4;   // rows of a register tile

// One tile: R rows x 16 columns of y, the 2R accumulators in registers.
template <std::size_t R>
inline __attribute__((always_inline)) void tile(const float* x, std::size_t ldx, const float* w,
                                                std::size_t k, std::size_t n, float* y, std::size_t ldy,
                                                bool accumulate) {
    V8 acc[R][2];
    for (std::size_t r = 0; r < R; r++)
        for (std::size_t h = 0; h < 2; h++) {
            acc[r][h] = V8{};
            if (accumulate) VREX_LOAD8(acc[r][h], y + r * ldy + 8 * h);
        }
    for (std::size_t i = 0; i < k; i++) {
        V8 w0, w1;
        VREX_LOAD8(w0, w + i * n);
        VREX_LOAD8(w1, w + i * n + 8);
        for (std::size_t r = 0; r < R; r++) {
            const float a = x[r * ldx + i];
            acc[r][0] += a * w0;
            acc[r][1] += a * w1;
        }
    }
    for (std::size_t r = 0; r < R; r++)
        for (std::size_t h = 0; h < 2; h++) VREX_STORE8(y + r * ldy + 8 * h, acc[r][h]);
}

// One row (a question's scores or weighted sum): the products over k split four ways, so that eight
// independent sums, not two dependent chains, hide the multiply-add latency.
inline __attribute__((always_inline)) void row_tile(const float* x, const float* w, std::size_t k,
                                                    std::size_t n, float* y, bool accumulate) {
    V8 acc[4][2];
    for (auto& a : acc) a[0] = a[1] = V8{};
    std::size_t i = 0;
    for (; i + 4 <= k; i += 4)
        for (std::size_t u = 0; u < 4; u++) {
            V8 w0, w1;
            VREX_LOAD8(w0, w + (i + u) * n);
            VREX_LOAD8(w1, w + (i + u) * n + 8);
            acc[u][0] += x[i + u] * w0;
            acc[u][1] += x[i + u] * w1;
        }
    for (; i < k; i++) {
        V8 w0, w1;
        VREX_LOAD8(w0, w + i * n);
        VREX_LOAD8(w1, w + i * n + 8);
        acc[0][0] += x[i] * w0;
        acc[0][1] += x[i] * w1;
    }
    for (std::size_t h = 0; h < 2; h++) {
        const V8 sum = (acc[0][h] + acc[1][h]) + (acc[2][h] + acc[3][h]);
        V8 out = sum;
        if (accumulate) {
            VREX_LOAD8(out, y + 8 * h);
            out += sum;
        }
        VREX_STORE8(y + 8 * h, out);
    }
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

VREX_NATIVE_CLONES void matmul(const float* x, std::size_t ldx, std::size_t rows, const float* w,
                               std::size_t k, std::size_t n, float* y, std::size_t ldy, bool accumulate) {
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
                row_tile(x + r * ldx, w + j, k, n, y + r * ldy + j, accumulate);
                break;
            default:
                break;
        }
    }
    if (full < n) tail_columns(x, ldx, rows, w, k, n, full, y, ldy, accumulate);
}

VREX_NATIVE_CLONES float dot(const float* a, const float* b, std::size_t n) {
    V8 acc = {};
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        V8 va, vb;
        VREX_LOAD8(va, a + i);
        VREX_LOAD8(vb, b + i);
        acc += va * vb;
    }
    float s = 0;
    for (; i < n; i++) s += a[i] * b[i];
    for (std::size_t l = 0; l < 8; l++) s += acc[l];
    return s;
}

VREX_NATIVE_CLONES void axpy(float s, const float* x, float* y, std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        V8 vx, vy;
        VREX_LOAD8(vx, x + i);
        VREX_LOAD8(vy, y + i);
        vy += s * vx;
        VREX_STORE8(y + i, vy);
    }
    for (; i < n; i++) y[i] += s * x[i];
}

namespace {

// attend_runs for head_dim = 8 * C: the output's sums stay in registers.
template <std::size_t C>
inline __attribute__((always_inline)) void attend_runs_fixed(const float* qs, std::size_t koff,
                                                             std::size_t voff, const KeyRun* runs,
                                                             std::size_t nruns, float* s, float* out) {
    constexpr std::size_t hd = 8 * C;
    std::size_t j = 0;
    for (std::size_t r = 0; r < nruns; r++) {
        const KeyRun& run = runs[r];
        // The runs are scattered (blocks of several frames, far back in the history): ask for the
        // run two ahead now, its K for the scores and its V for the weighted sum that follows.
        if (r + 2 < nruns) {
            const KeyRun& ahead = runs[r + 2];
            const float* k = ahead.block + koff + std::size_t{ahead.row} * hd;
            const float* v = ahead.block + voff + std::size_t{ahead.row} * hd;
            for (std::size_t off = 0; off < std::size_t{ahead.rows} * hd; off += 16) {
                __builtin_prefetch(k + off);
                __builtin_prefetch(v + off);
            }
        }
        const float* q = qs + std::size_t{run.query} * hd;
        const float* k = run.block + koff + std::size_t{run.row} * hd;
        std::size_t e = 0;
        // Four keys at once: four independent sums (and their lanes' sums) in flight, each query
        // chunk loaded once for the four; each key's sum is dot()'s, chunk after chunk.
        for (; e + 4 <= run.rows; e += 4, j += 4, k += 4 * hd) {
            V8 acc[4] = {};
            for (std::size_t c = 0; c < C; c++) {
                V8 qc;
                VREX_LOAD8(qc, q + 8 * c);
                for (std::size_t u = 0; u < 4; u++) {
                    V8 kv;
                    VREX_LOAD8(kv, k + u * hd + 8 * c);
                    acc[u] += qc * kv;
                }
            }
            for (std::size_t u = 0; u < 4; u++) {
                float d = 0;
                for (std::size_t l = 0; l < 8; l++) d += acc[u][l];
                s[j + u] = d + s[j + u];
            }
        }
        for (; e < run.rows; e++, j++, k += hd) {
            V8 acc = {};
            for (std::size_t c = 0; c < C; c++) {  // dot(): chunk sums in order, then the lanes in order
                V8 qc, kv;
                VREX_LOAD8(qc, q + 8 * c);
                VREX_LOAD8(kv, k + 8 * c);
                acc += qc * kv;
            }
            float d = 0;
            for (std::size_t l = 0; l < 8; l++) d += acc[l];
            s[j] = d + s[j];
        }
    }
    softmax(s, j);
    V8 o[C];
    for (auto& x : o) x = V8{};
    j = 0;
    for (std::size_t r = 0; r < nruns; r++) {  // axpy() into a zeroed row, key after key
        const float* v = runs[r].block + voff + std::size_t{runs[r].row} * hd;
        for (std::size_t e = 0; e < runs[r].rows; e++, j++, v += hd)
            for (std::size_t c = 0; c < C; c++) {
                V8 vv;
                VREX_LOAD8(vv, v + 8 * c);
                o[c] += s[j] * vv;
            }
    }
    for (std::size_t c = 0; c < C; c++) VREX_STORE8(out + 8 * c, o[c]);
}

}  // namespace

VREX_NATIVE_CLONES void attend_runs(const float* qs, std::size_t koff, std::size_t voff, std::size_t hd,
                                    const KeyRun* runs, std::size_t nruns, float* s, float* out) {
    switch (hd) {
        case 16:
            return attend_runs_fixed<2>(qs, koff, voff, runs, nruns, s, out);
        case 32:
            return attend_runs_fixed<4>(qs, koff, voff, runs, nruns, s, out);
        case 64:
            return attend_runs_fixed<8>(qs, koff, voff, runs, nruns, s, out);
        default:
            break;
    }
    std::size_t m = 0;
    for (std::size_t r = 0; r < nruns; r++)
        for (std::size_t e = 0; e < runs[r].rows; e++, m++)
            s[m] = dot(qs + std::size_t{runs[r].query} * hd,
                       runs[r].block + koff + (std::size_t{runs[r].row} + e) * hd, hd) +
                   s[m];
    softmax(s, m);
    std::fill_n(out, hd, 0.0F);
    m = 0;
    for (std::size_t r = 0; r < nruns; r++)
        for (std::size_t e = 0; e < runs[r].rows; e++, m++)
            axpy(s[m], runs[r].block + voff + (std::size_t{runs[r].row} + e) * hd, out, hd);
}

VREX_NATIVE_CLONES void rms_norm(const float* x, std::size_t ldx, std::size_t rows, const float* w,
                                 std::size_t d, float eps, float* y, std::size_t ldy) {
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

VREX_NATIVE_CLONES void softmax(float* s, std::size_t n) {
    const float m = *std::max_element(s, s + n);
    float sum = 0;
    for (std::size_t i = 0; i < n; i++) {
        s[i] = std::exp(s[i] - m);
        sum += s[i];
    }
    const float inv = 1.0F / sum;
    for (std::size_t i = 0; i < n; i++) s[i] *= inv;
}

VREX_NATIVE_CLONES void swiglu(const float* g, std::size_t rows, std::size_t f, float* out) {
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
