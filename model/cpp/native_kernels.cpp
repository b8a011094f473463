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

// Loads and stores are std::memcpy statements, not helper functions taking or returning V8: clang
// refuses a V8 across a call in code built without AVX (its ABI would change), even an inlined one.

typedef float V4 __attribute__((vector_size(16)));  // NOLINT(modernize-use-using): half a V8

constexpr std::size_t kRows = 4;  // rows of a register tile

// One tile: R rows x 2 vectors of columns of y (16 with V8, 32 with V16), the 2R accumulators in
// registers. Each output sums over k in order, whatever the vector: both widths give the same bits.
template <typename V, std::size_t R>
inline __attribute__((always_inline)) void tile(const float* x, std::size_t ldx, const float* w,
                                                std::size_t k, std::size_t ldw, float* y, std::size_t ldy,
                                                bool accumulate) {
    constexpr std::size_t L = sizeof(V) / sizeof(float);
    V acc[R][2];
    for (std::size_t r = 0; r < R; r++)
        for (std::size_t h = 0; h < 2; h++) {
            acc[r][h] = V{};
            if (accumulate) std::memcpy(&acc[r][h], y + r * ldy + L * h, sizeof(V));
        }
    for (std::size_t i = 0; i < k; i++) {
        V w0, w1;
        std::memcpy(&w0, w + i * ldw, sizeof(V));
        std::memcpy(&w1, w + i * ldw + L, sizeof(V));
        for (std::size_t r = 0; r < R; r++) {
            const float a = x[r * ldx + i];
            acc[r][0] += a * w0;
            acc[r][1] += a * w1;
        }
    }
    for (std::size_t r = 0; r < R; r++)
        for (std::size_t h = 0; h < 2; h++) std::memcpy(y + r * ldy + L * h, &acc[r][h], sizeof(V));
}

// One row (a question's scores or weighted sum): the products over k split four ways, so that eight
// independent sums, not two dependent chains, hide the multiply-add latency.
template <typename V>
inline __attribute__((always_inline)) void row_tile(const float* x, const float* w, std::size_t k,
                                                    std::size_t ldw, float* y, bool accumulate) {
    constexpr std::size_t L = sizeof(V) / sizeof(float);
    V acc[4][2];
    for (auto& a : acc) a[0] = a[1] = V{};
    std::size_t i = 0;
    for (; i + 4 <= k; i += 4)
        for (std::size_t u = 0; u < 4; u++) {
            V w0, w1;
            std::memcpy(&w0, w + (i + u) * ldw, sizeof(V));
            std::memcpy(&w1, w + (i + u) * ldw + L, sizeof(V));
            acc[u][0] += x[i + u] * w0;
            acc[u][1] += x[i + u] * w1;
        }
    for (; i < k; i++) {
        V w0, w1;
        std::memcpy(&w0, w + i * ldw, sizeof(V));
        std::memcpy(&w1, w + i * ldw + L, sizeof(V));
        acc[0][0] += x[i] * w0;
        acc[0][1] += x[i] * w1;
    }
    for (std::size_t h = 0; h < 2; h++) {
        const V sum = (acc[0][h] + acc[1][h]) + (acc[2][h] + acc[3][h]);
        V out = sum;
        if (accumulate) {
            std::memcpy(&out, y + L * h, sizeof(V));
            out += sum;
        }
        std::memcpy(y + L * h, &out, sizeof(V));
    }
}

// Columns past the last full tile (none for this model's widths, all multiples of 16).
void tail_columns(const float* x, std::size_t ldx, std::size_t rows, const float* w, std::size_t k,
                  std::size_t ldw, std::size_t j0, std::size_t n, float* y, std::size_t ldy,
                  bool accumulate) {
    for (std::size_t r = 0; r < rows; r++)
        for (std::size_t j = j0; j < n; j++) {
            float s = accumulate ? y[r * ldy + j] : 0.0F;
            for (std::size_t i = 0; i < k; i++) s += x[r * ldx + i] * w[i * ldw + j];
            y[r * ldy + j] = s;
        }
}

