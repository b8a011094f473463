// The arithmetic of vrex::lcp::NativeDecoder: dense kernels over contiguous fp32 rows, written so
// the compiler vectorises them for whatever target the build has (no intrinsics, no -march: the
// arm64 cross build and the Debian package compile the same code). Internal to model/cpp.
#pragma once

#include <cstddef>
#include <cstdint>

// x86-64: the hot kernels are also compiled for x86-64-v3 (AVX2, FMA) and picked at load time by
// the CPU (GCC/clang function multiversioning, an ifunc); the package keeps the baseline build for
// older CPUs and other architectures compile the plain version. The math is the same loops.
// Sanitizer builds keep one version (an ifunc resolver runs before the sanitizer's runtime is up).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define VREX_NATIVE_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define VREX_NATIVE_CLONES
#endif
// x86-64 also has matmul, attend_runs and softmax in 512-bit registers (x86-64-v4), picked per call
// where the CPU has AVX-512 (a CPU check at the first call, no ifunc: sanitizer builds run them too).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define VREX_NATIVE_AVX512 1
#else
#define VREX_NATIVE_AVX512 0
#endif

namespace vrex::lcp::native {

// y[m, :] (=|+=) x[m, :] @ w for m < rows: @x [rows, k] with row stride @ldx, @w [k, n] row-major,
// @y [rows, n] with row stride @ldy. Tiles of 4 rows x 16 columns kept in registers: every weight
// loaded is used for 4 rows, so the cost per multiply-add barely depends on the shape.
void matmul(const float* x, std::size_t ldx, std::size_t rows, const float* w, std::size_t k, std::size_t n,
            float* y, std::size_t ldy, bool accumulate);

// @a . @b over @n values (8 partial sums: vectorised without reassociating the caller's math).
float dot(const float* a, const float* b, std::size_t n);

// y[:] += s * x[:] over @n values.
void axpy(float s, const float* x, float* y, std::size_t n);

// A run of key rows one query reads in place: @rows consecutive rows, from row @row, of a block's
// K and V (the caller names the layer and head by offsets), scored with rotated query @query. The
// keys stay as blocks hold them, before rotation: RoPE's <R(a)q, R(b)k> = <R(a-b)q, k>, so the
// query is rotated to its distance to the run's frame instead (one rotation per frame, not one per
// key, and no rotated copy of the keys).
struct KeyRun {
    const float* block = nullptr;
    std::uint32_t row = 0, rows = 0;
    std::uint32_t query = 0;  // which of the caller's rotated queries
};

// @nq queries' attention over the same runs of key rows read in place (a question's read, a few
// fresh tokens' window): for each query q, scores s[q * m + j] = q . k_j + s[q * m + j] over the
// runs' m rows in order (@s [nq, m] holds the biases on entry), p = softmax, out[q * ldo ..] [hd] =
// sum_j p[j] v_j; @s ends holding p. Run i's K row e is @runs[i].block + @koff + (row + e) * hd, its
// V row the same past @voff, query q's vector @qs + (runs[i].query * nq + q) * hd (per frame, the
// nq queries rotated to it). One call per (head, layer): the queries share every key and value
// they load, the sums stay in registers, where a call per key (dot, axpy) cost more than its
// 2 x hd multiply-adds. The arithmetic of dot() + softmax() + axpy() over the keys, summed in
// another order.
void attend_runs(const float* qs, std::size_t nq, std::size_t koff, std::size_t voff, std::size_t hd,
                 const KeyRun* runs, std::size_t nruns, std::size_t m, float* s, float* out, std::size_t ldo);

// RMSNorm of @rows rows of @x [rows, d] (stride @ldx) by @w [d] -> @y [rows, d] (stride @ldy).
void rms_norm(const float* x, std::size_t ldx, std::size_t rows, const float* w, std::size_t d, float eps,
              float* y, std::size_t ldy);

// decoder.rotate of one head's row @x [2*half] by @cos/@sin [half], in place.
void rotate(float* x, const float* cos, const float* sin, std::size_t half);

// Softmax of @s [n] in place (n >= 1, at least one finite value).
void softmax(float* s, std::size_t n);

// SwiGLU's gate: @g [rows, 2*f] = (w1 | w3) products -> @out [rows, f] = silu(w1) * w3.
void swiglu(const float* g, std::size_t rows, std::size_t f, float* out);

// decoder.rel_bucket of a frame distance.
std::uint32_t rel_bucket(std::int64_t d);

}  // namespace vrex::lcp::native
