#include "lm/model.h"

#include "experiments/execution.h"
#include "kernels/impl_choice.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace fpa::lm {

std::string to_string(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::Transformer: return "transformer";
    case AttentionKind::SoftmaxNope: return "softmax-nope";
    case AttentionKind::Fox: return "fox";
    case AttentionKind::Fpa: return "fpa";
  }
  return "?";
}

AttentionKind parse_attention_kind(const std::string& name) {
  for (auto k : {AttentionKind::Transformer, AttentionKind::SoftmaxNope, AttentionKind::Fox,
                 AttentionKind::Fpa})
    if (to_string(k) == name) return k;
  throw std::invalid_argument(fmt::format(
      "unknown variant '{}' (expected transformer, softmax-nope, fox or fpa)", name));
}

fpa::Variant operator_variant(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::Fox: return fpa::Variant::Fox;
    case AttentionKind::Fpa: return fpa::Variant::Fpa;
    default: return fpa::Variant::Softmax;
  }
}

bool has_gate(AttentionKind kind) {
  return kind == AttentionKind::Fox || kind == AttentionKind::Fpa;
}

int64_t ModelConfig::mlp_width() const {
  if (mlp_hidden > 0) return mlp_hidden;
  const int64_t w = (8 * hidden + 2) / 3;
  return (w + 31) / 32 * 32;
}

void ModelConfig::validate() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("model config: " + what);
  };
  need(vocab_size > 0 && hidden > 0 && layers > 0 && heads > 0 && context > 0,
       "sizes must be positive");
  need(hidden % heads == 0, fmt::format("hidden {} not divisible by heads {}", hidden, heads));
  need(kind != AttentionKind::Transformer || head_dim() % 2 == 0,
       "RoPE needs an even head dimension");
  need(st_temperature > 0, "straight-through temperature must be > 0");
}

// --- RMSNorm, SwiGLU -----------------------------------------------------------------------

RMSNormImpl::RMSNormImpl(int64_t dim, double eps_) : eps(eps_) {
  weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * weight;
}

namespace {
torch::nn::Linear linear(int64_t in, int64_t out, bool bias = false) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}
}  // namespace

SwiGLUImpl::SwiGLUImpl(int64_t dim, int64_t inner) {
  gate = register_module("gate", linear(dim, inner));
  up = register_module("up", linear(dim, inner));
  down = register_module("down", linear(inner, dim));
}

torch::Tensor SwiGLUImpl::forward(const torch::Tensor& x) {
  return down(torch::silu(gate(x)) * up(x));
}

// --- Attention -----------------------------------------------------------------------------

AttentionImpl::AttentionImpl(const ModelConfig& c) : config(c) {
  q_proj = register_module("q_proj", linear(c.hidden, c.hidden));
  k_proj = register_module("k_proj", linear(c.hidden, c.hidden));
  v_proj = register_module("v_proj", linear(c.hidden, c.hidden));
  o_proj = register_module("o_proj", linear(c.hidden, c.hidden));
  if (has_gate(c.kind)) gate_proj = register_module("gate_proj", linear(c.hidden, c.heads, true));
}

torch::Tensor AttentionImpl::split_heads(const torch::Tensor& x) const {
  const auto B = x.size(0), N = x.size(1);
  return x.view({B, N, config.heads, config.head_dim()}).transpose(1, 2);
}

torch::Tensor AttentionImpl::merge_heads(const torch::Tensor& x) const {
  const auto B = x.size(0), N = x.size(2);
  return x.transpose(1, 2).contiguous().view({B, N, config.hidden});
}

torch::Tensor AttentionImpl::token_gate(const torch::Tensor& x) {
  if (!gate_proj) return {};
  fpa::Float32Region float32;  // bf16 autocast: the field and the gates stay float32
  const bool low = x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kHalf;
  auto g = gate_proj(low ? x.to(at::kFloat) : x).transpose(1, 2);  // (B, H, N)
  return config.kind == AttentionKind::Fox ? torch::log_sigmoid(g) : g;
}

