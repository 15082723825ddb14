// KV-cache eviction policies for passkey decoding, as pure logic (no tensors).
//
// The decoder hands in, for every (layer, head), the absolute positions of its cached keys and
// each key's current bias b_ij at the query just processed (FPA: running path minimum minus the
// key's level; FoX: F_i - F_j; softmax kinds: 0), plus R = max_j |q_i . k_j| * scale over that
// head's cache. A policy answers which entries to keep. Evicted entries never come back: for FPA
// and FoX a bias can only fall as i grows (SPEC section 2, "dead forever").
//
//   full          : keep everything.
//   fpa-certified : drop keys with b_ij < -(2R + log(n / epsilon)), n = i + 1 (SPEC T5). Per head.
//   budget        : keep at most floor(budget * (entries a full cache would hold)) entries, dropping
//                   the lowest-bias keys first, ties broken by recency (older dropped first).
//                   Shared across all heads and layers by default, or per head (the name
//                   "budget-per-head" selects that). Every head always
//                   keeps its newest key (the current token, bias 0).
//   window        : the first `sinks` positions plus the last W positions (StreamingLLM). W is
//                   `window` when > 0, else budget * final_length - sinks, so that the window
//                   matches the budget's occupancy at the end of the sequence.
#pragma once

#include "lm/decode_cache_view.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fpa::passkey {

enum class PolicyKind { Full, FpaCertified, Budget, Window };

std::string to_string(PolicyKind kind);            // "full", "fpa-certified", "budget", "window"
PolicyKind parse_policy(const std::string& name);  // throws std::invalid_argument

struct PolicyConfig;
// A policy by its command-line name: full, fpa-certified (or certified), budget,
// budget-per-head, window. Throws std::invalid_argument on any other name.
PolicyConfig policy_named(const std::string& name);

struct PolicyConfig {
  PolicyKind kind = PolicyKind::Full;
  double epsilon = 1e-3;     // fpa-certified
  double budget = 0.25;      // budget, window: fraction of a full cache, in (0, 1]
  bool per_head = false;     // budget: per-head capacity instead of one shared pool
  int64_t sinks = 4;         // window
  int64_t window = 0;        // window: W; 0 derives it from budget and final_length
  void validate() const;     // throws std::invalid_argument
};

// One head's cache as the decoder reports it: positions, biases b_ij, R (lm/decode_cache_view.h).
using HeadCache = fpa::lm::HeadCacheView;

// Keep masks, one per head (heads in the order given: all layers' heads, flattened).
// `query` is the 0-based position i of the query just processed, so a full cache holds i + 1
// keys per head; `final_length` is the sequence's final length (window size derivation).
// `lookahead` is the number of tokens the decoder will append before it evicts again: budget
// and window then leave room for them, so that no query in between exceeds the budget
// (each new token adds one entry per head). Evicting every T tokens instead of after every
// token amortises the cost of eviction, which otherwise exceeds what a smaller cache saves.
std::vector<std::vector<bool>> select_keep(const PolicyConfig& config,
                                           const std::vector<HeadCache>& heads, int64_t query,
                                           int64_t final_length, int64_t lookahead = 0);


// Whether select_keep reads the views' R (fpa-certified), which costs the decoder a pass over
// every cached key (IncrementalDecoder::views(with_r)).
bool reads_r(const PolicyConfig& config);

// Kept entries over the entries a full cache would hold, summed over heads.
double occupancy(const std::vector<HeadCache>& heads, int64_t query);

}  // namespace fpa::passkey
