// Which attention implementation a caller uses: "reference", "fused", "cuda", or "auto" (fused
// when this build's fused CPU kernel runs for the variant, reference otherwise). Every tool's
// --impl takes these names with the default "auto".
#pragma once

#include "kernels/attention.h"

#include <string>

namespace fpa {

// Throws std::invalid_argument on an unknown name.
Impl choose_impl(const std::string& name, Variant variant, MinGrad min_grad);

}  // namespace fpa
