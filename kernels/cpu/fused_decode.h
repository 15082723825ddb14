// One decoding query of one head over its cached entries, the fused implementation's inner step
// (fpa::attention_step, kernels/cpu/attention_step.cpp):
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

// FPA's carried path minima m_j = min_{j<=l<=i} phi_l as runs of equal values: entries `first`
// up to the next run's first share `value`. m_j is non-decreasing in j, so the runs' values
// increase, and appending phi_t merges the runs at or above it into one (kernels/cpu/kv_cache.h)
// instead of updating every key.
struct MinRun {
  int64_t first;
  double value;
};

// Reads the runs for ascending j in O(1) amortised (the kernels' order).
struct MinRunReader {
  const MinRun* runs;
  int64_t n_runs;
  int64_t r = 0;
  double at(int64_t j) {
    while (r + 1 < n_runs && runs[r + 1].first <= j) ++r;
    return runs[r].value;
  }
  // The first entry past the run that at() last read.
  int64_t run_end() const { return r + 1 < n_runs ? runs[r + 1].first : INT64_MAX; }
};

// b_j = m_j - level[j] (FPA: runs given) or last - level[j] (FoX: F_i - F_j); 0 for every key
// when level is null (softmax). FPA: m_j = dense[j] for j < dense_end (values written at the
// last eviction that no append has lowered since: a cache whose policy keeps scattered keys has
// about one run per key, and a per-key array reads faster than runs that change every lane),
// the runs for the rest. Below dense_end b_j no longer changes, so a float32 cache also keeps
// dense_bias[j] = float(dense[j] - level[j]), the value the float kernel would compute: 4 bytes
// per key to read instead of 16 (an evicting policy's cache is mostly this region).
struct DecodeBias {
  const double* level = nullptr;
  const MinRun* runs = nullptr;
  int64_t n_runs = 0;
  const double* dense = nullptr;
  const float* dense_bias = nullptr;  // float32 caches (the float kernel reads it)
  int64_t dense_end = 0;
  double last = 0;
  double at(int64_t j) const;  // random access (a binary search over the runs)
  // The same for ascending j >= dense_end through a reader() (O(1) amortised).
  MinRunReader reader() const;
  double at(int64_t j, MinRunReader& mins) const {
    if (!level) return 0.0;
    if (!runs) return last - level[j];
    return min_at(j, mins) - level[j];
  }
  double min_at(int64_t j, MinRunReader& mins) const {  // FPA's m_j, ascending j
    return j < dense_end ? dense[j] : mins.at(j);
  }
};

void decode_head(const float* q, const float* k, const float* v, int64_t n, int64_t d,
                 int64_t dv, float scale, const DecodeBias& bias, std::vector<float>& scratch,
                 float* out);
void decode_head(const double* q, const double* k, const double* v, int64_t n, int64_t d,
                 int64_t dv, double scale, const DecodeBias& bias, std::vector<double>& scratch,
                 double* out);

}  // namespace fpa::fused
