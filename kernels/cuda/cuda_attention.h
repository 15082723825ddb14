// LibTorch binding of the CUDA kernels: fpa::attention calls this for Impl::Cuda. Linked only
// when LibTorch has CUDA (FPA_WITH_CUDA); without it the build still compiles this binding
// (fpa_cuda_binding_check, kernels/cuda/CMakeLists.txt) so that it cannot rot.
//
// Tensors on one CUDA device, differentiable in q, k, v and gate (first derivatives; a double
// backward goes through the reference, kernels/kernel_autograd.h).
//   dtypes        q, k, v float32, float64, bfloat16 or float16; gate float32 for bfloat16 /
//                 float16 (kernels/attention.h); output and gradients in the inputs' dtypes.
//   head dims     D, Dv <= 256. Which kernel runs for which dtype, head dimension and mode:
//                 cuda_dispatch.h. In short, the tiled kernels (fp32 accumulation; bf16 / fp16
//                 products on tensor cores when D, Dv are multiples of 16; fp32 there on TF32
//                 tensor cores by default, relative errors ~1e-3, exact fp32 with
//                 AttentionOptions::fp32_matmul Exact or at other D; TF32 not run on a GPU yet)
//                 for D, Dv <= 128 (<= 64 in float64), with a deterministic backward and
//                 both FPA modes; beyond that the one-thread-per-row kernels (bf16 / fp16 run in
//                 fp32 there), whose backward uses atomics (not bitwise repeatable) and refuses
//                 FPA's straight-through mode.
//   limits        batch x heads <= 65535; a launch that fails says so.
#pragma once

#include "kernels/attention.h"

namespace fpa {

at::Tensor cuda_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const at::Tensor& gate, const AttentionOptions& opts);

}  // namespace fpa
