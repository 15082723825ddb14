// The "has this run learned the task?" check that passkey-train runs every few steps.
//
// A fixed set of held-out passkey prompts at the training length L (keys from their own random
// stream, depths spread evenly over [0, 1]) goes through one teacher-forced forward pass. A prompt
// counts as retrieved when the argmax at each answer position is the true digit. With a full
// cache that is exactly what greedy decoding produces (the first wrong argmax is where greedy
// decoding would first go wrong; before it, greedy and teacher forcing feed the same bytes), so
// the check measures what passkey-eval's full-cache cell at L measures, at the cost of a forward
// pass instead of a decode.
#pragma once

#include "lm/model.h"
#include "lm/passkey/prompt.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace fpa::passkey {

struct HeldOutSet {
  at::Tensor tokens;                  // (K, length) int64, answers included
  std::vector<int64_t> answer_start;  // per prompt: the first answer byte's position
  int key_digits = 5;
};

// K prompts of `length` bytes; `seed` picks the keys (use a stream the training data never uses).
HeldOutSet make_heldout(const PromptConfig& config, int64_t length, int64_t count, uint64_t seed);

// Fraction of the held-out prompts whose every answer digit is the argmax; `batch` rows at a time.
double heldout_accuracy(lm::LanguageModel& model, const HeldOutSet& set, int64_t batch);

}  // namespace fpa::passkey
