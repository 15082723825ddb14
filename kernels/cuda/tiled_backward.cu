// The backward entry point of the tiled kernels (tiled_kernels.h): checks, then the launcher of
// tiled_backward.cuh for the input type, with the tensor-core passes (tiled_backward_wmma.cuh)
// for bf16 / fp16 and (TF32) fp32 where the head dimensions allow, on registers
// (tiled_backward_mma.cuh) for bf16 / fp16 at D = Dv in {64, 128}.
#include "kernels/cuda/tiled_backward.cuh"
#include "kernels/cuda/tiled_backward_mma.cuh"
#include "kernels/cuda/tiled_backward_wmma.cuh"

namespace fpa::cuda::tiled {
using detail::launch_backward;

size_t backward_workspace_bytes(const Problem& p) { return BackwardWorkspace(p).total; }

int backward(const Problem& p, const void* q, const void* k, const void* v, const void* gate,
             const void* out, const void* lse, const void* dout, void* dq, void* dk, void* dv,
             double* dgate, void* workspace, void* stream) {
  if (!valid(p)) return -1;
  if (p.n == 0 || p.batch * p.heads == 0) return 0;
  if (p.mode != Mode::Softmax && (!gate || !dgate)) return -1;
  if (!workspace) return -1;
  auto s = static_cast<cudaStream_t>(stream);
  switch (p.dtype) {
#define FPA_TILED_BACKWARD(T, Passes)                                                         \
  return launch_backward<T, Passes>(                                                        \
      p, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),      \
      static_cast<const Acc<T>*>(gate), static_cast<const T*>(out),                         \
      static_cast<const Acc<T>*>(lse), static_cast<const T*>(dout), static_cast<T*>(dq),    \
      static_cast<T*>(dk), static_cast<T*>(dv), dgate, workspace, s)
    case DType::Float32:  // TF32 tensor cores unless exact fp32 is asked for
      if (p.tensor_cores && detail::wmma_shape(p)) FPA_TILED_BACKWARD(float, detail::WmmaPasses);
      FPA_TILED_BACKWARD(float, detail::ScalarPasses);
    case DType::Float64: FPA_TILED_BACKWARD(double, detail::ScalarPasses);
    case DType::BFloat16:
      if (p.tensor_cores && detail::wmma_shape(p))  // registers at D = Dv in {64, 128}
        FPA_TILED_BACKWARD(__nv_bfloat16, detail::MmaPasses);
      FPA_TILED_BACKWARD(__nv_bfloat16, detail::ScalarPasses);
    case DType::Float16:
      if (p.tensor_cores && detail::wmma_shape(p)) FPA_TILED_BACKWARD(__half, detail::MmaPasses);
      FPA_TILED_BACKWARD(__half, detail::ScalarPasses);
#undef FPA_TILED_BACKWARD
  }
  return -1;
}

}  // namespace fpa::cuda::tiled
