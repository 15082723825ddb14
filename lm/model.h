// The language model: decoder-only, pre-norm RMSNorm, SwiGLU MLP, one of four attention variants.
//
//   tokens (B, N) int64 -> Embedding -> [Block] x layers -> RMSNorm -> LM head -> logits (B, N, V)
//   Block: x = x + Attention(RMSNorm(x));  x = x + SwiGLU(RMSNorm(x))
//
// Attention variants (AttentionKind):
//   transformer  : softmax + RoPE on q and k (fpa::apply_rope)
//   softmax-nope : softmax, no positional encoding
//   fox          : forget gate log f_t = logsigmoid(gate_proj(x_t)) per head, no positional encoding
//   fpa          : increments delta_t = gate_proj(x_t) per head, field phi = cumsum(delta),
//                  bias min_{j<=l<=i} phi_l - phi_j (SPEC section 2), no positional encoding
// Every variant calls the one operator fpa::attention (kernels/attention.h).
//
// forward is overloaded (full sequence, or decoding with a cache), so call it as
// module->forward(...): LibTorch 1.13's ModuleHolder::operator() cannot pick an overload.
//
// This header is also the interface of the passkey area's incremental decoder (lm/INTERFACE.md):
// keep its public members stable; add, do not change.
#pragma once

#include "kernels/attention.h"
#include "kernels/cpu/kv_cache.h"

#include <torch/torch.h>

#include <string>

namespace fpa::lm {

enum class AttentionKind { Transformer, SoftmaxNope, Fox, Fpa };

std::string to_string(AttentionKind kind);           // "transformer", "softmax-nope", "fox", "fpa"
AttentionKind parse_attention_kind(const std::string& name);  // throws std::invalid_argument
// The operator variant an attention kind uses (Transformer and SoftmaxNope: Softmax).
fpa::Variant operator_variant(AttentionKind kind);
bool has_gate(AttentionKind kind);  // fox and fpa

struct ModelConfig {
  AttentionKind kind = AttentionKind::Fpa;
  int64_t vocab_size = 256;     // byte-level tokens
  int64_t hidden = 128;         // model width C
  int64_t layers = 2;
  int64_t heads = 4;            // head dim = hidden / heads
  int64_t mlp_hidden = 0;       // SwiGLU inner width; 0 means 8/3 * hidden rounded up to 32
  int64_t context = 256;        // training sequence length
  bool tie_embeddings = true;   // LM head shares the token embedding matrix
  double rope_base = 10000.0;   // transformer only
  double norm_eps = 1e-5;
  double init_std = 0.02;       // normal init of linear and embedding weights
  // Operator options (fpa::AttentionOptions): implementation and FPA's backward mode. The
  // implementation is a run setting (recorded in checkpoints, not compared on resume); the
  // backward mode and temperature shape the training and are compared.
  fpa::Impl impl = fpa::Impl::Reference;
  fpa::FpaBackward fpa_backward = fpa::FpaBackward::StraightThrough;
  double st_temperature = 1.0;

  int64_t head_dim() const { return hidden / heads; }
  int64_t mlp_width() const;
  // Throws std::invalid_argument when inconsistent (hidden % heads, even head dim for RoPE...).
  void validate() const;
};

// y = x / rms(x) * weight, over the last dimension.
struct RMSNormImpl : torch::nn::Module {
  RMSNormImpl(int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;
  double eps;
};
TORCH_MODULE(RMSNorm);

// SwiGLU: down(silu(gate(x)) * up(x)), no biases.
struct SwiGLUImpl : torch::nn::Module {
  SwiGLUImpl(int64_t dim, int64_t inner);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Linear gate{nullptr}, up{nullptr}, down{nullptr};
};
TORCH_MODULE(SwiGLU);

struct AttentionImpl : torch::nn::Module {
  explicit AttentionImpl(const ModelConfig& config);