torch::Tensor AttentionImpl::operator_gate(const torch::Tensor& token_gate_values) const {
  if (!token_gate_values.defined()) return {};
  if (config.kind == AttentionKind::Fpa) return fpa::fpa_field_from_increments(token_gate_values);
  return token_gate_values;
}

fpa::AttentionOptions AttentionImpl::attention_options() const {
  fpa::AttentionOptions o;
  o.variant = operator_variant(config.kind);
  o.impl = config.impl;
  o.fpa_backward = config.fpa_backward;
  o.st_temperature = config.st_temperature;
  return o;
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, int64_t offset) {
  auto q = split_heads(q_proj(x)), k = split_heads(k_proj(x)), v = split_heads(v_proj(x));
  if (config.kind == AttentionKind::Transformer) {
    q = fpa::apply_rope(q, offset, config.rope_base);
    k = fpa::apply_rope(k, offset, config.rope_base);
  }
  const auto gate = operator_gate(token_gate(x));  // float32: the field's cumsum of float32 increments
  return o_proj(merge_heads(fpa::attention(q, k, v, gate, attention_options())));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, fpa::KvCache& cache, fpa::Impl impl) {
  auto q = split_heads(q_proj(x))[0], k = split_heads(k_proj(x))[0], v = split_heads(v_proj(x))[0];
  if (config.kind == AttentionKind::Transformer) {
    q = fpa::apply_rope(q, cache.length(), config.rope_base);
    k = fpa::apply_rope(k, cache.length(), config.rope_base);
  }
  auto gate = token_gate(x);
  if (gate.defined()) gate = gate[0];  // (H, T)
  // The walk phi_t = phi_{t-1} + delta_t continues from the cache's last level.
  if (config.kind == AttentionKind::Fpa)
    gate = cache.last_levels().to(gate.device(), gate.scalar_type()).unsqueeze(-1) +
           at::cumsum(gate, -1);
  auto opts = attention_options();
  opts.impl = impl;
  const auto out = fpa::attention_step(q, k, v, gate, cache, opts);  // (H, T, D)
  return o_proj(merge_heads(out.unsqueeze(0)));
}

fpa::KvCache AttentionImpl::new_cache() const { return new_cache(false); }

fpa::KvCache AttentionImpl::new_cache(bool tensor_ops) const {
  return fpa::KvCache(operator_variant(config.kind), config.heads, config.head_dim(),
                      config.head_dim(), q_proj->weight.scalar_type(), q_proj->weight.device(),
                      tensor_ops);
}

// --- Block, model --------------------------------------------------------------------------

BlockImpl::BlockImpl(const ModelConfig& c) {
  attn_norm = register_module("attn_norm", RMSNorm(c.hidden, c.norm_eps));
  attn = register_module("attn", Attention(c));
  mlp_norm = register_module("mlp_norm", RMSNorm(c.hidden, c.norm_eps));
  mlp = register_module("mlp", SwiGLU(c.hidden, c.mlp_width()));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, int64_t offset) {
  auto h = x + attn->forward(attn_norm(x), offset);
  return h + mlp(mlp_norm(h));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, fpa::KvCache& cache, fpa::Impl impl) {
  auto h = x + attn->forward(attn_norm(x), cache, impl);
  return h + mlp(mlp_norm(h));
}

