#include "kernels/cpu/fused_decode.h"

#include "kernels/cpu/fused_math.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#if defined(__GNUC__) && defined(__x86_64__)
#define FPA_DECODE_AVX2 1
#include <immintrin.h>
#endif

namespace fpa::fused {
namespace {

template <class T>
void decode_head_portable(const T* q, const T* k, const T* v, int64_t n, int64_t d, int64_t dv,
                          T scale, const DecodeBias& bias, T* s, T* out) {
  auto mins = bias.reader();
  for (int64_t j = 0; j < n; ++j) s[j] = T(bias.at(j, mins));
  T mx = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < n; ++j) {
    T dot = 0;
    for (int64_t c = 0; c < d; ++c) dot += k[j * d + c] * q[c];
    s[j] += scale * dot;
    mx = std::max(mx, s[j]);
  }
  for (int64_t j = 0; j < n; ++j) s[j] -= mx;
  exp_inplace(s, n);
  T sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += s[j];
  for (int64_t c = 0; c < dv; ++c) out[c] = 0;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t c = 0; c < dv; ++c) out[c] += s[j] * v[j * dv + c];
  const T inv = n > 0 ? T(1) / sum : T(0);
  for (int64_t c = 0; c < dv; ++c) out[c] *= inv;
}

#ifdef FPA_DECODE_AVX2
bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

__attribute__((target("avx2,fma"), always_inline)) inline float horizontal_sum(__m256 x) {
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  const __m128 p = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(p, _mm_shuffle_ps(p, p, 1)));
}

__attribute__((target("avx2,fma"), always_inline)) inline float horizontal_max(__m256 x) {
  const __m128 h = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  const __m128 p = _mm_max_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_max_ss(p, _mm_shuffle_ps(p, p, 1)));
}

// 2^k * exp(r) for eight lanes: the Cody-Waite reduction and Cephes polynomial of
// fused_math.cpp's exp_inplace (relative error about 1e-7); lanes below -64 give exactly 0.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 exp8(__m256 x) {
  const __m256 v = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 kf = _mm256_round_ps(_mm256_mul_ps(v, _mm256_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 r = _mm256_fmadd_ps(kf, _mm256_set1_ps(2.12194440e-4f),
                                   _mm256_fnmadd_ps(kf, _mm256_set1_ps(0.693359375f), v));
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i bits = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(kf), _mm256_set1_epi32(127)), 23);
  const __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  // 0 below the cutoff (and for -inf); a NaN input stays NaN (all bits set), as in exp_inplace.
  const __m256 kept = _mm256_and_ps(e, _mm256_cmp_ps(x, _mm256_set1_ps(-64.0f), _CMP_NLT_UQ));
  return _mm256_or_ps(kept, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

// The biases of keys j .. j+7 as floats: m_j - level (FPA: dense_bias where valid, else through
// `mins`), last - level (FoX), or 0.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 bias8(const DecodeBias& b,
                                                                        MinRunReader& mins,
                                                                        int64_t j) {
  if (!b.level) return _mm256_setzero_ps();
  if (b.runs && j + 8 <= b.dense_end) return _mm256_loadu_ps(b.dense_bias + j);  // b_j as written
  const __m256d l0 = _mm256_loadu_pd(b.level + j), l1 = _mm256_loadu_pd(b.level + j + 4);
  __m256d a0, a1;
  if (b.runs) {
    const double m = j >= b.dense_end ? mins.at(j) : 0.0;
    if (j >= b.dense_end && mins.run_end() >= j + 8) {  // the block lies in one run
      a0 = a1 = _mm256_set1_pd(m);
    } else {  // lane by lane: the array's end or run boundaries inside the block
      alignas(32) double ms[8];
      for (int r = 0; r < 8; ++r) ms[r] = b.min_at(j + r, mins);
      a0 = _mm256_load_pd(ms);
      a1 = _mm256_load_pd(ms + 4);
    }
  } else {
    a0 = a1 = _mm256_set1_pd(b.last);
  }
  const __m128 lo = _mm256_cvtpd_ps(_mm256_sub_pd(a0, l0)), hi = _mm256_cvtpd_ps(_mm256_sub_pd(a1, l1));
  return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
}

