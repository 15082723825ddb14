// The certified eviction threshold of theorem T5 (docs/SPEC.md, theory/THEORY.md), the one home
// of the formula: the theory suite checks it, the passkey cache policies and probe use it.
//
// At a query i with n = i + 1 cached keys, if every logit satisfies |alpha q_i . k_j| <= R, then
// dropping the keys with bias b_ij < -(2R + log(n / eps)) changes the attention output by at
// most 2 eps max_j |v_j|. FPA's and FoX's biases never rise as i grows, so a dropped key stays
// droppable for later queries whose R is no larger ("dead forever"). Pure arithmetic: no tensors.
#pragma once

#include <cmath>
#include <cstdint>

namespace fpa {

inline double certified_eviction_threshold(double r, int64_t n, double eps) {
  return -(2.0 * r + std::log(double(n) / eps));
}

}  // namespace fpa
