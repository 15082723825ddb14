// Incremental decoding of a LanguageModel (lm/model.h) with a per-layer, per-head KV cache.
//
// `step` appends T new tokens (T = 1 for generation, a chunk for prefill) and returns their
// logits. Queries attend to the cached keys plus the new keys causally, with each variant's bias
// computed from what the cache keeps per key:
//   fpa         : the key's level phi_j and its running path minimum m_j = min_{j<=l<=i} phi_l,
//                 updated per new token as m_j <- min(m_j, phi_t); bias b_ij = m_j - phi_j.
//                 Only the last level phi_i is needed for the walk phi_t = phi_{t-1} + delta_t.
//   fox         : the key's cumulative log gate F_j; bias F_i - F_j.
//   transformer : RoPE applied to q and k at their absolute positions; no bias.
//   softmax-nope: nothing extra.
// With nothing evicted this is exactly the full forward pass (tests/test_passkey_decode.cpp).
//
// Eviction: `views()` reports each head's cached positions, current biases and R (what a policy
// needs, lm/decode_cache_view.h); `keep()` removes the entries a policy dropped, per head. Heads
// may hold different numbers of keys: each layer's cache is padded to its fullest head and
// padding is masked with -inf. Eviction compacts the kept entries (a copy of what is kept).
#pragma once

#include "lm/decode_cache_view.h"
#include "lm/model.h"

#include <ATen/ATen.h>

#include <vector>

namespace fpa::lm {

class IncrementalDecoder {
 public:
  explicit IncrementalDecoder(LanguageModel model);

  // tokens: 1-D int64 of T >= 1 new tokens. Returns logits (T, vocab) for them.
  at::Tensor step(const at::Tensor& tokens);

  int64_t length() const { return length_; }   // tokens seen so far
  // All heads of all layers (layer-major), as of the last processed query.
  std::vector<HeadCacheView> views() const;
  // keep[l * heads + h][s] for the entries of views() (same order); false entries are removed.
  void keep(const std::vector<std::vector<bool>>& keep);
  int64_t cached_entries() const;  // kept entries over all layers and heads
  void reset();

 private:
  // Buffers of `capacity` entries along dimension 1, the first `size` in use; appending doubles
  // the capacity when full, so a step costs O(T) copying, not O(cache).
  struct LayerCache {
    at::Tensor k, v;      // (H, capacity, D)
    at::Tensor pos;       // (H, capacity) int64, -1 for padding and unused entries
    at::Tensor level;     // (H, capacity): fpa phi_j, fox F_j (undefined for softmax kinds)
    at::Tensor run_min;   // (H, capacity): fpa m_j
    at::Tensor last;      // (H): fpa phi of the last token, fox F of the last token
    at::Tensor last_q;    // (H, D): the last query (for R)
    int64_t size = 0, capacity = 0;
  };
  static void append(LayerCache& c, const at::Tensor& k, const at::Tensor& v, const at::Tensor& pos,
                     const at::Tensor& level, const at::Tensor& run_min);
  at::Tensor attend(size_t layer, const at::Tensor& x);  // x (T, C) normed -> (T, C)

  LanguageModel model_;
  std::vector<LayerCache> cache_;
  int64_t length_ = 0;
};

}  // namespace fpa::lm
