#include "lm/decode.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace fpa::lm {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// A copy of t with `capacity` entries along dimension 1: the first `size` from t, then `fill`.
at::Tensor regrow(const at::Tensor& t, int64_t size, int64_t capacity, double fill) {
  auto shape = t.sizes().vec();
  shape[1] = capacity;
  auto out = at::full(shape, fill, t.options());
  if (size > 0) out.narrow(1, 0, size).copy_(t.narrow(1, 0, size));
  return out;
}

// Writes `add` (H, T, ...) at entry `at` of buffer `buf`, allocating it on first use.
void put(at::Tensor& buf, const at::Tensor& add, int64_t at, int64_t capacity, double fill) {
  if (!add.defined()) return;
  if (!buf.defined()) {
    auto shape = add.sizes().vec();
    shape[1] = capacity;
    buf = at::full(shape, fill, add.options());
  }
  buf.narrow(1, at, add.size(1)).copy_(add);
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

void IncrementalDecoder::append(LayerCache& c, const at::Tensor& k, const at::Tensor& v,
                                const at::Tensor& pos, const at::Tensor& level,
                                const at::Tensor& run_min) {
  const int64_t T = k.size(1), need = c.size + T;
  if (need > c.capacity) {
    const int64_t capacity = std::max<int64_t>({need, 2 * c.capacity, 64});
    for (auto* t : {&c.k, &c.v, &c.level, &c.run_min})
      if (t->defined()) *t = regrow(*t, c.size, capacity, 0.0);
    if (c.pos.defined()) c.pos = regrow(c.pos, c.size, capacity, -1.0);
    c.capacity = capacity;
  }
  put(c.k, k, c.size, c.capacity, 0.0);
  put(c.v, v, c.size, c.capacity, 0.0);
  put(c.pos, pos, c.size, c.capacity, -1.0);
  put(c.level, level, c.size, c.capacity, 0.0);
  put(c.run_min, run_min, c.size, c.capacity, 0.0);
  c.size = need;
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

  // Biases: of the new keys among themselves (causal, within the chunk) and of the cached keys.
  at::Tensor bias_new, level_new, prefix_min;  // (H, T, T), (H, T), (H, T)
  if (kind == AttentionKind::Fpa) {
    const auto delta = a.token_gate(x)[0];
    level_new = c.last.unsqueeze(-1) + at::cumsum(delta, -1);  // phi_t continues the walk
    prefix_min = std::get<0>(at::cummin(level_new, -1));
    bias_new = fpa::fpa_bias(level_new);
  } else if (kind == AttentionKind::Fox) {
    const auto log_f = a.token_gate(x)[0];
    level_new = c.last.unsqueeze(-1) + at::cumsum(log_f, -1);  // F_t
    bias_new = fpa::fox_bias(log_f);
  } else {
    bias_new = at::zeros({T, T}, opts).masked_fill(at::ones({T, T}, opts.dtype(at::kBool)).triu(1), kNegInf)
                   .expand({H, T, T});
  }
  const int64_t S = c.size;
  at::Tensor bias = bias_new;
  if (S > 0) {
    at::Tensor bias_old = at::zeros({H, T, S}, opts);
    if (kind == AttentionKind::Fpa) {
      // min over [j, t] = min(m_j over [j, i], min of the new levels up to t)
      bias_old = at::minimum(c.run_min.narrow(1, 0, S).unsqueeze(1), prefix_min.unsqueeze(-1)) -
                 c.level.narrow(1, 0, S).unsqueeze(1);
    } else if (kind == AttentionKind::Fox) {
      bias_old = level_new.unsqueeze(-1) - c.level.narrow(1, 0, S).unsqueeze(1);
    }
    bias_old = bias_old.masked_fill((c.pos.narrow(1, 0, S) < 0).unsqueeze(1), kNegInf);
    bias = at::cat({bias_old, bias_new}, -1);  // (H, T, S + T): small for T = 1
  }

  // The running minima of the cached keys now include the new levels.
  at::Tensor suffix_min;
  if (kind == AttentionKind::Fpa) {
    if (S > 0) {
      auto m = c.run_min.narrow(1, 0, S);
      m.copy_(at::minimum(m, prefix_min.select(1, T - 1).unsqueeze(-1)));
    }
    suffix_min = std::get<0>(at::cummin(level_new.flip(-1), -1)).flip(-1);
  }
  if (level_new.defined()) c.last = level_new.select(1, T - 1).clone();
  auto pos = at::arange(length_, length_ + T, opts.dtype(at::kLong)).unsqueeze(0).expand({H, T});
  append(c, k, v, pos, level_new, suffix_min);
  c.last_q = q.select(1, T - 1).clone();

  // Attend over the cache, which now ends with the new keys (no copy of the cache).
  const auto keys = c.k.narrow(1, 0, S + T), values = c.v.narrow(1, 0, S + T);
  const auto scores = at::matmul(q, keys.transpose(-1, -2)) * scale + bias;
  const auto out = at::matmul(at::softmax(scores, -1), values);  // (H, T, D)
  return a.o_proj(a.merge_heads(out.unsqueeze(0)));
}

at::Tensor IncrementalDecoder::step(const at::Tensor& tokens) {
  if (tokens.dim() != 1 || tokens.size(0) < 1)
    throw std::invalid_argument("decode: step takes a 1-D tensor of at least one token");
  // Inference mode skips autograd and version-counter bookkeeping: at one token per step the
  // per-operator overhead is a large part of the cost. Every use of the cache is in this mode.
  c10::InferenceMode inference;
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
  c10::InferenceMode inference;
  std::vector<HeadCacheView> out;
  for (size_t l = 0; l < cache_.size(); ++l) {
    const auto& c = cache_[l];
    const auto& cfg = model_->config;
    if (c.size == 0) {
      out.resize(out.size() + size_t(cfg.heads));
      continue;
    }
    const double scale = 1.0 / std::sqrt(double(cfg.head_dim()));
    const auto pos = c.pos.narrow(1, 0, c.size), k = c.k.narrow(1, 0, c.size);
    at::Tensor bias;
    if (cfg.kind == AttentionKind::Fpa) bias = c.run_min.narrow(1, 0, c.size) - c.level.narrow(1, 0, c.size);
    else if (cfg.kind == AttentionKind::Fox) bias = c.last.unsqueeze(-1) - c.level.narrow(1, 0, c.size);
    else bias = at::zeros(pos.sizes(), k.options());
    auto qk = (at::matmul(k, c.last_q.unsqueeze(-1)).squeeze(-1).abs() * scale)
                  .masked_fill(pos < 0, 0.0);
    auto r = std::get<0>(qk.max(-1)).to(at::kDouble);
    bias = bias.to(at::kDouble);
    for (int64_t h = 0; h < cfg.heads; ++h) {
      auto valid = (pos[h] >= 0).nonzero().squeeze(-1);
      HeadCacheView view;
      view.position = to_vector<int64_t>(pos[h].index_select(0, valid));
      view.bias = to_vector<double>(bias[h].index_select(0, valid));
      view.r = r[h].item<double>();
      out.push_back(std::move(view));
    }
  }
  return out;
}

void IncrementalDecoder::keep(const std::vector<std::vector<bool>>& keep) {
  c10::InferenceMode inference;
  const int64_t H = model_->config.heads;
  if (keep.size() != cache_.size() * size_t(H))
    throw std::invalid_argument("decode: keep needs one mask per layer and head");
  for (size_t l = 0; l < cache_.size(); ++l) {
    auto& c = cache_[l];
    if (c.size == 0) continue;
    // Indices (into the padded cache) of each head's kept entries.
    std::vector<at::Tensor> kept;
    int64_t width = 0;
    bool all = true;
    for (int64_t h = 0; h < H; ++h) {
      const auto valid = to_vector<int64_t>((c.pos[h].narrow(0, 0, c.size) >= 0).nonzero().squeeze(-1));
      const auto& mask = keep[l * size_t(H) + size_t(h)];
      if (mask.size() != valid.size())
        throw std::invalid_argument("decode: keep mask does not match the cache");
      std::vector<int64_t> idx;
      for (size_t s = 0; s < valid.size(); ++s)
        if (mask[s]) idx.push_back(valid[s]);
      all = all && int64_t(idx.size()) == c.size;
      width = std::max<int64_t>(width, int64_t(idx.size()));
      kept.push_back(at::tensor(idx, at::kLong));
    }
    if (all) continue;
    // Rebuild each tensor padded to the fullest head (padding has pos -1), with room to append.
    const int64_t capacity = width + std::max<int64_t>(64, width / 4);
    auto gather = [&](const at::Tensor& t, double fill) {
      if (!t.defined()) return t;
      auto shape = t.sizes().vec();
      shape[1] = capacity;
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
    c.size = width;
    c.capacity = capacity;
  }
}

int64_t IncrementalDecoder::cached_entries() const {
  c10::InferenceMode inference;
  int64_t n = 0;
  for (const auto& c : cache_)
    if (c.size > 0) n += (c.pos.narrow(1, 0, c.size) >= 0).sum().item<int64_t>();
  return n;
}

}  // namespace fpa::lm