namespace {

// Weights N(0, init_std); residual output projections scaled by 1/sqrt(2 * layers) (GPT-2).
// Gate projections, following FoX's code: weight N(0, init_std), bias 0, i.e. forget gates
// f = sigmoid(~0) ~ 1/2 at the start. FPA's increment projection starts at the first-order
// expansion of FoX's log gate around that point: logsigmoid(z) ~ -log 2 + z/2, so weight
// N(0, init_std / 2) and bias -log 2. Its increments are then all negative (|w.x| << log 2),
// and by T1 (SPEC section 3) FPA starts as the FoX model it is compared with, to first order.
void init_weights(LanguageModelImpl& m) {
  torch::NoGradGuard no_grad;
  const auto& c = m.config;
  const double std = c.init_std, resid_std = c.init_std / std::sqrt(2.0 * c.layers);
  m.embed->weight.normal_(0.0, std);
  if (m.lm_head) m.lm_head->weight.normal_(0.0, std);
  for (auto& b : m.blocks) {
    auto& a = *b->attn;
    for (auto* l : {&a.q_proj, &a.k_proj, &a.v_proj}) (*l)->weight.normal_(0.0, std);
    a.o_proj->weight.normal_(0.0, resid_std);
    b->mlp->gate->weight.normal_(0.0, std);
    b->mlp->up->weight.normal_(0.0, std);
    b->mlp->down->weight.normal_(0.0, resid_std);
    if (a.gate_proj) {
      const bool fpa = c.kind == AttentionKind::Fpa;
      a.gate_proj->weight.normal_(0.0, fpa ? std / 2 : std);
      a.gate_proj->bias.fill_(fpa ? -std::log(2.0) : 0.0);
    }
  }
}

}  // namespace

LanguageModelImpl::LanguageModelImpl(const ModelConfig& c) : config(c) {
  c.validate();
  embed = register_module("embed", torch::nn::Embedding(c.vocab_size, c.hidden));
  for (int64_t l = 0; l < c.layers; ++l)
    blocks.push_back(register_module(fmt::format("block{}", l), Block(c)));
  final_norm = register_module("final_norm", RMSNorm(c.hidden, c.norm_eps));
  if (!c.tie_embeddings) lm_head = register_module("lm_head", linear(c.hidden, c.vocab_size));
  init_weights(*this);
}

torch::Tensor LanguageModelImpl::logits_from_hidden(const torch::Tensor& hidden) {
  const auto h = final_norm(hidden);
  return lm_head ? lm_head(h) : torch::matmul(h, embed->weight.t());
}

torch::Tensor LanguageModelImpl::forward(const torch::Tensor& tokens) {
  auto x = embed(tokens);
  for (auto& b : blocks) x = b->forward(x);
  return logits_from_hidden(x);
}

torch::Tensor LanguageModelImpl::forward(const torch::Tensor& tokens,
                                         std::vector<fpa::KvCache>& caches, fpa::Impl impl) {
  if (caches.size() != blocks.size())
    throw std::invalid_argument("model: forward with a cache needs one cache per layer");
  auto x = embed(tokens);
  for (size_t l = 0; l < blocks.size(); ++l) x = blocks[l]->forward(x, caches[l], impl);
  return logits_from_hidden(x);
}

std::vector<fpa::KvCache> LanguageModelImpl::new_caches() const { return new_caches(false); }

std::vector<fpa::KvCache> LanguageModelImpl::new_caches(bool tensor_ops) const {
  std::vector<fpa::KvCache> caches;
  for (const auto& b : blocks) caches.push_back(b->attn->new_cache(tensor_ops));
  return caches;
}

torch::Tensor LanguageModelImpl::loss(const torch::Tensor& tokens) {
  const auto N = tokens.size(1) - 1;
  const auto logits = forward(tokens.narrow(1, 0, N));
  const auto target = tokens.narrow(1, 1, N);
  return torch::nn::functional::cross_entropy(logits.reshape({-1, config.vocab_size}),
                                              target.reshape({-1}));
}

void LanguageModelImpl::use_device(const torch::Device& device) {
  to(device);
  const bool gpu = device.is_cuda();
  if (config.impl == fpa::Impl::Reference || (config.impl == fpa::Impl::Cuda) == gpu) return;
  config.impl = fpa::resolve_impl("auto", device.type());
  for (auto& b : blocks) b->attn->config.impl = config.impl;
}

int64_t LanguageModelImpl::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

int64_t LanguageModelImpl::gate_parameter_count() const {
  int64_t n = 0;
  for (const auto& b : blocks)
    if (b->attn->gate_proj)
      for (const auto& p : b->attn->gate_proj->parameters()) n += p.numel();
  return n;
}

}  // namespace fpa::lm
