#include "lm/memory.h"

#include "experiments/cli.h"

#include <fmt/format.h>

namespace fpa::lm {

void require_sequence_length(int64_t tokens, const std::string& what) {
  if (tokens > kMaxSequenceLength)
    fail_usage(fmt::format("{}: {} tokens is longer than the longest sequence this suite runs ({})",
                           what, tokens, kMaxSequenceLength));
}

double parameter_count_of(const ModelConfig& c) {
  const double C = double(c.hidden), H = double(c.heads), M = double(c.mlp_width());
  const double per_layer = 4 * C * C + 3 * C * M + 2 * C + (has_gate(c.kind) ? C * H + H : 0);
  return double(c.vocab_size) * C * (c.tie_embeddings ? 1 : 2) + double(c.layers) * per_layer + C;
}

namespace {

constexpr double kFloat = 4;  // bytes; every model here is float32

// Activations of `batch` windows: kept for the backward pass per layer (training), about 8
// hidden-wide and 3 MLP-wide tensors per token and the reference kernel's (batch, heads, n, n)
// logits and weights; or one layer's worth at a time (a forward pass only). Logits: 2 x vocab.
double activation_bytes(const ModelConfig& c, int64_t batch, bool training) {
  const double tokens = double(batch) * double(c.context), layers = training ? double(c.layers) : 1;
  double acts = layers * tokens * (8 * double(c.hidden) + 3 * double(c.mlp_width())) * kFloat +
                tokens * double(c.vocab_size) * 2 * kFloat;
  if (c.impl == fpa::Impl::Reference)
    acts += layers * 2 * double(batch) * double(c.heads) * double(c.context) * double(c.context) * kFloat;
  return acts;
}

}  // namespace

void require_forward_memory(const ModelConfig& c, int64_t batch, const std::string& what) {
  const double weights = parameter_count_of(c) * kFloat, acts = activation_bytes(c, batch, false);
  require_memory(weights + acts, what,
                 fmt::format("weights {}; activations of {} x {} tokens {}", human_bytes(weights),
                             batch, c.context, human_bytes(acts)));
}

void require_training_memory(const ModelConfig& c, int64_t micro_batch, const std::string& what) {
  const double P = parameter_count_of(c), f = kFloat;
  const double state = 4 * P * f;  // weights, gradients, two AdamW moments
  const double acts = activation_bytes(c, micro_batch, true);
  require_memory(state + acts, what,
                 fmt::format("{:.3g} parameters: weights, gradients and AdamW state {}; activations "
                             "of {} x {} tokens {}",
                             P, human_bytes(state), micro_batch, c.context, human_bytes(acts)));
}

void require_decoding_memory(const ModelConfig& c, int64_t tokens, const std::string& what) {
  const double weights = parameter_count_of(c) * kFloat;
  const double cache = double(c.layers) * 2 * double(tokens) * double(c.hidden) * kFloat;
  require_memory(weights + cache, what,
                 fmt::format("weights {}, key-value cache of {} tokens {}", human_bytes(weights),
                             tokens, human_bytes(cache)));
}

}  // namespace fpa::lm
