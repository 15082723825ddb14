// One token through a LanguageModel's cached forward pass on raw float32 rows: the fused
// implementation of LanguageModelImpl::forward(tokens, caches, Impl::Fused) for T = 1.
//
// It computes what the modules compute (lm/model.h: embedding, per block RMSNorm, the q/k/v/gate
// projections, attention, output projection, RMSNorm, SwiGLU, the residuals, then the final norm
// and head), reading the modules' own parameters, with a BLAS matrix-vector product per linear
// layer instead of a LibTorch operator per step: at one token, per-operator dispatch was most of
// a step's time (results/passkey/decode_speed/README.md). Attention goes through the cache's
// kernel (fpa::attention_step_token), so the bias and the carried path minimum stay in kernels/.
// RoPE (the Transformer) uses fpa::apply_rope. Equal to the module path up to float32 rounding
// (tests/test_passkey_decode.cpp).
#pragma once

#include "lm/model.h"

#include <vector>

namespace fpa::lm {

// Whether token_step applies: float32 parameters on the CPU, no gradient wanted.
bool token_step_applies(const LanguageModelImpl& model);
// Appends `token` to `caches` (one per layer) and writes its vocab logits to `logits`.
void token_step(LanguageModelImpl& model, int64_t token, std::vector<fpa::KvCache>& caches,
                float* logits);
// The same, as a (1, 1, vocab) tensor.
torch::Tensor token_step(LanguageModelImpl& model, int64_t token,
                         std::vector<fpa::KvCache>& caches);

}  // namespace fpa::lm
