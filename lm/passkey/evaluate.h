// One passkey prompt through the incremental decoder under a cache policy.
//
// The prompt (everything before the answer) is prefilled in chunks of `chunk` tokens except its
// last token; the policy evicts at every chunk boundary (queries inside a chunk see the chunk's
// own keys in full). The last prompt token and the answer digits are then decoded one token at a
// time, greedily, evicting after every token. The reported occupancy is the mean, over the
// key_digits answer queries, of (entries the query attended to) / (layers x heads x (i + 1));
// decode time is the wall time (and the thread's CPU time) of those single-token steps
// including eviction.
#pragma once

#include "lm/decode.h"
#include "lm/passkey/policy.h"
#include "lm/passkey/prompt.h"

#include <string>

namespace fpa::passkey {

struct PromptResult {
  std::string generated;        // the key_digits greedy bytes after the question
  bool correct = false;
  double occupancy = 0;         // mean over the answer queries
  double decode_ms_per_token = 0;      // wall time
  double decode_cpu_ms_per_token = 0;  // this thread's CPU time (robust to a shared machine)
  double prefill_ms = 0;
};

PromptResult run_prompt(lm::IncrementalDecoder& decoder, const Prompt& prompt,
                        const PolicyConfig& policy, int64_t chunk, int key_digits);

}  // namespace fpa::passkey