// Columns [0, full) of y in tiles of 2 V's width, @w's rows @ldw apart; returns full.
template <typename V>
inline __attribute__((always_inline)) std::size_t matmul_tiles(const float* x, std::size_t ldx,
                                                               std::size_t rows, const float* w,
                                                               std::size_t ldw, std::size_t k, std::size_t n,
                                                               float* y, std::size_t ldy, bool accumulate) {
    constexpr std::size_t cols = 2 * sizeof(V) / sizeof(float);
    const std::size_t full = n - n % cols;
    for (std::size_t j = 0; j < full; j += cols) {
        std::size_t r = 0;
        for (; r + kRows <= rows; r += kRows)
            tile<V, kRows>(x + r * ldx, ldx, w + j, k, ldw, y + r * ldy + j, ldy, accumulate);
        switch (rows - r) {
            case 3:
                tile<V, 3>(x + r * ldx, ldx, w + j, k, ldw, y + r * ldy + j, ldy, accumulate);
                break;
            case 2:
                tile<V, 2>(x + r * ldx, ldx, w + j, k, ldw, y + r * ldy + j, ldy, accumulate);
                break;
            case 1:
                row_tile<V>(x + r * ldx, w + j, k, ldw, y + r * ldy + j, accumulate);
                break;
            default:
                break;
        }
    }
    return full;
}

// The 8-float tiles, then the columns past them.
inline __attribute__((always_inline)) void matmul8(const float* x, std::size_t ldx, std::size_t rows,
                                                   const float* w, std::size_t ldw, std::size_t k,
                                                   std::size_t n, float* y, std::size_t ldy,
                                                   bool accumulate) {
    const std::size_t full = matmul_tiles<V8>(x, ldx, rows, w, ldw, k, n, y, ldy, accumulate);
    if (full < n) tail_columns(x, ldx, rows, w, k, ldw, full, n, y, ldy, accumulate);
}

#if VREX_NATIVE_AVX512
typedef float V16 __attribute__((vector_size(64)));  // NOLINT(modernize-use-using): as V8

// x86-64-v4 (AVX-512): tiles of 32 columns in 512-bit registers, then matmul8 for the columns past
// them. On a CPU with 512-bit multiply-add units (AMD Zen 5, where this was measured) a multiply-add
// costs half what it does with AVX2 (microbenchmark at the prefill's shapes: 19.5 -> 10 ps), the same
// bits. target_clones cannot do this: every clone compiles the same body, and a V16 body would spill
// in the baseline clone's 16 SSE registers; so the kernel is its own function, picked per call.
__attribute__((target("arch=x86-64-v4"))) void matmul16(const float* x, std::size_t ldx, std::size_t rows,
                                                        const float* w, std::size_t k, std::size_t n,
                                                        float* y, std::size_t ldy, bool accumulate) {
    const std::size_t full = matmul_tiles<V16>(x, ldx, rows, w, n, k, n, y, ldy, accumulate);
    if (full < n) matmul8(x, ldx, rows, w + full, n, k, n - full, y + full, ldy, accumulate);
}

bool has_avx512() {
    static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                            __builtin_cpu_supports("avx512cd");
    return yes;
}
#endif

// out[l] = e^(in[l] - sub) for V's lanes at once (in and out may alias). Cephes' expf as vector arithmetic:
// x = n ln 2 + r by Cody-Waite (ln 2 in two parts), e^r by its degree-5 minimax polynomial, 2^n put
// in the exponent bits; within 1 ulp of glibc's expf (every 8th fp32 value from -87.3 to 88
// checked). A call per value to expf (libm has no vector form without -ffast-math) was half of a
// prefill: every softmax and SiLU goes through here instead. Below -87.33 (under fp32's normal
// range; a masked key next to the row maximum's 1) the result is 0; above 88 it is e^88
// (softmax's x is <= 0; SiLU's gate is 0 there either way); a NaN gives a NaN, as expf does, so
// that a read of unwritten KV shows in the logits.
template <typename V>
inline __attribute__((always_inline)) void expv(const float* in, float sub, float* out) {
    using I = decltype(V{} < V{});  // the comparison's lanes: 32-bit integers, as many as V's
    V x;
    std::memcpy(&x, in, sizeof(V));
    x -= sub;
    const I under = x < -87.33F;
    x = x > 88.0F ? V{} + 88.0F : x;  // clamped so that a NaN stays one (a comparison with NaN is false)
    x = x < -87.33F ? V{} - 87.33F : x;
    constexpr float kMagic = 12582912.0F;  // 1.5 x 2^23: adding it rounds to an integer in the low bits
    const V t = x * 1.44269504088896341F + kMagic;
    const V nf = t - kMagic;
    const V r = (x - nf * 0.693359375F) - nf * -2.12194440e-4F;
    V p = V{} + 1.9875691500e-4F;
    p = p * r + 1.3981999507e-3F;
    p = p * r + 8.3334519073e-3F;
    p = p * r + 4.1665795894e-2F;
    p = p * r + 1.6666665459e-1F;
    p = p * r + 5.0000001201e-1F;
    V y = p * (r * r) + r + 1.0F;
    I ti, yi;
    std::memcpy(&ti, &t, sizeof ti);
    constexpr std::int32_t kMagicBits = 0x4B400000;  // the bits of kMagic
    const I scale = ((ti - kMagicBits) + 127) << 23;
    V sv;
    std::memcpy(&sv, &scale, sizeof sv);
    y *= sv;
    std::memcpy(&yi, &y, sizeof yi);
    yi &= ~under;
    std::memcpy(out, &yi, sizeof(V));
}

}  // namespace

