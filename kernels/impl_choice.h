// Which attention implementation a caller uses: "reference", "fused", "cuda", or "auto" (fused
// when this build's fused CPU kernel supports the variant and backward mode, reference
// otherwise). Every tool's --impl takes these names with the default "auto".
//
// What each implementation supports is a table (impl_choice.cpp), answered without running a
// kernel, so choosing draws no random numbers and a tool can refuse an unsupported combination
// when it parses its options instead of at the first backward pass.
#pragma once

#include "kernels/attention.h"

#include <string>

namespace fpa {

// Empty when `impl` in this build runs `variant`'s forward pass and its backward pass with
// `fpa_backward`; otherwise why not, as one line ("cuda: FPA's straight-through backward is not
// implemented on the GPU").
std::string unsupported(Impl impl, Variant variant, FpaBackward fpa_backward);

// "auto" -> Fused when supported, else Reference; a named implementation must be supported.
// Throws std::invalid_argument on an unknown name or an unsupported combination.
Impl choose_impl(const std::string& name, Variant variant, FpaBackward fpa_backward);

}  // namespace fpa
