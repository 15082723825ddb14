#include "lm/decode.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace fpa::lm {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Appends `add` (H, T, ...) to `base` (H, S, ...) along dimension 1.
at::Tensor append(const at::Tensor& base, const at::Tensor& add) {
  return base.defined() ? at::cat({base, add}, 1) : add;
}

// Copies a 1-D tensor into a std::vector<T>.
template <class T>
std::vector<T> to_vector(const at::Tensor& t) {
  auto c = t.contiguous().cpu();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

}  // namespace

IncrementalDecoder::IncrementalDecoder(LanguageModel model) : model_(std::move(model)) {
  reset();
}

void IncrementalDecoder::reset() {
  cache_.assign(model_->blocks.size(), LayerCache{});
  length_ = 0;
}

at::Tensor IncrementalDecoder::attend(size_t layer, const at::Tensor& x) {
  auto& a = *model_->blocks[layer]->attn;
  auto& c = cache_[layer];
  const auto kind = a.config.kind;
  const int64_t H = a.config.heads, D = a.config.head_dim(), T = x.size(1);
  const double scale = 1.0 / std::sqrt(double(D));

  auto q = a.split_heads(a.q_proj(x))[0], k = a.split_heads(a.k_proj(x))[0],
       v = a.split_heads(a.v_proj(x))[0];  // (H, T, D)
  if (kind == AttentionKind::Transformer) {
    q = fpa::apply_rope(q, length_, a.config.rope_base);
    k = fpa::apply_rope(k, length_, a.config.rope_base);
  }
  const auto opts = x.options();
  if (!c.last.defined() && has_gate(kind)) c.last = at::zeros({H}, opts);

  // New keys among themselves: causal, with the variant's bias inside the chunk.
  auto s_new = at::matmul(q, k.transpose(-1, -2)) * scale;  // (H, T, T)
  at::Tensor g, level_new, prefix_min;                       // (H, T)
  if (kind == AttentionKind::Fpa) {
    g = a.token_gate(x)[0];                                  // increments delta_t
    level_new = c.last.unsqueeze(-1) + at::cumsum(g, -1);    // phi_t continues the walk
    prefix_min = std::get<0>(at::cummin(level_new, -1));
    s_new = s_new + fpa::fpa_bias(level_new);
  } else if (kind == AttentionKind::Fox) {
    g = a.token_gate(x)[0];                                  // log forget gates
    level_new = c.last.unsqueeze(-1) + at::cumsum(g, -1);    // F_t
    s_new = s_new + fpa::fox_bias(g);
  } else {
    s_new = s_new.masked_fill(at::ones({T, T}, opts.dtype(at::kBool)).triu(1), kNegInf);
  }

  at::Tensor scores = s_new, values = v;
  if (c.k.defined()) {
    auto s_old = at::matmul(q, c.k.transpose(-1, -2)) * scale;  // (H, T, S)
    if (kind == AttentionKind::Fpa) {
      // min over [j, t] = min(m_j over [j, i], min of the new levels up to t)
      s_old = s_old + at::minimum(c.run_min.unsqueeze(1), prefix_min.unsqueeze(-1)) -
              c.level.unsqueeze(1);
    } else if (kind == AttentionKind::Fox) {
      s_old = s_old + level_new.unsqueeze(-1) - c.level.unsqueeze(1);
    }
    s_old = s_old.masked_fill((c.pos < 0).unsqueeze(1), kNegInf);
    scores = at::cat({s_old, s_new}, -1);
    values = at::cat({c.v, v}, 1);
  }
  auto out = at::matmul(at::softmax(scores, -1), values);  // (H, T, D)

  // Update the cache with the new keys.
  if (kind == AttentionKind::Fpa) {
    if (c.run_min.defined())
      c.run_min = at::minimum(c.run_min, prefix_min.select(1, T - 1).unsqueeze(-1));
    auto suffix_min = std::get<0>(at::cummin(level_new.flip(-1), -1)).flip(-1);
    c.run_min = append(c.run_min, suffix_min);
  }
  if (level_new.defined()) {
    c.level = append(c.level, level_new);
    c.last = level_new.select(1, T - 1).clone();
  }
  auto pos = at::arange(length_, length_ + T, opts.dtype(at::kLong)).unsqueeze(0).expand({H, T});
  c.pos = append(c.pos, pos.contiguous());
  c.k = append(c.k, k);
  c.v = append(c.v, v);
  c.last_q = q.select(1, T - 1).clone();
  return a.o_proj(a.merge_heads(out.unsqueeze(0)));
}

