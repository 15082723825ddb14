// Reference attention: materialises the N x N logits and bias. Clear, O(N^2) memory, and the
// ground truth every fast implementation is tested against (in float64, gradients included).
#pragma once

#include "kernels/attention.h"

#include <vector>

namespace fpa {

at::Tensor reference_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& gate, const AttentionOptions& opts);

// The gradients of sum(reference_attention(q, k, v, gate, opts) * dout) in q, k, v and gate
// (undefined for those that do not require grad), themselves differentiable: the double
// backward of the fused and CUDA autograd functions, whose kernels give first derivatives only.
std::vector<at::Tensor> reference_attention_grads(const at::Tensor& q, const at::Tensor& k,
                                                  const at::Tensor& v, const at::Tensor& gate,
                                                  const AttentionOptions& opts,
                                                  const at::Tensor& dout);

// Index of the path minimum: [.., i, j] = l* = the latest l in [j, i] with phi_l minimal
// (for j > i the entry is j and meaningless). Not differentiable; used by fpa_bias and tests.
at::Tensor path_argmin(const at::Tensor& field);

}  // namespace fpa
