// The choice of CUDA kernel (cuda_dispatch.h). Plain C++: compiled in every build.
#include "kernels/cuda/cuda_dispatch.h"

#include <fmt/format.h>

namespace fpa::cuda {

CudaPlan plan_cuda_attention(tiled::DType dtype, int64_t batch_heads, int64_t d, int64_t dv,
                             Variant variant, FpaBackward fpa_backward,
                             Fp32Matmul fp32_matmul) {
  CudaPlan plan;
  if (d > kMaxCudaHeadDim || dv > kMaxCudaHeadDim) {
    plan.refusal = fmt::format("cuda attention: head dimensions must be <= {}, got D {} Dv {}",
                               kMaxCudaHeadDim, d, dv);
    return plan;
  }
  if (batch_heads > kMaxBatchTimesHeads) {
    plan.refusal = fmt::format("cuda attention: batch x heads must be <= {}, got {}",
                               kMaxBatchTimesHeads, batch_heads);
    return plan;
  }
  const bool half = dtype == tiled::DType::BFloat16 || dtype == tiled::DType::Float16;
  const int64_t tiled_limit =
      dtype == tiled::DType::Float64 ? kMaxTiledDoubleHeadDim : int64_t(tiled::kMaxHeadDim);
  if (d <= tiled_limit && dv <= tiled_limit) {
    plan.kernel = CudaKernel::Tiled;
    // WMMA's fragments: 16 x 16 x 16 (bf16 / fp16), 16 x 16 x 8 (TF32); tiles of 16 columns.
    const bool tf32 = dtype == tiled::DType::Float32 && fp32_matmul == Fp32Matmul::Tf32;
    plan.tensor_cores = (half || tf32) && d % 16 == 0 && dv % 16 == 0;
    return plan;
  }
  plan.kernel = CudaKernel::RowPerThread;
  plan.compute_in_fp32 = half;  // the row kernels exist for float and double only
  if (variant == Variant::Fpa && fpa_backward == FpaBackward::StraightThrough)
    plan.backward_refusal = row_kernels_straight_through_refusal();
  return plan;
}

std::string row_kernels_straight_through_refusal() {
  return fmt::format(
      "cuda attention: FPA's straight-through backward on the GPU needs D, Dv <= {} ({} in "
      "float64); use impl 'fused' (CPU) or 'reference'",
      tiled::kMaxHeadDim, kMaxTiledDoubleHeadDim);
}

std::string to_string(CudaKernel k) {
  return k == CudaKernel::Tiled ? "tiled" : "row-per-thread";
}

}  // namespace fpa::cuda
