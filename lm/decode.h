// Incremental decoding of a LanguageModel (lm/model.h): a loop over tokens through the model's
// cached forward pass, one fpa::KvCache per layer (kernels/cpu/kv_cache.h), which holds each head's
// keys, values and the variant's per-key state (FPA's carried path minimum, FoX's cumulative
// gate) and computes the bias. With nothing evicted this is exactly the full forward pass
// (tests/test_passkey_decode.cpp).
//
// `step` appends T new tokens (T = 1 for generation, a chunk for prefill) and returns their
// logits. `step_token` appends one token and returns its logits as float32 numbers: a float32
// model decoding with the fused implementation takes lm/token_step.h's path with no tensor
// operator at all (the few LibTorch operators that slicing the input and reading the output
// take per token are a measurable part of a step over a small cache). Eviction:
// `views()` reports each head's cached positions, current biases and, when asked, R (what a
// policy needs, kernels/cache_view.h); `keep()` removes the entries a policy dropped, per
// head. Heads keep different numbers of entries and each attends over its own only.
#pragma once

#include "kernels/cache_view.h"
#include "lm/model.h"

#include <ATen/ATen.h>

#include <vector>

namespace fpa::lm {

class IncrementalDecoder {
 public:
  // impl: the cached operator's implementation (kernels/cpu/kv_cache.h), fused unless a test asks.
  // The caches live on the model's device: on a GPU they take the tensor path (keys and values
  // on the device, attention with tensor ops); tensor_ops takes it on the CPU too (tests), and
  // then impl and lm/token_step.h's fast path do not apply.
  explicit IncrementalDecoder(LanguageModel model, fpa::Impl impl = fpa::Impl::Fused,
                              bool tensor_ops = false);

  // tokens: 1-D int64 of T >= 1 new tokens. Returns logits (T, vocab) for them.
  at::Tensor step(const at::Tensor& tokens);
  // One token; its logits (vocab), valid until the next call.
  const std::vector<float>& step_token(int64_t token);

  int64_t length() const;  // tokens seen so far
  // All heads of all layers (layer-major), as of the last processed query, with the optional
  // signals asked for (kernels/cache_view.h; each costs a pass over every cached key, the
  // mass needs track_mass). views(with_r) asks for R alone.
  std::vector<fpa::CacheHeadView> views(const fpa::CacheSignals& signals) const;
  std::vector<fpa::CacheHeadView> views(bool with_r = true) const;
  // Accumulate every key's attention mass from now on (zeroed; H2O, SnapKV), or stop. A reset()
  // keeps the setting and zeroes the mass.
  void track_mass(bool on);
  int64_t heads() const;  // layers x heads: the number of views
  // keep[l * heads + h][s] for the entries of views() (same order); false entries are removed.
  void keep(const std::vector<std::vector<bool>>& keep);
  int64_t cached_entries() const;  // kept entries over all layers and heads
  void reset();

 private:
  LanguageModel model_;
  fpa::Impl impl_;
  bool tensor_ops_;
  std::vector<fpa::KvCache> caches_;
  std::vector<float> logits_;  // step_token's
  bool track_mass_ = false;
};

}  // namespace fpa::lm
