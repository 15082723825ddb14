// Reference attention: materialises the N x N logits and bias. Clear, O(N^2) memory, and the
// ground truth every fast implementation is tested against (in float64, gradients included).
#pragma once

#include "attention.h"

namespace fpa {

at::Tensor reference_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& gate, const AttentionOptions& opts);

// Index of the path minimum: [.., i, j] = l* = the latest l in [j, i] with phi_l minimal
// (for j > i the entry is j and meaningless). Not differentiable; used by fpa_bias and tests.
at::Tensor path_argmin(const at::Tensor& field);

}  // namespace fpa
