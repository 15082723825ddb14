#include "fused_cpu.h"

#include <stdexcept>

namespace fpa {

// Placeholder until the fused kernels land (issue 3): fails loudly rather than silently
// falling back to the reference.
at::Tensor fused_attention_cpu(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                               const at::Tensor&, const AttentionOptions&) {
  throw std::invalid_argument("attention: impl 'fused' is not implemented yet");
}

}  // namespace fpa
