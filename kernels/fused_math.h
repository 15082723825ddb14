// Element-wise math of the fused kernels' tiles.
#pragma once

#include <cstdint>

namespace fpa::fused {

// x[i] = exp(x[i]). float: a vectorised Cody-Waite + degree-6 polynomial (relative error about
// 1e-7, like expf; inputs below -87 give about 1e-38 instead of 0, so callers zero masked
// entries themselves). double: std::exp, so float64 results stay within 1e-10 of the reference.
void exp_inplace(float* x, int64_t n);
void exp_inplace(double* x, int64_t n);

}  // namespace fpa::fused
