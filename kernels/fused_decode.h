// One decoding query of one head over its cached entries, the fused implementation's inner step
// (fpa::attention_step, kernels/attention_step.cpp):
//   s_j = scale * q . k_j + b_j,   out = sum_j exp(s_j - max_l s_l) v_j / sum_j exp(s_j - max_l s_l)
// k: n rows of d, v: n rows of dv (row-major, contiguous); s holds the biases b_j on entry and
// is overwritten (n entries). float32 runs an AVX2/FMA kernel when the CPU has it and d and dv
// are 8, 16, 32 or 64: a cached step is a few thousand dot products of 8-64 terms,
// where a BLAS matrix-vector call spends most of its time on set-up, not on arithmetic.
// Otherwise (and always in float64) portable loops.
#pragma once

#include <cstdint>

namespace fpa::fused {

void decode_head(const float* q, const float* k, const float* v, int64_t n, int64_t d,
                 int64_t dv, float scale, float* s, float* out);
void decode_head(const double* q, const double* k, const double* v, int64_t n, int64_t d,
                 int64_t dv, double scale, double* s, double* out);

// Which kernel decode_head(float) uses for (d, dv) on this CPU: "avx2" or "portable".
const char* decode_kernel(int64_t d, int64_t dv);

}  // namespace fpa::fused