template <int DQ>
__attribute__((target("avx2,fma"), always_inline)) inline __m256 partial_dot(const float* kr,
                                                                             const __m256* qv) {
  __m256 acc = _mm256_mul_ps(_mm256_loadu_ps(kr), qv[0]);
  for (int c = 1; c < DQ; ++c)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(kr + 8 * c), qv[c], acc);
  return acc;
}

// The running state of an online softmax over one head's entries: the unnormalised output,
// the lane sums of the weights and the largest logit so far.
// U sets of accumulators take the value rows in turn, so that narrow heads do not wait on one
// chain of dependent FMAs.
template <int DV>
struct OnlineSoftmax {
  static constexpr int U = DV >= 4 ? 1 : 4 / DV;
  __m256 acc[U][DV];
  __m256 sum;
  float max;
};

// Folds a block of eight logits into the state: lanes >= `live` must hold -inf; vb points at the
// block's first value row.
template <int DV>
__attribute__((target("avx2,fma"), always_inline)) inline void fold_block(OnlineSoftmax<DV>& st,
                                                                          __m256 sv,
                                                                          const float* vb,
                                                                          int live) {
  constexpr int64_t dv = 8 * DV;
  const float bm = horizontal_max(sv);
  if (bm > st.max) {  // a new maximum: rescale what has been accumulated so far
    const __m256 f = exp8(_mm256_set1_ps(st.max - bm));
    for (int u = 0; u < st.U; ++u)
      for (int c = 0; c < DV; ++c) st.acc[u][c] = _mm256_mul_ps(st.acc[u][c], f);
    st.sum = _mm256_mul_ps(st.sum, f);
    st.max = bm;
  }
  const __m256 pv = exp8(_mm256_sub_ps(sv, _mm256_set1_ps(st.max)));
  st.sum = _mm256_add_ps(st.sum, pv);
  // Each weight broadcast from the register (a store and eight reloads would wait on
  // store-to-load forwarding).
  for (int r = 0; r < live; ++r) {
    const __m256 pr = _mm256_permutevar8x32_ps(pv, _mm256_set1_epi32(r));
    for (int c = 0; c < DV; ++c)
      st.acc[r % st.U][c] =
          _mm256_fmadd_ps(pr, _mm256_loadu_ps(vb + r * dv + 8 * c), st.acc[r % st.U][c]);
  }
}

// One pass over the entries, eight keys per block (an online softmax): the block's eight logits
// (eight 8-lane partial dot products folded by a tree of horizontal adds, plus the biases read
// from the cache's float64 scalars), the running maximum (the accumulators are rescaled on the
// rare block that raises it), the block's weights (exp8) and its values as broadcast-FMAs. Each
// key and value row is read once and nothing is written per key. The last n % 8 keys go through
// the same update with -inf logits in the unused lanes. DQ = d / 8 and DV = dv / 8 are
// compile-time so the query and the accumulators live in registers.
template <int DQ, int DV>
__attribute__((target("avx2,fma"))) void decode_head_avx2(const float* q, const float* k,
                                                          const float* v, int64_t n, float scale,
                                                          const DecodeBias& bias, float* out) {
  constexpr int64_t d = 8 * DQ, dv = 8 * DV;
  __m256 qv[DQ];
  for (int c = 0; c < DQ; ++c)
    qv[c] = _mm256_mul_ps(_mm256_loadu_ps(q + 8 * c), _mm256_set1_ps(scale));
  OnlineSoftmax<DV> st;
  for (int u = 0; u < st.U; ++u)
    for (int c = 0; c < DV; ++c) st.acc[u][c] = _mm256_setzero_ps();
  st.sum = _mm256_setzero_ps();
  // The running maximum starts at the newest key's logit: with a bias that grows towards the
  // query (FoX, FPA's falling fields) it is the largest or near it, so the accumulators are
  // seldom rescaled (from -inf, a rising maximum rescales them at almost every block).
  st.max = n > 0 ? horizontal_sum(partial_dot<DQ>(k + (n - 1) * d, qv)) + float(bias.at(n - 1))
                 : -std::numeric_limits<float>::infinity();

  auto mins = bias.reader();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const float* kr = k + j * d;
    __m256 a[8];
    for (int r = 0; r < 8; ++r) a[r] = partial_dot<DQ>(kr + r * d, qv);
    const __m256 u0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    const __m256 u1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
    const __m256 dots = _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20),
                                      _mm256_permute2f128_ps(u0, u1, 0x31));
    fold_block(st, _mm256_add_ps(dots, bias8(bias, mins, j)), v + j * dv, 8);
  }
  if (j < n) {
    const int live = int(n - j);
    alignas(32) float t[8];
    for (int r = 0; r < 8; ++r)
      t[r] = r < live ? horizontal_sum(partial_dot<DQ>(k + (j + r) * d, qv)) + float(bias.at(j + r, mins))
                      : -std::numeric_limits<float>::infinity();
    fold_block(st, _mm256_load_ps(t), v + j * dv, live);
  }
  const float sum = horizontal_sum(st.sum);
  const __m256 inv = _mm256_set1_ps(n > 0 ? 1.0f / sum : 0.0f);
  for (int c = 0; c < DV; ++c) {
    __m256 a = st.acc[0][c];
    for (int u = 1; u < st.U; ++u) a = _mm256_add_ps(a, st.acc[u][c]);
    _mm256_storeu_ps(out + 8 * c, _mm256_mul_ps(a, inv));
  }
}

