#include "kernels/cpu/fused_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>

// Compiled with -fno-trapping-math (see CMakeLists.txt) so the clamps if-convert and the loop
// vectorises; on x86-64 Linux with GCC an AVX2 clone is picked at load time when available.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define FPA_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FPA_VECTOR_CLONES
#endif

namespace fpa::fused {

// Arguments below kExpCutoff give exactly 0. The dropped terms (< 1.6e-28 of a row's largest
// weight) are far below float32's resolution of any row sum; keeping them made the products
// downstream (dS = P * (dP - delta), the backward GEMMs) subnormal, and on some x86 CPUs every
// subnormal operand costs ~100 cycles: FoX fwd_bwd at n = 2048, whose far keys all sit at the
// old clamp exp(-87), ran 10x slower than softmax on one machine.
constexpr float kExpCutoff = -64.0f;

FPA_VECTOR_CLONES
void exp_inplace(float* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float in = x[i];
    const float v = std::min(std::max(in, -87.0f), 88.0f);
    // exp(v) = 2^k exp(r), k = round(v / ln 2), r = v - k ln 2 split in two parts (Cody-Waite).
    const float t = v * 1.44269504088896341f;
    const float kf = (t + 12582912.0f) - 12582912.0f;  // round to nearest (1.5 * 2^23 trick)
    const float r = (v - kf * 0.693359375f) + kf * 2.12194440e-4f;
    float p = 1.9875691500e-4f;  // Cephes expf polynomial
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const int32_t bits = (int32_t(kf) + 127) << 23;  // 2^k
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    x[i] = in < kExpCutoff ? 0.0f : p * scale;  // NaN stays NaN, -inf gives 0
  }
}

void exp_inplace(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
}

}  // namespace fpa::fused