at::Tensor IncrementalDecoder::step(const at::Tensor& tokens) {
  if (tokens.dim() != 1 || tokens.size(0) < 1)
    throw std::invalid_argument("decode: step takes a 1-D tensor of at least one token");
  torch::NoGradGuard no_grad;
  auto x = model_->embed(tokens.unsqueeze(0));  // (1, T, C)
  for (size_t l = 0; l < model_->blocks.size(); ++l) {
    auto& b = *model_->blocks[l];
    x = x + attend(l, b.attn_norm(x));
    x = x + b.mlp(b.mlp_norm(x));
  }
  length_ += tokens.size(0);
  return model_->logits_from_hidden(x)[0];
}

std::vector<HeadCacheView> IncrementalDecoder::views() const {
  std::vector<HeadCacheView> out;
  for (size_t l = 0; l < cache_.size(); ++l) {
    const auto& c = cache_[l];
    const auto& cfg = model_->config;
    if (!c.k.defined()) {
      out.resize(out.size() + size_t(cfg.heads));
      continue;
    }
    const double scale = 1.0 / std::sqrt(double(cfg.head_dim()));
    at::Tensor bias;
    if (cfg.kind == AttentionKind::Fpa) bias = c.run_min - c.level;
    else if (cfg.kind == AttentionKind::Fox) bias = c.last.unsqueeze(-1) - c.level;
    else bias = at::zeros(c.pos.sizes(), c.k.options());
    auto qk = (at::matmul(c.k, c.last_q.unsqueeze(-1)).squeeze(-1).abs() * scale)
                  .masked_fill(c.pos < 0, 0.0);
    auto r = std::get<0>(qk.max(-1)).to(at::kDouble);
    bias = bias.to(at::kDouble);
    for (int64_t h = 0; h < cfg.heads; ++h) {
      auto valid = (c.pos[h] >= 0).nonzero().squeeze(-1);
      HeadCacheView view;
      view.position = to_vector<int64_t>(c.pos[h].index_select(0, valid));
      view.bias = to_vector<double>(bias[h].index_select(0, valid));
      view.r = r[h].item<double>();
      out.push_back(std::move(view));
    }
  }
  return out;
}

void IncrementalDecoder::keep(const std::vector<std::vector<bool>>& keep) {
  const int64_t H = model_->config.heads;
  if (keep.size() != cache_.size() * size_t(H))
    throw std::invalid_argument("decode: keep needs one mask per layer and head");
  for (size_t l = 0; l < cache_.size(); ++l) {
    auto& c = cache_[l];
    if (!c.k.defined()) continue;
    // Indices (into the padded cache) of each head's kept entries.
    std::vector<at::Tensor> kept;
    int64_t width = 0;
    bool all = true;
    for (int64_t h = 0; h < H; ++h) {
      const auto valid = to_vector<int64_t>((c.pos[h] >= 0).nonzero().squeeze(-1));
      const auto& mask = keep[l * size_t(H) + size_t(h)];
      if (mask.size() != valid.size())
        throw std::invalid_argument("decode: keep mask does not match the cache");
      std::vector<int64_t> idx;
      for (size_t s = 0; s < valid.size(); ++s)
        if (mask[s]) idx.push_back(valid[s]);
      all = all && idx.size() == size_t(c.pos.size(1));
      width = std::max<int64_t>(width, int64_t(idx.size()));
      kept.push_back(at::tensor(idx, at::kLong));
    }
    if (all) continue;
    // Rebuild each tensor padded to the fullest head; padding has pos -1.
    auto gather = [&](const at::Tensor& t, double fill) {
      if (!t.defined()) return t;
      auto shape = t.sizes().vec();
      shape[1] = width;
      auto out = at::full(shape, fill, t.options());
      for (int64_t h = 0; h < H; ++h) {
        const auto n = kept[size_t(h)].numel();
        if (n > 0) out[h].narrow(0, 0, n).copy_(t[h].index_select(0, kept[size_t(h)]));
      }
      return out;
    };
    c.k = gather(c.k, 0.0);
    c.v = gather(c.v, 0.0);
    c.pos = gather(c.pos, -1.0);
    c.level = gather(c.level, 0.0);
    c.run_min = gather(c.run_min, 0.0);
  }
}

int64_t IncrementalDecoder::cached_entries() const {
  int64_t n = 0;
  for (const auto& c : cache_)
    if (c.pos.defined()) n += (c.pos >= 0).sum().item<int64_t>();
  return n;
}

}  // namespace fpa::lm
