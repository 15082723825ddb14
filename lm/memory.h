// Memory estimates of a model's training and decoding, so that a size that cannot fit is refused
// up front (exit 2, with the estimate) instead of failing in an allocation minutes later.
// Lower bounds: parameters, optimiser state, the largest activations; a run that passes may still
// need more, but one that fails certainly does not fit.
#pragma once

#include "lm/model.h"

#include <string>

namespace fpa::lm {

// The longest sequence (bytes) any tool trains on or decodes: beyond it a run would take hours
// to days on this suite's models, and it is refused up front.
constexpr int64_t kMaxSequenceLength = 10'000'000;
// Exit 2 when `tokens` exceeds kMaxSequenceLength.
void require_sequence_length(int64_t tokens, const std::string& what);

// Parameters of a model with this configuration, without building it.
double parameter_count_of(const ModelConfig& c);

// Exit 2 unless training with `micro_batch` sequences of c.context tokens fits in memory.
void require_training_memory(const ModelConfig& c, int64_t micro_batch, const std::string& what);
// Exit 2 unless a forward pass (no gradients) over `batch` windows of c.context tokens fits.
void require_forward_memory(const ModelConfig& c, int64_t batch, const std::string& what);
// Exit 2 unless decoding one sequence of `tokens` tokens (full KV cache) fits in memory.
void require_decoding_memory(const ModelConfig& c, int64_t tokens, const std::string& what);

}  // namespace fpa::lm
