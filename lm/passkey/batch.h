// Training batches for passkey models: sequences of exactly `length` tokens, a mixture of passkey
// prompts (random key, depth uniform in [0, 1]) and, optionally, windows of corpus text.
//
// Each batch holds round(corpus_fraction * batch) corpus windows, the rest passkey prompts, in a
// fixed order (corpus rows first). The loss is the mean next-token cross-entropy over all tokens
// plus `answer_weight` times the mean cross-entropy over the answer digits of the passkey rows
// (the prototype's loss). One 64-bit Mersenne Twister drives keys, depths and corpus offsets; its
// state is the data position saved in checkpoints.
#pragma once

#include "lm/model.h"
#include "lm/passkey/prompt.h"

#include <ATen/ATen.h>

#include <random>
#include <string>

namespace fpa::passkey {

struct TrainBatch {
  at::Tensor tokens;       // (B, length) int64
  at::Tensor answer_mask;  // (B, length - 1) float: 1 where the target is an answer digit
};

class BatchMaker {
 public:
  // corpus: uint8 stream (lm::token_stream) or an undefined tensor when corpus_fraction == 0.
  BatchMaker(PromptConfig prompt, int64_t length, int64_t batch, double corpus_fraction,
             at::Tensor corpus, uint64_t seed);
  TrainBatch next() { return next(length_); }
  // A batch of sequences of another length (a length curriculum); the same random stream.
  TrainBatch next(int64_t length);
  int64_t corpus_rows() const { return corpus_rows_; }
  std::string state() const;
  void set_state(const std::string& state);  // throws std::runtime_error when corrupt

 private:
  PromptConfig prompt_;
  std::vector<int64_t> passage_starts_;  // natural filler: where a prompt's passage may start
  int64_t length_, batch_, corpus_rows_;
  at::Tensor corpus_;
  std::mt19937_64 rng_;
};

struct PasskeyLoss {
  at::Tensor total;   // what is minimised
  double all_ce;      // mean CE over all tokens
  double answer_ce;   // mean CE over the answer digits (NaN when the batch has none)
};
PasskeyLoss passkey_loss(lm::LanguageModel& model, const TrainBatch& batch, double answer_weight);

}  // namespace fpa::passkey
