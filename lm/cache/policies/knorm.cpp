// knorm (Devoto et al. 2024, kvpress's KnormPress): per head, keep the keys of smallest L2
// norm (low-norm keys draw high attention), and the newest key. Needs no attention weights.
#include "lm/cache/select.h"

namespace fpa::cache {
namespace {

class Knorm : public Policy {
 public:
  using Policy::Policy;
  std::string name() const override { return "knorm"; }
  Signals reads() const override { Signals s; s.key_norm = true; return s; }
  Keep select(const Context& c) const override {
    auto score = scores_of(c.heads, &HeadView::key_norm);
    for (auto& head : score)
      for (auto& x : head) x = -x;  // the smallest norms first
    return keep_newest_and_top_per_head(c, score, settings().budget);
  }
};

}  // namespace

Registration register_knorm() {
  return {"knorm", "KNorm: the keys of smallest norm, per head",
          [](const Settings& s) { return std::make_unique<Knorm>(s); }};
}

}  // namespace fpa::cache
