#include "model.h"

#include "experiments/execution.h"

namespace fpa::synthetic {

TargetSetModelImpl::TargetSetModelImpl(const ModelConfig& c) : config_(c) {
  namespace nn = torch::nn;
  const int64_t hd = c.heads * c.head_dim;
  type_embed_ = register_module("type_embed", nn::Embedding(c.num_types, c.embed));
  payload_embed_ = register_module("payload_embed", nn::Embedding(c.payload_values, c.embed));
  wq_ = register_module("wq", nn::Linear(nn::LinearOptions(c.embed, hd).bias(false)));
  wk_ = register_module("wk", nn::Linear(nn::LinearOptions(c.embed, hd).bias(false)));
  wv_ = register_module("wv", nn::Linear(nn::LinearOptions(c.embed, hd).bias(false)));
  readout_ = register_module("readout", nn::Linear(hd, c.payload_dim));
  if (c.attention.variant != Variant::Softmax) {
    gate_ = register_module("gate", nn::Linear(c.embed, c.heads));
    torch::NoGradGuard no_grad;
    if (c.attention.variant == Variant::Fpa) gate_->bias.fill_(c.increment_bias_init);
    if (c.attention.variant == Variant::Fox && c.fox_gate_bias_set)
      gate_->bias.fill_(c.fox_gate_bias_init);
  }
}

ModelOutput TargetSetModelImpl::forward(const at::Tensor& types, const at::Tensor& payloads) {
  const int64_t b = types.size(0), n = types.size(1);
  const auto& c = config_;
  auto x = type_embed_(types) + payload_embed_(payloads);  // (B, N, E)
  auto heads = [&](const at::Tensor& t) {                  // (B, N, H*D) -> (B, H, N, D)
    return t.view({b, n, c.heads, c.head_dim}).permute({0, 2, 1, 3}).contiguous();
  };
  ModelOutput out;
  out.q = heads(wq_(x));
  out.k = heads(wk_(x));
  auto v = heads(wv_(x));
  {
    Float32Region float32;  // bf16 autocast: the field and the gates stay float32
    if (c.attention.variant == Variant::Fox) {
      out.gate = torch::log_sigmoid(gate_(x)).transpose(1, 2).contiguous();
    } else if (c.attention.variant == Variant::Fpa) {
      out.gate = fpa_field_from_increments(gate_(x).transpose(1, 2)).contiguous();
    }
  }
  auto o = attention(out.q, out.k, v, out.gate, forward_options());  // (B, H, N, D)
  out.y = readout_(o.permute({0, 2, 1, 3}).reshape({b, n, c.heads * c.head_dim}));
  return out;
}

at::Tensor TargetSetModelImpl::attention_weights(const ModelOutput& out) const {
  const auto s = out.q.sizes();
  auto eye = at::eye(s[2], out.q.options()).expand({s[0], s[1], s[2], s[2]}).contiguous();
  return attention(out.q, out.k, eye, out.gate, forward_options());
}

AttentionOptions TargetSetModelImpl::forward_options() const {
  // Without autograd the backward rule is irrelevant and both rules share the exact forward;
  // the exact one skips the soft minimum's extra work.
  auto o = config_.attention;
  if (!at::GradMode::is_enabled()) o.fpa_backward = FpaBackward::Exact;
  return o;
}

}  // namespace fpa::synthetic
