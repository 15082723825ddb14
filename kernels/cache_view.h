// What an eviction policy sees of one attention head's KV cache: plain numbers, no tensors, so
// that policies stay pure logic (lm/cache/policy.h). fpa::KvCache (kernels/cpu/kv_cache.h)
// fills it.
//
// The bias and positions are always there. Every other signal costs the cache a pass over the
// head's keys (or, for the accumulated mass, work at every query), so it is filled only when a
// policy asks for it (CacheSignals); an unrequested vector is empty and an unrequested number NaN.
#pragma once

#include <cstdint>
#include <vector>

namespace fpa {

// Which optional signals a caller wants in the views (each paid for only when asked).
struct CacheSignals {
  bool r = false;         // T5's R at the last query
  bool weight = false;    // attention weights at the last query
  bool mass = false;      // attention mass accumulated since each key entered (needs tracking)
  bool key_norm = false;  // ||k_j|| and ||q_i|| * scale
  CacheSignals& operator|=(const CacheSignals& o) {
    r |= o.r; weight |= o.weight; mass |= o.mass; key_norm |= o.key_norm;
    return *this;
  }
};

struct CacheHeadView {
  std::vector<int64_t> position;  // absolute positions (0-based) of the cached keys, ascending
  std::vector<double> bias;       // b_ij at the last query i, one per cached key
  double r = 0.0;                 // max_j |q_i . k_j| * scale over the cache (T5's R); NaN
                                  // when the caller did not ask for it (KvCache::views)
  std::vector<double> weight;     // softmax weight of each key at the last query i
  std::vector<double> mass;       // sum of the key's weights over the queries since it entered
                                  // (or since the last KvCache::reset_mass)
  std::vector<double> key_norm;   // ||k_j|| (post-RoPE keys, as cached)
  double q_norm = 0.0;            // ||q_i|| * scale (NaN unless key_norm was asked for)
};

}  // namespace fpa
