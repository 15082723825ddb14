// Fused (streaming, FlashAttention-style) CPU attention for softmax, FoX and FPA.
#pragma once

#include "attention.h"

namespace fpa {

at::Tensor fused_attention_cpu(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& gate, const AttentionOptions& opts);

}  // namespace fpa
