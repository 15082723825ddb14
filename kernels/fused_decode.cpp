#include "fused_decode.h"

#include "fused_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

#if defined(__GNUC__) && defined(__x86_64__)
#define FPA_DECODE_AVX2 1
#include <immintrin.h>
#endif

namespace fpa::fused {
namespace {

template <class T>
void decode_head_portable(const T* q, const T* k, const T* v, int64_t n, int64_t d, int64_t dv,
                          T scale, T* s, T* out) {
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

// Eight keys per iteration: eight 8-lane partial dot products, folded into one vector of eight
// scores by a tree of horizontal adds; then the weights; then the values as broadcast-FMAs, U
// keys per iteration into separate accumulators so that the loads are not serialised behind one
// chain of FMAs (a step is limited by reading the cache: keys and values are read once).
// DQ = d / 8 and DV = dv / 8 are compile-time so the query and accumulators live in registers.
template <int DQ>
__attribute__((target("avx2,fma"), always_inline)) inline __m256 partial_dot(const float* kr,
                                                                             const __m256* qv) {
  __m256 acc = _mm256_mul_ps(_mm256_loadu_ps(kr), qv[0]);
  for (int c = 1; c < DQ; ++c)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(kr + 8 * c), qv[c], acc);
  return acc;
}

template <int DQ, int DV>
__attribute__((target("avx2,fma"))) void decode_head_avx2(const float* q, const float* k,
                                                          const float* v, int64_t n, float scale,
                                                          float* s, float* out) {
  constexpr int64_t d = 8 * DQ, dv = 8 * DV;
  __m256 qv[DQ];
  for (int c = 0; c < DQ; ++c) qv[c] = _mm256_loadu_ps(q + 8 * c);
  const __m256 sc = _mm256_set1_ps(scale);
  __m256 mxv = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const float* kr = k + j * d;
    __m256 a[8];
    for (int r = 0; r < 8; ++r) a[r] = partial_dot<DQ>(kr + r * d, qv);
    const __m256 u0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    const __m256 u1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
    const __m256 dots = _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20),
                                      _mm256_permute2f128_ps(u0, u1, 0x31));
    const __m256 sv = _mm256_fmadd_ps(dots, sc, _mm256_loadu_ps(s + j));
    _mm256_storeu_ps(s + j, sv);
    mxv = _mm256_max_ps(mxv, sv);
  }
  float mx = horizontal_max(mxv);
  for (; j < n; ++j) {
    s[j] += scale * horizontal_sum(partial_dot<DQ>(k + j * d, qv));
    mx = std::max(mx, s[j]);
  }

  const __m256 mv = _mm256_set1_ps(mx);
  j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(s + j, _mm256_sub_ps(_mm256_loadu_ps(s + j), mv));
  for (; j < n; ++j) s[j] -= mx;
  exp_inplace(s, n);
  __m256 sumv = _mm256_setzero_ps();
  j = 0;
  for (; j + 8 <= n; j += 8) sumv = _mm256_add_ps(sumv, _mm256_loadu_ps(s + j));
  float sum = horizontal_sum(sumv);
  for (; j < n; ++j) sum += s[j];

  constexpr int U = DV >= 8 ? 1 : 8 / DV > 4 ? 4 : 8 / DV;  // keys per iteration
  __m256 acc[U][DV];
  for (int u = 0; u < U; ++u)
    for (int c = 0; c < DV; ++c) acc[u][c] = _mm256_setzero_ps();
  j = 0;
  for (; j + U <= n; j += U)
    for (int u = 0; u < U; ++u) {
      const __m256 p = _mm256_set1_ps(s[j + u]);
      const float* vr = v + (j + u) * dv;
      for (int c = 0; c < DV; ++c)
        acc[u][c] = _mm256_fmadd_ps(p, _mm256_loadu_ps(vr + 8 * c), acc[u][c]);
    }
  for (; j < n; ++j) {
    const __m256 p = _mm256_set1_ps(s[j]);
    const float* vr = v + j * dv;
    for (int c = 0; c < DV; ++c)
      acc[0][c] = _mm256_fmadd_ps(p, _mm256_loadu_ps(vr + 8 * c), acc[0][c]);
  }
  for (int u = 1; u < U; ++u)
    for (int c = 0; c < DV; ++c) acc[0][c] = _mm256_add_ps(acc[0][c], acc[u][c]);
  const __m256 inv = _mm256_set1_ps(n > 0 ? 1.0f / sum : 0.0f);
  for (int c = 0; c < DV; ++c) _mm256_storeu_ps(out + 8 * c, _mm256_mul_ps(acc[0][c], inv));
}

using DecodeKernel = void (*)(const float*, const float*, const float*, int64_t, float, float*,
                              float*);

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

}  // namespace

const char* decode_kernel(int64_t d, int64_t dv) {
#ifdef FPA_DECODE_AVX2
  if (avx2_kernel(d, dv)) return "avx2";
#endif
  (void)d, (void)dv;
  return "portable";
}

void decode_head(const float* q, const float* k, const float* v, int64_t n, int64_t d,
                 int64_t dv, float scale, float* s, float* out) {
#ifdef FPA_DECODE_AVX2
  if (const auto kernel = avx2_kernel(d, dv)) return kernel(q, k, v, n, scale, s, out);
#endif
  decode_head_portable(q, k, v, n, d, dv, scale, s, out);
}

void decode_head(const double* q, const double* k, const double* v, int64_t n, int64_t d,
                 int64_t dv, double scale, double* s, double* out) {
  decode_head_portable(q, k, v, n, d, dv, scale, s, out);
}

}  // namespace fpa::fused