  // x (B, N, C) -> (B, N, C). Causal over the N positions given, starting at position `offset`
  // (offset only moves RoPE's angles; the whole prefix must be in x).
  torch::Tensor forward(const torch::Tensor& x, int64_t offset = 0);
  // Decoding: x (1, T, C) holds the T tokens after those in `cache`; they are appended to it and
  // attend to what it keeps (fpa::attention_step with implementation `impl`).
  torch::Tensor forward(const torch::Tensor& x, fpa::KvCache& cache,
                        fpa::Impl impl = fpa::Impl::Fused);
  fpa::KvCache new_cache() const;  // empty, for this layer's variant, sizes and weight dtype
  // The same on the weights' device; tensor_ops: the tensor path even on the CPU (tests;
  // kernels/cpu/kv_cache.h). new_cache() is new_cache(false).
  fpa::KvCache new_cache(bool tensor_ops) const;

  // The pieces of forward, public so that an incremental decoder can reuse them:
  torch::Tensor split_heads(const torch::Tensor& x) const;   // (B, N, C) -> (B, H, N, D)
  torch::Tensor merge_heads(const torch::Tensor& x) const;   // (B, H, N, D) -> (B, N, C)
  // Per-token gate values (B, H, N) from the layer input x (B, N, C):
  //   fox: log forget gate log f_t (<= 0);  fpa: increment delta_t (any sign);
  //   softmax kinds: undefined tensor. Float32 under bf16 autocast (--precision bf16): the gate
  //   projection runs outside autocast, so the field and gates keep float32.
  torch::Tensor token_gate(const torch::Tensor& x);
  // What fpa::attention takes as `gate` from token_gate's output over a whole sequence:
  //   fox: the log forget gates themselves; fpa: the field phi = cumsum(delta) over N.
  torch::Tensor operator_gate(const torch::Tensor& token_gate_values) const;
  fpa::AttentionOptions attention_options() const;

  ModelConfig config;
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  torch::nn::Linear gate_proj{nullptr};  // C -> H with bias; null for the softmax kinds
};
TORCH_MODULE(Attention);

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& x, int64_t offset = 0);
  torch::Tensor forward(const torch::Tensor& x, fpa::KvCache& cache,
                        fpa::Impl impl = fpa::Impl::Fused);
  RMSNorm attn_norm{nullptr}, mlp_norm{nullptr};
  Attention attn{nullptr};
  SwiGLU mlp{nullptr};
};
TORCH_MODULE(Block);

struct LanguageModelImpl : torch::nn::Module {
  explicit LanguageModelImpl(const ModelConfig& config);

  // tokens (B, N) int64 in [0, vocab) -> logits (B, N, vocab).
  torch::Tensor forward(const torch::Tensor& tokens);
  // Decoding: tokens (1, T) follow those already in `caches` (one per layer, from new_caches());
  // returns their logits (1, T, vocab). With nothing evicted this equals forward() on the whole
  // sequence; lm/decode.h drives it with eviction policies (and takes lm/token_step.h, the same
  // computation on raw float32 rows, for a single token with the fused implementation).
  torch::Tensor forward(const torch::Tensor& tokens, std::vector<fpa::KvCache>& caches,
                        fpa::Impl impl = fpa::Impl::Fused);
  std::vector<fpa::KvCache> new_caches() const;  // in the dtype of the parameters
  // On the weights' device (every cache policy runs there); tensor_ops as in new_cache.
  std::vector<fpa::KvCache> new_caches(bool tensor_ops) const;
  // Mean next-token cross-entropy (nats) of tokens[:, 1:] given tokens[:, :-1]; tokens (B, N+1).
  torch::Tensor loss(const torch::Tensor& tokens);
  // The head applied to final hidden states (B, N, C) -> logits; used by decoders.
  torch::Tensor logits_from_hidden(const torch::Tensor& hidden);

  int64_t parameter_count() const;
  int64_t gate_parameter_count() const;  // the gate/increment projections only
  torch::Device device() const { return embed->weight.device(); }  // where the weights live
  // Moves the weights to `device` (--device) and, when the implementation the model was built or
  // saved with does not run there (fused on a GPU, cuda on the CPU), takes the device's own
  // (impl auto: kernels/impl_choice.h) in every layer. The identity is unchanged.
  void use_device(const torch::Device& device);

  ModelConfig config;
  torch::nn::Embedding embed{nullptr};
  std::vector<Block> blocks;
  RMSNorm final_norm{nullptr};
  torch::nn::Linear lm_head{nullptr};  // null when tie_embeddings (logits = h @ embed^T)
};
TORCH_MODULE(LanguageModel);

}  // namespace fpa::lm
