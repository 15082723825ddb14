// fpa-certified: drop keys with b_ij < -(2R + log(n / epsilon)), n = i + 1 (SPEC T5), per head,
// R = max_j |q_i . k_j| * scale at the current query. No budget: the certificate decides.
#include "kernels/eviction.h"
#include "lm/cache/select.h"

namespace fpa::cache {
namespace {

class FpaCertified : public Policy {
 public:
  using Policy::Policy;
  bool reads_epsilon() const override { return true; }
  std::string name() const override { return "fpa-certified"; }
  bool budgeted() const override { return false; }
  Signals reads() const override { Signals s; s.r = true; return s; }
  Keep select(const Context& c) const override {
    auto keep = keep_all(c.heads, false);
    for (size_t h = 0; h < c.heads.size(); ++h) {
      const double t = certified_eviction_threshold(c.heads[h].r, c.query + 1, settings().epsilon);
      for (size_t e = 0; e < c.heads[h].bias.size(); ++e) keep[h][e] = c.heads[h].bias[e] >= t;
    }
    return keep;
  }
};

}  // namespace

Registration register_fpa_certified() {
  return {"fpa-certified", "T5's certified eviction: keys whose weight provably stays below epsilon",
          [](const Settings& s) { return std::make_unique<FpaCertified>(s); }};
}

}  // namespace fpa::cache
