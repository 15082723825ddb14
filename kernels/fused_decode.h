// One decoding query of one head over its cached entries, the fused implementation's inner step
// (fpa::attention_step, kernels/attention_step.cpp):
//   s_j = scale * q . k_j + b_j,   out = sum_j exp(s_j - max_l s_l) v_j / sum_j exp(s_j - max_l s_l)
// k: n rows of d, v: n rows of dv (row-major, contiguous); the biases b_j come from the cache's
// float64 per-key scalars (DecodeBias). float32 runs an AVX2/FMA kernel when the CPU has it and
// d and dv are 8, 16, 32 or 64: one pass over the entries with an online softmax, reading each
// key and value row once (a BLAS matrix-vector call would spend most of its time on set-up for a
// few thousand dot products of 8-64 terms). Otherwise (and always in float64) portable loops,
// two passes through `scratch` (resized to n).
#pragma once

#include <cstdint>
#include <vector>

namespace fpa::fused {

// b_j = (run_min ? run_min[j] : last) - level[j]; 0 for every key when level is null.
// FPA: run_min = m_j, the carried path minimum; FoX: run_min null, last = F_i. Softmax: null.
struct DecodeBias {
  const double* level = nullptr;
  const double* run_min = nullptr;
  double last = 0;
  double at(int64_t j) const { return level ? (run_min ? run_min[j] : last) - level[j] : 0.0; }
};

void decode_head(const float* q, const float* k, const float* v, int64_t n, int64_t d,
                 int64_t dv, float scale, const DecodeBias& bias, std::vector<float>& scratch,
                 float* out);
void decode_head(const double* q, const double* k, const double* v, int64_t n, int64_t d,
                 int64_t dv, double scale, const DecodeBias& bias, std::vector<double>& scratch,
                 double* out);

// Which kernel decode_head(float) uses for (d, dv) on this CPU: "avx2" or "portable".
const char* decode_kernel(int64_t d, int64_t dv);

}  // namespace fpa::fused
