// What a KV-cache eviction policy sees of one attention head's cache: no tensors, so policies
// stay pure logic (lm/passkey/policy.h) and the decoder (lm/decode.h) fills it in.
#pragma once

#include <cstdint>
#include <vector>

namespace fpa::lm {

struct HeadCacheView {
  std::vector<int64_t> position;  // absolute positions (0-based) of the cached keys
  std::vector<double> bias;       // b_ij at the last processed query i, one per cached key
  double r = 0.0;                 // max_j |q_i . k_j| * scale over the cache
};

}  // namespace fpa::lm
