// LibTorch binding of the CUDA kernels (fpa_cuda_kernels.h): fpa::attention calls this for
// Impl::Cuda. Built only when LibTorch has CUDA (FPA_WITH_CUDA). Tensors must be on one CUDA
// device; differentiable in q, k, v and gate, except FPA's straight-through backward, which
// the GPU kernels do not implement (an error says so; the CPU fused kernels do).
#pragma once

#include "kernels/attention.h"

namespace fpa {

at::Tensor cuda_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const at::Tensor& gate, const AttentionOptions& opts);

}  // namespace fpa
