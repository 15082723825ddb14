// Element-wise math of the fused kernels' tiles.
#pragma once

#include <algorithm>
#include <cstdint>

namespace fpa::fused {

// x[i] = exp(x[i]). float: a vectorised Cody-Waite + degree-6 polynomial (relative error about
// 1e-7, like expf; inputs below -64 give exactly 0, see fused_math.cpp; callers still zero
// masked entries themselves). double: std::exp, so float64 results stay within 1e-10 of the reference.
void exp_inplace(float* x, int64_t n);
void exp_inplace(double* x, int64_t n);

// The largest of init, x[0], ..., x[n-1], as the loop m = std::max(m, x[c]) gives it, bit for bit.
// Eight running maxima instead of that loop's one chain of dependent comparisons, which held up
// each row of the forward (two thirds of its time in the C6 passkey training). A maximum is
// exact and the loop ignores NaNs either way, so the grouping can change only which of +0 and -0
// comes out: a zero result is taken again by the loop itself.
template <class T>
T max_of(const T* x, int64_t n, T init) {
  constexpr int64_t kLanes = 8;
  T m[kLanes];
  std::fill(m, m + kLanes, init);
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) m[l] = std::max(m[l], x[c + l]);
  for (; c < n; ++c) m[0] = std::max(m[0], x[c]);
  for (int64_t l = 1; l < kLanes; ++l) m[0] = std::max(m[0], m[l]);
  if (m[0] != T(0)) return m[0];
  T seq = init;
  for (c = 0; c < n; ++c) seq = std::max(seq, x[c]);
  return seq;
}

}  // namespace fpa::fused
