#include "kernels/impl_choice.h"

#include <ATen/ATen.h>

namespace fpa {

Impl choose_impl(const std::string& name, Variant variant, MinGrad min_grad) {
  if (name != "auto") return fpa::parse_impl(name);
  // Probe: a forward and backward pass on a small input. Any exception (for example "not
  // implemented yet") means the fused kernel is not usable here.
  try {
    auto q = at::randn({1, 1, 4, 2}, at::kFloat).requires_grad_(true);
    auto gate = variant == fpa::Variant::Softmax ? at::Tensor()
                                                 : -at::rand({1, 1, 4}, at::kFloat);
    fpa::AttentionOptions o;
    o.variant = variant;
    o.impl = fpa::Impl::Fused;
    o.min_grad = min_grad;
    fpa::attention(q, q, q, gate, o).sum().backward();
    return fpa::Impl::Fused;
  } catch (const std::exception&) {
    return fpa::Impl::Reference;
  }
}

}  // namespace fpa
