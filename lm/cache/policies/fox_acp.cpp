// fox-acp: FoX's Adaptive Computation Pruning threshold (Lin et al., "Adaptive Computation
// Pruning for the Forgetting Transformer"): drop keys with
//   b_ij < -(2 max|q| max|k| / sqrt(d) + log T) + log epsilon,
// which bounds the pruned attention mass by epsilon. Online, per head, at the current query:
// max|q| = ||q_i||, max|k| = the largest cached key norm, T = i + 1. It is fpa-certified's
// threshold with R replaced by its Cauchy-Schwarz bound ||q_i|| max_j ||k_j|| / sqrt(d) >= R,
// so it never keeps fewer keys than fpa-certified at the same epsilon.
#include "kernels/eviction.h"
#include "lm/cache/select.h"

#include <algorithm>

namespace fpa::cache {
namespace {

class FoxAcp : public Policy {
 public:
  using Policy::Policy;
  bool reads_epsilon() const override { return true; }
  bool needs_bias() const override { return true; }
  std::string name() const override { return "fox-acp"; }
  bool budgeted() const override { return false; }
  Signals reads() const override { Signals s; s.key_norm = true; return s; }
  Keep select(const Context& c) const override {
    auto keep = keep_all(c.heads, false);
    for (size_t h = 0; h < c.heads.size(); ++h) {
      const auto& v = c.heads[h];
      if (v.position.empty()) continue;
      const double r = v.q_norm * *std::max_element(v.key_norm.begin(), v.key_norm.end());
      const double t = certified_eviction_threshold(r, c.query + 1, settings().epsilon);
      for (size_t e = 0; e < v.bias.size(); ++e) keep[h][e] = v.bias[e] >= t;
    }
    return keep;
  }
};

}  // namespace

Registration register_fox_acp() {
  return {"fox-acp", "FoX's pruning threshold (norm bound on the logits), epsilon as fpa-certified",
          [](const Settings& s) { return std::make_unique<FoxAcp>(s); }};
}

}  // namespace fpa::cache
