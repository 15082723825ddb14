// What the tests of the tiled CUDA kernels share, on a GPU (test_tiled_cuda) and emulated on the
// CPU (test_tiled_emulated): the kernels' mode for a test mode, and the bfloat16 / float16
// tolerances (about four roundings of the stored type: the inputs, p_ij and g_ij are rounded to
// it; the gate and the accumulators stay in float).
#pragma once

#include "kernels/cuda/tiled_kernels.h"
#include "tile_test_support.h"

namespace fpa::testing {

inline cuda::tiled::Mode tiled_mode_of(Mode m) {
  switch (m) {
    case Mode::Softmax: return cuda::tiled::Mode::Softmax;
    case Mode::Fox: return cuda::tiled::Mode::Fox;
    case Mode::FpaExact: return cuda::tiled::Mode::FpaExact;
    case Mode::FpaSoft: return cuda::tiled::Mode::FpaStraightThrough;
  }
  return cuda::tiled::Mode::Softmax;
}

inline double half_precision_tolerance(cuda::tiled::DType t) {
  return t == cuda::tiled::DType::BFloat16 ? 2e-2 : 4e-3;
}

}  // namespace fpa::testing