VREX_NATIVE_CLONES void matmul(const float* x, std::size_t ldx, std::size_t rows, const float* w,
                               std::size_t k, std::size_t n, float* y, std::size_t ldy, bool accumulate) {
#if VREX_NATIVE_AVX512
    if (has_avx512()) return matmul16(x, ldx, rows, w, k, n, y, ldy, accumulate);
#endif
    matmul8(x, ldx, rows, w, n, k, n, y, ldy, accumulate);
}

VREX_NATIVE_CLONES float dot(const float* a, const float* b, std::size_t n) {
    V8 acc = {};
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        V8 va, vb;
        std::memcpy(&va, a + i, sizeof(V8));
        std::memcpy(&vb, b + i, sizeof(V8));
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
        std::memcpy(&vx, x + i, sizeof(V8));
        std::memcpy(&vy, y + i, sizeof(V8));
        vy += s * vx;
        std::memcpy(y + i, &vy, sizeof(V8));
    }
    for (; i < n; i++) y[i] += s * x[i];
}

namespace {

// The 8 sums of @a[0..8) (each vector's lanes), as one vector: three rounds of pairwise adds over
// shuffled halves (7 adds for 8 sums, where a sum a vector took 7).
inline __attribute__((always_inline)) void reduce8(const V8* a, V8* out) {
    V8 b[4], c[2];
    for (std::size_t i = 0; i < 4; i++)
        b[i] = __builtin_shufflevector(a[2 * i], a[2 * i + 1], 0, 8, 2, 10, 4, 12, 6, 14) +
               __builtin_shufflevector(a[2 * i], a[2 * i + 1], 1, 9, 3, 11, 5, 13, 7, 15);
    for (std::size_t i = 0; i < 2; i++)
        c[i] = __builtin_shufflevector(b[2 * i], b[2 * i + 1], 0, 1, 8, 9, 4, 5, 12, 13) +
               __builtin_shufflevector(b[2 * i], b[2 * i + 1], 2, 3, 10, 11, 6, 7, 14, 15);
    *out = __builtin_shufflevector(c[0], c[1], 0, 1, 2, 3, 8, 9, 10, 11) +
           __builtin_shufflevector(c[0], c[1], 4, 5, 6, 7, 12, 13, 14, 15);
}

// @a[0..8)'s lane sums as one V8 (reduce8), for 16-float vectors after adding each one's halves.
template <typename V>
inline __attribute__((always_inline)) void lane_sums8(const V* a, V8* out) {
    if constexpr (sizeof(V) == sizeof(V8)) {
        reduce8(a, out);
    } else {
        V8 h[8];
        for (std::size_t i = 0; i < 8; i++)
            h[i] = __builtin_shufflevector(a[i], a[i], 0, 1, 2, 3, 4, 5, 6, 7) +
                   __builtin_shufflevector(a[i], a[i], 8, 9, 10, 11, 12, 13, 14, 15);
        reduce8(h, out);
    }
}

// attend_runs for head_dim = L * C (L floats a vector V). Scores in tiles of 4 keys x 2 queries:
// each key chunk loaded once for both queries, each query chunk once for the 4 keys, the 8 sums
// reduced together. The weighted sum in tiles of QT queries x the head's C chunks, all in registers:
// each value chunk loaded once for the QT queries.
template <typename V, std::size_t C>
inline __attribute__((always_inline)) void attend_runs_fixed(const float* qs, std::size_t nq,
                                                             std::size_t koff, std::size_t voff,
                                                             const KeyRun* runs, std::size_t nruns,
                                                             std::size_t m, float* s, float* out,
                                                             std::size_t ldo) {
    constexpr std::size_t L = sizeof(V) / sizeof(float), hd = L * C, QT = C <= 4 ? 8 / C : 1;
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
        const float* qg = qs + std::size_t{run.query} * nq * hd;
        const float* k = run.block + koff + std::size_t{run.row} * hd;
        std::size_t e = 0;
        for (; e + 4 <= run.rows; e += 4, j += 4, k += 4 * hd)
            for (std::size_t q = 0; q < nq; q += 2) {
                const bool pair = q + 1 < nq;  // an odd last query: its partner's sums stay 0
                V acc[8] = {};                 // [query w][key u] at 4w + u
                for (std::size_t c = 0; c < C; c++) {
                    V q0, q1 = {};
                    std::memcpy(&q0, qg + q * hd + L * c, sizeof(V));
                    if (pair) std::memcpy(&q1, qg + (q + 1) * hd + L * c, sizeof(V));
                    for (std::size_t u = 0; u < 4; u++) {
                        V kv;
                        std::memcpy(&kv, k + u * hd + L * c, sizeof(V));
                        acc[u] += q0 * kv;
                        acc[4 + u] += q1 * kv;
                    }
                }
                V8 d;
                lane_sums8(acc, &d);  // the first query's 4 scores, then the second's
                const V4 half[2] = {__builtin_shufflevector(d, d, 0, 1, 2, 3),
                                    __builtin_shufflevector(d, d, 4, 5, 6, 7)};
                for (std::size_t w = 0; w < (pair ? 2U : 1U); w++) {
                    float* sw = s + (q + w) * m + j;
                    V4 sv;
                    std::memcpy(&sv, sw, sizeof(V4));
                    sv += half[w];
                    std::memcpy(sw, &sv, sizeof(V4));
                }
            }
        for (; e < run.rows; e++, j++, k += hd)  // a run's last rows (a question's scattered keys)
            for (std::size_t q = 0; q < nq; q++) {
                V acc = {};
                for (std::size_t c = 0; c < C; c++) {
                    V qc, kv;
                    std::memcpy(&qc, qg + q * hd + L * c, sizeof(V));
                    std::memcpy(&kv, k + L * c, sizeof(V));
                    acc += qc * kv;
                }
                float dsum = 0;
                for (std::size_t l = 0; l < L; l++) dsum += acc[l];
                s[q * m + j] += dsum;
            }
    }
    for (std::size_t q = 0; q < nq; q++) softmax(s + q * m, m);
    for (std::size_t q0 = 0; q0 < nq; q0 += QT) {
        const std::size_t w = std::min(QT, nq - q0);
        V o[QT][C] = {};
        j = 0;
        for (std::size_t r = 0; r < nruns; r++) {
            const float* v = runs[r].block + voff + std::size_t{runs[r].row} * hd;
            for (std::size_t e = 0; e < runs[r].rows; e++, j++, v += hd) {
                float p[QT];
                for (std::size_t u = 0; u < QT; u++) p[u] = u < w ? s[(q0 + u) * m + j] : 0.0F;
                for (std::size_t c = 0; c < C; c++) {
                    V vv;
                    std::memcpy(&vv, v + L * c, sizeof(V));
                    for (std::size_t u = 0; u < QT; u++) o[u][c] += p[u] * vv;
                }
            }
        }
        for (std::size_t u = 0; u < w; u++)
            for (std::size_t c = 0; c < C; c++)
                std::memcpy(out + (q0 + u) * ldo + L * c, &o[u][c], sizeof(V));
    }
}

