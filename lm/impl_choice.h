// Which attention implementation a model uses: "reference", "fused", or "auto" (fused when this
// build's fused CPU kernel runs for the variant, reference otherwise).
#pragma once

#include "kernels/attention.h"

#include <string>

namespace fpa::lm {

// Throws std::invalid_argument on an unknown name.
fpa::Impl choose_impl(const std::string& name, fpa::Variant variant, fpa::MinGrad min_grad);

}  // namespace fpa::lm
