#include "lm/passkey/heldout.h"

#include <torch/torch.h>

#include <random>
#include <stdexcept>

namespace fpa::passkey {

HeldOutSet make_heldout(const PromptConfig& config, int64_t length, int64_t count, uint64_t seed) {
  if (count < 1) throw std::invalid_argument("passkey: the held-out check needs at least one prompt");
  HeldOutSet set;
  set.key_digits = config.key_digits;
  set.tokens = at::empty({count, length}, at::kLong);
  auto tok = set.tokens.accessor<int64_t, 2>();
  std::mt19937_64 rng(seed);
  std::mt19937_64 passages(seed ^ 0x46494c4c45520000ull);  // natural filler only: keys unchanged
  const auto starts = passage_starts(config);
  const auto depths = spread_depths(int(count));
  for (int64_t r = 0; r < count; ++r) {
    const auto p = make_prompt(config, length, depths[size_t(r)], random_key(config.key_digits, rng),
                               pick_passage(starts, passages));
    for (int64_t t = 0; t < length; ++t) tok[r][t] = int64_t(static_cast<unsigned char>(p.text[size_t(t)]));
    set.answer_start.push_back(p.answer_start);
  }
  return set;
}

double heldout_accuracy(lm::LanguageModel& model, const HeldOutSet& set, int64_t batch) {
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  const int64_t count = set.tokens.size(0), n = set.tokens.size(1) - 1;
  int64_t correct = 0;
  for (int64_t r0 = 0; r0 < count; r0 += batch) {
    const int64_t rows = std::min(batch, count - r0);
    const auto tokens = set.tokens.narrow(0, r0, rows);
    const auto predicted =
        model->forward(tokens.narrow(1, 0, n).to(model->device())).argmax(-1).cpu();  // (rows, n)
    auto pred = predicted.accessor<int64_t, 2>();
    auto tok = tokens.accessor<int64_t, 2>();
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t a = set.answer_start[size_t(r0 + r)];
      bool ok = true;
      // Logits at position t predict token t + 1.
      for (int d = 0; d < set.key_digits; ++d) ok = ok && pred[r][a - 1 + d] == tok[r][a + d];
      correct += ok;
    }
  }
  if (was_training) model->train();
  return double(correct) / double(count);
}

}  // namespace fpa::passkey
