// Element-wise math of the fused kernels' tiles.
#pragma once

#include <cstdint>

namespace fpa::fused {

// x[i] = exp(x[i]). float: a vectorised Cody-Waite + degree-6 polynomial (relative error about
// 1e-7, like expf; inputs below -64 give exactly 0, see fused_math.cpp; callers still zero
// masked entries themselves). double: std::exp, so float64 results stay within 1e-10 of the reference.
void exp_inplace(float* x, int64_t n);
void exp_inplace(double* x, int64_t n);

}  // namespace fpa::fused
