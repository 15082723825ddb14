// One passkey prompt through the incremental decoder under a cache policy (lm/cache/policy.h).
//
// The prompt is prefilled in chunks except its last `timed_tokens` tokens, which are decoded one
// token at a time (teacher-forced), followed by the prompt's answer_tokens answer tokens (greedy:
// the key_digits digits for bytes, key_digits + 1 sub-word tokens, prompt.h). An online
// policy evicts after every prefill chunk and then after every `evict_every` single tokens, each
// time leaving room for the tokens that come before the next eviction (the policy's lookahead),
// so no query ever attends to more than the budget allows. Evicting every few tokens rather than
// after each one amortises eviction; the decode time reported includes it, averaged over all
// single-token steps (the timed prompt tail and the answer). A query-aware policy (SnapKV)
// evicts once, after the prompt's second-to-last token, with the attention mass of the
// policy's `observe` queries before it (the question), so every answer query reads the
// compressed cache. The reported occupancy is the mean, over the answer queries, of (entries the
// query attended to) / (layers x heads x (i + 1)).
#pragma once

#include "lm/cache/policy.h"
#include "lm/decode.h"
#include "lm/passkey/prompt.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace fpa::passkey {

struct DecodeSchedule {
  int64_t chunk = 128;         // prefill chunk (eviction after each)
  int64_t evict_every = 64;    // single-token phase: tokens between evictions
  int64_t timed_tokens = 256;  // the prompt's last tokens decoded one at a time and timed
  void validate() const;       // throws std::invalid_argument
};

struct PromptResult {
  std::string generated;        // the prompt's answer_tokens greedy tokens after the question, as text
  bool correct = false;         // answer_matches(key, generated)
  double occupancy = 0;         // mean over the answer queries
  double decode_ms_per_token = 0;      // wall time per single-token step, eviction included
  double decode_cpu_ms_per_token = 0;  // this thread's CPU time (robust to a shared machine)
  double prefill_ms = 0;
};

// A query-aware policy (SnapKV) tracks the attention of its `observe` queries while they are
// decoded one at a time: they must lie in the prompt's single-token tail, observe < timed_tokens
// (and < prompt_tokens, the prompt's length, when that is shorter). Otherwise throws UsageError
// "--observe must be smaller than --timed-tokens (snapkv observes the single-token tail)"; other
// policies always pass. run_prompt checks every prompt with it, so every caller passes through
// it; a tool may also call it on each policy before its first prompt, to refuse bad input before
// any work (passkey-eval does).
void check_observe_window(const DecodeSchedule& schedule, const cache::Policy& policy,
                          int64_t prompt_tokens = std::numeric_limits<int64_t>::max());

// head_scores: one per layer and head for a policy that needs them (duo-calibrated), else empty.
// Throws UsageError (check_observe_window) for a query-aware policy that does not fit `schedule`.
PromptResult run_prompt(lm::IncrementalDecoder& decoder, const Prompt& prompt,
                        const cache::Policy& policy, const std::vector<double>& head_scores,
                        const DecodeSchedule& schedule);

}  // namespace fpa::passkey
