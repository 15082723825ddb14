// The attention operators of this suite: causal softmax, FoX and First Passage Attention.
//
// One entry point, `fpa::attention`, takes the variant and the implementation as parameters.
// Models, tasks and theory all call it; this folder knows nothing of them.
//
// Shapes and dtypes (B = batch, H = heads, N = sequence length, D = head dimension):
//   q, k, v : (B, H, N, D), one dtype (float32, float64, bfloat16 or float16) and device
//   gate    : (B, H, N), the dtype of q for float32/float64; float32 for bfloat16/float16 (the
//             field and gates stay in float32; a half-precision gate is refused, not upcast,
//             since its rounding already made ties)
//               Softmax: ignored (pass an undefined tensor)
//               FoX    : log forget gates log f_t <= 0; the bias is F_i - F_j, F = cumsum(log f)
//               FPA    : the field phi_t itself (levels); the bias is min_{j<=l<=i} phi_l - phi_j.
//                        Use `fpa_field_from_increments` for the walk parameterisation.
//   returns : (B, H, N, D), query i attends to keys j <= i.
// Logits are  scale * q_i . k_j + b_ij  with scale = 1/sqrt(D) unless given.
// bfloat16/float16: the reference and fused (CPU) implementations compute in float32 and return
// the input dtype, gradients in each input's dtype; impl 'cuda': kernels/cuda/cuda_attention.h.
// All implementations are differentiable in q, k, v and gate through LibTorch autograd.
// The options (Variant, Impl, FpaBackward, AttentionOptions) and their names: kernels/options.h.
#pragma once

#include "kernels/options.h"

#include <ATen/ATen.h>

#include <string>

namespace fpa {

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& gate, const AttentionOptions& opts);

// --- Bias matrices and alive sets (reference definitions, O(N^2) memory) -------------------
// Each returns (B, H, N, N) (or (..., N, N) for any leading shape) with entry [i][j] = b_ij for
// j <= i and -inf above the diagonal (keys a causal query never sees).

at::Tensor fox_bias(const at::Tensor& log_forget);
at::Tensor fpa_bias(const at::Tensor& field, FpaBackward fpa_backward = FpaBackward::Exact,
                    double st_temperature = 1.0);

// Walk parameterisation: phi_t = sum_{l<=t} delta_l (differentiable). Level parameterisation
// needs no helper: the projection's output is the field.
at::Tensor fpa_field_from_increments(const at::Tensor& increments);

// A_i(tau) as a bool matrix: [i][j] is true when j <= i and b_ij >= -tau.
at::Tensor alive_sets(const at::Tensor& bias, double tau = 0.0);

// RoPE for the Transformer baseline: rotates pairs (x[2m], x[2m+1]) of the last dimension of
// x (B, H, N, D) by angle (offset + t) * base^(-2m/D). D must be even.
at::Tensor apply_rope(const at::Tensor& x, int64_t offset = 0, double base = 10000.0);

// Whether an implementation was compiled into this build (Cuda needs a CUDA LibTorch).
bool impl_available(Impl i);

}  // namespace fpa
