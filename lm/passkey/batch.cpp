#include "lm/passkey/batch.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace fpa::passkey {

BatchMaker::BatchMaker(PromptConfig prompt, int64_t length, int64_t batch, double corpus_fraction,
                       at::Tensor corpus, uint64_t seed)
    : prompt_(std::move(prompt)), passage_starts_(passage_starts(prompt_)), length_(length),
      batch_(batch), corpus_(std::move(corpus)), rng_(seed) {
  if (length < prompt_.fixed_bytes())
    throw std::invalid_argument("passkey: training length shorter than the prompt's fixed parts");
  if (!(corpus_fraction >= 0 && corpus_fraction <= 1))
    throw std::invalid_argument("passkey: corpus fraction must be in [0, 1]");
  corpus_rows_ = int64_t(std::llround(corpus_fraction * double(batch)));
  if (corpus_rows_ > 0 && (!corpus_.defined() || corpus_.numel() <= length))
    throw std::invalid_argument("passkey: corpus mixture needs a corpus longer than one window");
}

TrainBatch BatchMaker::next(int64_t length) {
  if (length < prompt_.fixed_bytes())
    throw std::invalid_argument("passkey: batch length shorter than the prompt's fixed parts");
  TrainBatch b;
  b.tokens = at::empty({batch_, length}, at::kLong);
  b.answer_mask = at::zeros({batch_, length - 1}, at::kFloat);
  auto tok = b.tokens.accessor<int64_t, 2>();
  auto mask = b.answer_mask.accessor<float, 2>();
  for (int64_t r = 0; r < batch_; ++r) {
    if (r < corpus_rows_) {
      std::uniform_int_distribution<int64_t> start(0, corpus_.numel() - length);
      const auto* p = corpus_.data_ptr<uint8_t>() + start(rng_);
      for (int64_t t = 0; t < length; ++t) tok[r][t] = p[t];
      continue;
    }
    const auto key = random_key(prompt_.key_digits, rng_);
    const double depth = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    const auto p = make_prompt(prompt_, length, depth, key, pick_passage(passage_starts_, rng_));
    for (int64_t t = 0; t < length; ++t) tok[r][t] = int64_t(static_cast<unsigned char>(p.text[size_t(t)]));
    // Target index t predicts token t + 1.
    for (int d = 0; d < prompt_.key_digits; ++d) mask[r][p.answer_start - 1 + d] = 1.0f;
  }
  return b;
}

std::string BatchMaker::state() const {
  std::ostringstream s;
  s << rng_;
  return s.str();
}

void BatchMaker::set_state(const std::string& state) {
  std::istringstream s(state);
  s >> rng_;
  if (!s) throw std::runtime_error("checkpoint: corrupt passkey data state");
}

PasskeyLoss passkey_loss(lm::LanguageModel& model, const TrainBatch& batch, double answer_weight) {
  const int64_t n = batch.tokens.size(1) - 1;
  const auto tokens = batch.tokens.to(model->device());
  auto logits = model->forward(tokens.narrow(1, 0, n));
  auto target = tokens.narrow(1, 1, n);
  auto ce = torch::nn::functional::cross_entropy(
                logits.reshape({-1, logits.size(-1)}), target.reshape({-1}),
                torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone))
                .view(target.sizes());
  auto mask = batch.answer_mask.to(ce.device(), ce.scalar_type());
  PasskeyLoss out;
  auto all = ce.mean();
  out.all_ce = all.item<double>();
  out.total = all;
  const double count = mask.sum().item<double>();
  out.answer_ce = std::numeric_limits<double>::quiet_NaN();
  if (count > 0) {
    auto answer = (ce * mask).sum() / count;
    out.answer_ce = answer.item<double>();
    out.total = all + answer_weight * answer;
  }
  return out;
}

}  // namespace fpa::passkey
