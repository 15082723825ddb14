// Language-model loss decoded with a compressed KV cache (issue 29, item 5): a window of text goes
// through the incremental decoder (lm/decode.h) one token at a time, every prediction scored, and
// an online cache policy (lm/cache/policy.h) evicts after every `evict_every` tokens, leaving
// room for the tokens before its next eviction, so no query attends to more than the policy
// allows. With policy `full` this is the model's ordinary loss on the window (tested).
//
//   window tokens t_0..t_n -> step_token(t_s) -> logits -> -log p(t_{s+1}) -> nll
//                                         \-> every evict_every tokens: policy.select -> keep
//
// Occupancy is the kvpress "kept fraction" at each query: entries attended to over the entries
// a full cache would hold, (layers x heads x (s + 1)), averaged over every scored token.
#pragma once

#include "lm/cache/policy.h"
#include "lm/decode.h"

#include <ATen/ATen.h>

#include <cstdint>

namespace fpa::lm {

struct CompressedLoss {
  double nll = 0;            // summed over scored tokens (nats)
  int64_t tokens = 0;        // scored tokens
  double occupancy_sum = 0;  // summed over scored tokens
  double decode_cpu_ms = 0;  // this thread's CPU time in step_token and evictions

  double nll_per_token() const { return nll / double(tokens); }
  double perplexity() const;
  double occupancy() const { return occupancy_sum / double(tokens); }
  void add(const CompressedLoss& other);
};

// Scores window[1..n] given the tokens before each, under `policy` (online, query-agnostic:
// a query-aware or calibrated policy is refused with std::invalid_argument). window: 1-D int64,
// at least 2 tokens. The decoder is reset first.
CompressedLoss score_window(IncrementalDecoder& decoder, const at::Tensor& window,
                            const cache::Policy& policy, int64_t evict_every);

// Which of `total` windows an evaluation of at most `max_windows` scores: all of them when
// max_windows is 0 or >= total, else max_windows indices spread evenly (first one 0), so a
// subset covers every document group of the split.
std::vector<int64_t> spread_indices(int64_t total, int64_t max_windows);

}  // namespace fpa::lm
