#include "lm/decode.h"

#include "lm/token_step.h"

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>

namespace fpa::lm {

IncrementalDecoder::IncrementalDecoder(LanguageModel model, fpa::Impl impl, bool tensor_ops)
    : model_(std::move(model)), impl_(impl), tensor_ops_(tensor_ops) {
  reset();
}

void IncrementalDecoder::reset() {
  caches_ = model_->new_caches(tensor_ops_);
  if (track_mass_) track_mass(true);
}

void IncrementalDecoder::track_mass(bool on) {
  track_mass_ = on;
  for (auto& c : caches_) c.track_mass(on);
}

int64_t IncrementalDecoder::length() const { return caches_.front().length(); }

at::Tensor IncrementalDecoder::step(const at::Tensor& tokens) {
  if (tokens.dim() != 1 || tokens.size(0) < 1)
    throw std::invalid_argument("decode: step takes a 1-D tensor of at least one token");
  // Inference mode skips autograd and version-counter bookkeeping: at one token per step the
  // per-operator overhead is a large part of the cost.
  c10::InferenceMode inference;
  // One token, fused: the same computation on raw rows, without an operator per step.
  if (tokens.size(0) == 1 && impl_ == fpa::Impl::Fused && tokens.scalar_type() == at::kLong &&
      !tensor_ops_ && token_step_applies(*model_))
    return token_step(*model_, tokens[0].item<int64_t>(), caches_)[0];
  return model_->forward(tokens.unsqueeze(0).to(model_->device()), caches_, impl_)[0];
}

const std::vector<float>& IncrementalDecoder::step_token(int64_t token) {
  c10::InferenceMode inference;
  logits_.resize(size_t(model_->config.vocab_size));
  if (impl_ == fpa::Impl::Fused && !tensor_ops_ && token_step_applies(*model_)) {
    token_step(*model_, token, caches_, logits_.data());
  } else {
    const auto logits =
        step(at::tensor({token}, at::kLong))[0].to(at::kCPU, at::kFloat).contiguous();
    std::copy_n(logits.data_ptr<float>(), logits_.size(), logits_.begin());
  }
  return logits_;
}

std::vector<fpa::CacheHeadView> IncrementalDecoder::views(const fpa::CacheSignals& signals) const {
  std::vector<fpa::CacheHeadView> out;
  for (const auto& c : caches_)
    for (auto& v : c.views(signals)) out.push_back(std::move(v));
  return out;
}

std::vector<fpa::CacheHeadView> IncrementalDecoder::views(bool with_r) const {
  fpa::CacheSignals s;
  s.r = with_r;
  return views(s);
}

int64_t IncrementalDecoder::heads() const {
  return int64_t(caches_.size()) * model_->config.heads;
}

void IncrementalDecoder::keep(const std::vector<std::vector<bool>>& keep) {
  const size_t H = size_t(model_->config.heads);
  if (keep.size() != caches_.size() * H)
    throw std::invalid_argument("decode: keep needs one mask per layer and head");
  for (size_t l = 0; l < caches_.size(); ++l) {
    std::vector<std::vector<int64_t>> kept(H);
    for (size_t h = 0; h < H; ++h) {
      const auto& mask = keep[l * H + h];
      if (int64_t(mask.size()) != caches_[l].size(int64_t(h)))
        throw std::invalid_argument("decode: keep mask does not match the cache");
      kept[h].reserve(mask.size());
      for (size_t s = 0; s < mask.size(); ++s)
        if (mask[s]) kept[h].push_back(int64_t(s));
    }
    caches_[l].keep(kept);
  }
}

int64_t IncrementalDecoder::cached_entries() const {
  int64_t n = 0;
  for (const auto& c : caches_) n += c.entries();
  return n;
}

}  // namespace fpa::lm
