// What an eviction policy sees of one attention head's KV cache: plain numbers, no tensors, so
// that policies stay pure logic (lm/passkey/policy.h). fpa::KvCache (kernels/kv_cache.h) fills it.
#pragma once

#include <cstdint>
#include <vector>

namespace fpa {

struct CacheHeadView {
  std::vector<int64_t> position;  // absolute positions (0-based) of the cached keys, ascending
  std::vector<double> bias;       // b_ij at the last query i, one per cached key
  double r = 0.0;                 // max_j |q_i . k_j| * scale over the cache (T5's R); NaN
                                  // when the caller did not ask for it (KvCache::views)
};

}  // namespace fpa
