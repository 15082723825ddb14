#include "lm/token_step.h"

#include "kernels/cpu/fused_gemm.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace fpa::lm {
namespace {

// A parameter's float32 data (token_step_applies checked the dtype).
const float* data(const torch::Tensor& t) {
  if (!t.is_contiguous()) throw std::invalid_argument("model: token_step needs contiguous parameters");
  return t.data_ptr<float>();
}

// y = W x for a torch::nn::Linear without bias (weight: out x in, row-major).
void linear(const torch::nn::Linear& l, const float* x, float* y) {
  const auto& w = l->weight;
  fused::gemv_n(w.size(0), w.size(1), 1.0f, data(w), w.size(1), x, y);
}

// RMSNormImpl::forward on one row: y = x / sqrt(mean(x^2) + eps) * weight.
void rms_norm(const RMSNormImpl& norm, const float* x, float* y, int64_t n) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * double(x[i]);
  const float r = float(1.0 / std::sqrt(ss / double(n) + norm.eps));
  const float* w = data(norm.weight);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * r * w[i];
}

// Scratch rows for one step, reused across steps (one decoding thread).
struct Rows {
  std::vector<float> x, h, q, k, v, att, proj, a, u, z;
  std::vector<double> gate;
};

// BlockImpl::forward(x, cache) on one row: x += Attention(RMSNorm(x)); x += SwiGLU(RMSNorm(x)).
void block_step(BlockImpl& block, const ModelConfig& c, fpa::KvCache& cache, Rows& r) {
  const int64_t C = c.hidden, H = c.heads;
  auto& attn = *block.attn;
  rms_norm(*block.attn_norm, r.x.data(), r.h.data(), C);
  linear(attn.q_proj, r.h.data(), r.q.data());
  linear(attn.k_proj, r.h.data(), r.k.data());
  linear(attn.v_proj, r.h.data(), r.v.data());
  if (c.kind == AttentionKind::Transformer) {  // RoPE at this token's position, fpa::apply_rope's
    const int64_t D = c.head_dim();
    for (auto* row : {&r.q, &r.k}) {
      auto t = torch::from_blob(row->data(), {H, 1, D}, torch::kFloat);
      t.copy_(fpa::apply_rope(t, cache.length(), c.rope_base));
    }
  }
  const double* gate = nullptr;
  if (attn.gate_proj) {
    const auto& w = attn.gate_proj->weight;
    fused::gemv_n(H, C, 1.0f, data(w), C, r.h.data(), r.z.data());
    const float* b = data(attn.gate_proj->bias);
    for (int64_t h = 0; h < H; ++h) {
      const float z = r.z[size_t(h)] + b[h];
      // FoX: log f_t = logsigmoid(z); FPA: the walk phi_t = phi_{t-1} + delta_t continues from
      // the cache's last level (AttentionImpl::forward(x, cache) does the same in float).
      r.gate[size_t(h)] = c.kind == AttentionKind::Fox
                              ? double(std::min(z, 0.0f) - std::log1p(std::exp(-std::abs(z))))
                              : double(float(cache.last_level(h)) + z);
    }
    gate = r.gate.data();
  }
  fpa::attention_step_token(cache, r.q.data(), r.k.data(), r.v.data(), gate,
                            attn.attention_options().scale, r.att.data());
  linear(attn.o_proj, r.att.data(), r.proj.data());
  for (int64_t i = 0; i < C; ++i) r.x[size_t(i)] += r.proj[size_t(i)];

  auto& mlp = *block.mlp;
  rms_norm(*block.mlp_norm, r.x.data(), r.h.data(), C);
  linear(mlp.gate, r.h.data(), r.a.data());
  linear(mlp.up, r.h.data(), r.u.data());
  for (size_t i = 0; i < r.a.size(); ++i) {
    const float a = r.a[i];
    r.a[i] = a / (1.0f + std::exp(-a)) * r.u[i];  // silu(gate) * up
  }
  linear(mlp.down, r.a.data(), r.proj.data());
  for (int64_t i = 0; i < C; ++i) r.x[size_t(i)] += r.proj[size_t(i)];
}

}  // namespace

bool token_step_applies(const LanguageModelImpl& model) {
  return !torch::GradMode::is_enabled() && model.embed->weight.scalar_type() == torch::kFloat &&
         model.embed->weight.device().is_cpu();
}

void token_step(LanguageModelImpl& model, int64_t token, std::vector<fpa::KvCache>& caches,
                float* logits) {
  const auto& c = model.config;
  if (token < 0 || token >= c.vocab_size)
    throw std::invalid_argument(fmt::format("model: token {} outside [0, {})", token, c.vocab_size));
  const int64_t C = c.hidden, I = c.mlp_width();
  thread_local Rows r;
  for (auto* row : {&r.x, &r.h, &r.q, &r.k, &r.v, &r.att, &r.proj}) row->resize(size_t(C));
  r.a.resize(size_t(I));
  r.u.resize(size_t(I));
  r.z.resize(size_t(c.heads));
  r.gate.resize(size_t(c.heads));

  const float* e = data(model.embed->weight) + token * C;
  r.x.assign(e, e + C);
  for (size_t l = 0; l < model.blocks.size(); ++l) block_step(*model.blocks[l], c, caches[l], r);
  rms_norm(*model.final_norm, r.x.data(), r.h.data(), C);
  if (model.lm_head)
    linear(model.lm_head, r.h.data(), logits);
  else
    fused::gemv_n(c.vocab_size, C, 1.0f, data(model.embed->weight), C, r.h.data(), logits);
}

torch::Tensor token_step(LanguageModelImpl& model, int64_t token,
                         std::vector<fpa::KvCache>& caches) {
  auto logits = torch::empty({1, 1, model.config.vocab_size}, torch::kFloat);
  token_step(model, token, caches, logits.data_ptr<float>());
  return logits;
}

}  // namespace fpa::lm
