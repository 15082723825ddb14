// The forward entry point of the tiled kernels (tiled_kernels.h): checks, then the launcher of
// tiled_forward.cuh for the input type.
#include "kernels/cuda/tiled_forward.cuh"
#include "kernels/cuda/tiled_forward_mma.cuh"
#include "kernels/cuda/tiled_forward_wmma.cuh"

namespace fpa::cuda::tiled {
using detail::launch_forward;
using detail::launch_forward_mma;
using detail::launch_forward_wmma;

size_t forward_workspace_bytes(const Problem& p) { return gate_input_bytes(p); }

int forward(const Problem& p, const void* q, const void* k, const void* v, const void* gate,
            void* out, void* lse, void* workspace, void* stream) {
  if (!valid(p)) return -1;
  if (p.n == 0 || p.batch * p.heads == 0) return 0;
  if (p.mode != Mode::Softmax && !gate) return -1;
  if (forward_workspace_bytes(p) > 0 && !workspace) return -1;
  auto s = static_cast<cudaStream_t>(stream);
  switch (p.dtype) {
#define FPA_TILED_FORWARD(launch, T)                                                         \
  return launch<T>(p, static_cast<const T*>(q), static_cast<const T*>(k),                   \
                   static_cast<const T*>(v), static_cast<const Acc<T>*>(gate),              \
                   static_cast<T*>(out), static_cast<Acc<T>*>(lse), workspace, s)
    case DType::Float32:  // TF32 tensor cores unless exact fp32 is asked for
      if (p.tensor_cores && detail::wmma_shape(p)) FPA_TILED_FORWARD(launch_forward_wmma, float);
      FPA_TILED_FORWARD(launch_forward, float);
    case DType::Float64: FPA_TILED_FORWARD(launch_forward, double);
    case DType::BFloat16:
      if (p.tensor_cores && detail::wmma_shape(p))  // registers at D = Dv in {64, 128}
        FPA_TILED_FORWARD(launch_forward_mma, __nv_bfloat16);
      FPA_TILED_FORWARD(launch_forward, __nv_bfloat16);
    case DType::Float16:
      if (p.tensor_cores && detail::wmma_shape(p)) FPA_TILED_FORWARD(launch_forward_mma, __half);
      FPA_TILED_FORWARD(launch_forward, __half);
#undef FPA_TILED_FORWARD
  }
  return -1;
}

}  // namespace fpa::cuda::tiled
