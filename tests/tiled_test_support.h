// What the tests of the tiled CUDA kernels share, on a GPU (test_tiled_cuda) and emulated on the
// CPU (test_tiled_emulated): the kernels' mode for a test mode, and the bfloat16 / float16
// tolerances (about four roundings of the stored type: the inputs, p_ij and g_ij are rounded to
// it; the gate and the accumulators stay in float) and float32 on TF32 tensor cores' (below).
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

// float32 inputs on TF32 tensor cores (the GPU's default for float32): q, k, v, dO rounded to
// TF32's 10-bit mantissa (relative 2^-11 ~ 4.9e-4) in the products, and p_ij, g_ij rounded too
// before the second products; everything else fp32. Compared with the float64 reference on the
// float32 inputs (exact fp32 products: tile_tolerance, 2e-5). Worst seen in
// test_tiled_emulated (emulated TF32, n up to 200, D up to 128, fields with ties, plateaus, steep
// walks, FPA offsets 1e3 and 1e4): out 6.8e-4, lse 3.4e-4, dq / dk / dv <= 1e-3, the gate's
// gradient 3.2e-3 (FoX at D = 128: its reverse cumulative sum adds the rows' errors). At n = 1,
// where dq and dk are zero in exact arithmetic, those two are measured against max |dv|.
inline double tf32_tolerance() { return 5e-3; }

// The inputs as the kernels see them in `dtype`: q, k, v and dout rounded to it (the gate stays
// in the accumulator type), so that the float64 reference is computed on the same values.
inline Inputs rounded(const Inputs& in, at::ScalarType dtype) {
  auto r = [&](const at::Tensor& t) { return t.to(dtype).to(at::kDouble); };
  Inputs out = in;
  out.q = r(in.q);
  out.k = r(in.k);
  out.v = r(in.v);
  out.dout = r(in.dout);
  return out;
}

}  // namespace fpa::testing