using DecodeKernel = void (*)(const float*, const float*, const float*, int64_t, float,
                              const DecodeBias&, float*);

// The kernel for head width 8 * dq and value width 8 * dv: both in {1, 2, 4, 8} vectors.
template <int DQ>
DecodeKernel kernel_for_values(int64_t dv) {
  switch (dv) {
    case 1: return decode_head_avx2<DQ, 1>;
    case 2: return decode_head_avx2<DQ, 2>;
    case 4: return decode_head_avx2<DQ, 4>;
    case 8: return decode_head_avx2<DQ, 8>;
  }
  return nullptr;
}
DecodeKernel avx2_kernel(int64_t d, int64_t dv) {
  if (d % 8 != 0 || dv % 8 != 0 || !cpu_has_avx2_fma()) return nullptr;
  switch (d / 8) {
    case 1: return kernel_for_values<1>(dv / 8);
    case 2: return kernel_for_values<2>(dv / 8);
    case 4: return kernel_for_values<4>(dv / 8);
    case 8: return kernel_for_values<8>(dv / 8);
  }
  return nullptr;
}
#endif

// The run holding entry j (runs[0].first is 0).
int64_t run_of(const MinRun* runs, int64_t n_runs, int64_t j) {
  return std::upper_bound(runs, runs + n_runs, j,
                          [](int64_t e, const MinRun& r) { return e < r.first; }) - runs - 1;
}
}  // namespace

double DecodeBias::at(int64_t j) const {
  if (!level) return 0.0;
  if (!runs) return last - level[j];
  if (j < dense_end) return dense[j] - level[j];
  return runs[run_of(runs, n_runs, j)].value - level[j];
}

MinRunReader DecodeBias::reader() const {
  MinRunReader r{runs, n_runs};
  if (runs && n_runs > 0 && dense_end > 0) r.r = std::max<int64_t>(0, run_of(runs, n_runs, dense_end));
  return r;
}

void decode_head(const float* q, const float* k, const float* v, int64_t n, int64_t d,
                 int64_t dv, float scale, const DecodeBias& bias, std::vector<float>& scratch,
                 float* out) {
#ifdef FPA_DECODE_AVX2
  if (const auto kernel = avx2_kernel(d, dv)) return kernel(q, k, v, n, scale, bias, out);
#endif
  scratch.resize(size_t(n));
  decode_head_portable(q, k, v, n, d, dv, scale, bias, scratch.data(), out);
}

void decode_head(const double* q, const double* k, const double* v, int64_t n, int64_t d,
                 int64_t dv, double scale, const DecodeBias& bias, std::vector<double>& scratch,
                 double* out) {
  scratch.resize(size_t(n));
  decode_head_portable(q, k, v, n, d, dv, scale, bias, scratch.data(), out);
}

}  // namespace fpa::fused
