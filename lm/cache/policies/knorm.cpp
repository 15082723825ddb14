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
    auto keep = keep_all(c.heads, false);
    keep_newest(c.heads, keep);
    Scores score;
    for (const auto& h : c.heads) {
      score.emplace_back(h.key_norm.size());
      for (size_t e = 0; e < h.key_norm.size(); ++e) score.back()[e] = -h.key_norm[e];
    }
    keep_top_per_head(c.heads, score, capacity_ahead(settings().budget, c.query + 1, c.lookahead, 1) - 1, keep);
    return keep;
  }
};

}  // namespace

Registration register_knorm() {
  return {"knorm", "KNorm: the keys of smallest norm, per head",
          [](const Settings& s) { return std::make_unique<Knorm>(s); }};
}

}  // namespace fpa::cache