#if VREX_NATIVE_AVX512
// attend_runs in 512-bit registers (x86-64-v4), for the head sizes it has tiles for.
__attribute__((target("arch=x86-64-v4"))) void attend_runs16(const float* qs, std::size_t nq,
                                                             std::size_t koff, std::size_t voff,
                                                             std::size_t hd, const KeyRun* runs,
                                                             std::size_t nruns, std::size_t m, float* s,
                                                             float* out, std::size_t ldo) {
    if (hd == 32) return attend_runs_fixed<V16, 2>(qs, nq, koff, voff, runs, nruns, m, s, out, ldo);
    attend_runs_fixed<V16, 4>(qs, nq, koff, voff, runs, nruns, m, s, out, ldo);
}
#endif

}  // namespace

VREX_NATIVE_CLONES void attend_runs(const float* qs, std::size_t nq, std::size_t koff, std::size_t voff,
                                    std::size_t hd, const KeyRun* runs, std::size_t nruns, std::size_t m,
                                    float* s, float* out, std::size_t ldo) {
#if VREX_NATIVE_AVX512
    if ((hd == 32 || hd == 64) && has_avx512())
        return attend_runs16(qs, nq, koff, voff, hd, runs, nruns, m, s, out, ldo);
#endif
    switch (hd) {
        case 16:
            return attend_runs_fixed<V8, 2>(qs, nq, koff, voff, runs, nruns, m, s, out, ldo);
        case 32:
            return attend_runs_fixed<V8, 4>(qs, nq, koff, voff, runs, nruns, m, s, out, ldo);
        case 64:
            return attend_runs_fixed<V8, 8>(qs, nq, koff, voff, runs, nruns, m, s, out, ldo);
        default:
            break;
    }
    for (std::size_t q = 0; q < nq; q++) {
        float* sq = s + q * m;
        std::size_t j = 0;
        for (std::size_t r = 0; r < nruns; r++)
            for (std::size_t e = 0; e < runs[r].rows; e++, j++)
                sq[j] += dot(qs + (std::size_t{runs[r].query} * nq + q) * hd,
                             runs[r].block + koff + (std::size_t{runs[r].row} + e) * hd, hd);
        softmax(sq, m);
        float* oq = out + q * ldo;
        std::fill_n(oq, hd, 0.0F);
        j = 0;
        for (std::size_t r = 0; r < nruns; r++)
            for (std::size_t e = 0; e < runs[r].rows; e++, j++)
                axpy(sq[j], runs[r].block + voff + (std::size_t{runs[r].row} + e) * hd, oq, hd);
    }
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

namespace {

// softmax in V's lanes: the maximum and the sum lane-wise, e^x from expv.
template <typename V>
inline __attribute__((always_inline)) void softmax_lanes(float* s, std::size_t n) {
    constexpr std::size_t L = sizeof(V) / sizeof(float);
    const std::size_t full = n - n % L;
    V mv = V{} - INFINITY;
    for (std::size_t i = 0; i < full; i += L) {
        V x;
        std::memcpy(&x, s + i, sizeof(V));
        mv = x > mv ? x : mv;
    }
    float m = -INFINITY;
    for (std::size_t l = 0; l < L; l++) m = std::max(m, mv[l]);
    for (std::size_t i = full; i < n; i++) m = std::max(m, s[i]);
    V acc = {};
    for (std::size_t i = 0; i < full; i += L) {
        expv<V>(s + i, m, s + i);
        V y;
        std::memcpy(&y, s + i, sizeof(V));
        acc += y;
    }
    if (full < n) {  // the tail padded with -inf: e^-inf adds 0
        float tail[L];
        std::fill_n(tail, L, -INFINITY);
        std::copy(s + full, s + n, tail);
        expv<V>(tail, m, tail);
        std::copy(tail, tail + (n - full), s + full);
        V y;
        std::memcpy(&y, tail, sizeof(V));
        acc += y;
    }
    float sum = 0;
    for (std::size_t l = 0; l < L; l++) sum += acc[l];
    const float inv = 1.0F / sum;
    for (std::size_t i = 0; i < n; i++) s[i] *= inv;
}

#if VREX_NATIVE_AVX512
__attribute__((target("arch=x86-64-v4"))) void softmax16(float* s, std::size_t n) {
    softmax_lanes<V16>(s, n);
}
#endif

}  // namespace

VREX_NATIVE_CLONES void softmax(float* s, std::size_t n) {
#if VREX_NATIVE_AVX512
    if (has_avx512()) return softmax16(s, n);
#endif
    softmax_lanes<V8>(s, n);
}

VREX_NATIVE_CLONES void swiglu(const float* g, std::size_t rows, std::size_t f, float* out) {
    float neg[8], e[8];
    for (std::size_t r = 0; r < rows; r++) {
        const float* a = g + r * 2 * f;
        const float* b = a + f;
        float* o = out + r * f;
        for (std::size_t i = 0; i < f; i += 8) {  // silu(a) * b = a / (1 + e^-a) * b
            const std::size_t m = std::min<std::size_t>(8, f - i);
            std::fill_n(neg, 8, 0.0F);
            for (std::size_t l = 0; l < m; l++) neg[l] = -a[i + l];
            expv<V8>(neg, 0.0F, e);
            for (std::size_t l = 0; l < m; l++) o[i + l] = a[i + l] / (1.0F + e[l]) * b[i + l];
        }
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
