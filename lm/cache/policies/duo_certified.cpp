// duo-certified: DuoAttention's head-level allocation with FPA's certificate as the head score
// and no calibration. A head's score is the fraction of a full cache's keys (i + 1) that T5's
// threshold (fpa-certified, epsilon) keeps alive among its cached entries: a keep-everything
// head (bias 0 everywhere) scores 1, a local head the few keys above its threshold. The
// allocation is made once, at the first eviction that drops keys, and kept: a head that still
// holds every key it has seen ranks above every head that lost some, as DuoAttention fixes its
// heads before decoding. (Ranking by the score alone let a full local head, whose few alive keys
// are old, lose its cache to a window head whose recent keys are all alive, after which neither
// held a full cache.) The best-ranked heads keep everything, the others sinks +
// settings().duo_window recent keys; how many keep everything follows from the budget
// (lm/cache/select.h). For variants whose bias only falls (FPA, FoX); softmax's bias is 0, so
// every head ties.
#include "kernels/eviction.h"
#include "lm/cache/select.h"

namespace fpa::cache {
namespace {

class DuoCertified : public Policy {
 public:
  using Policy::Policy;
  bool reads_epsilon() const override { return true; }
  bool needs_bias() const override { return true; }
  std::string name() const override { return "duo-certified"; }
  Signals reads() const override { Signals s; s.r = true; return s; }
  Keep select(const Context& c) const override {
    const auto& s = settings();
    std::vector<double> score(c.heads.size());
    for (size_t h = 0; h < c.heads.size(); ++h) {
      const double t = certified_eviction_threshold(c.heads[h].r, c.query + 1, s.epsilon);
      int64_t alive = 0;
      for (double b : c.heads[h].bias) alive += b >= t;
      const bool holds_every_key = int64_t(c.heads[h].bias.size()) == c.query + 1;
      score[h] = double(alive) / double(c.query + 1) + (holds_every_key ? 1.0 : 0.0);
    }
    const int64_t full = duo_full_heads(s.budget, int64_t(c.heads.size()), c.final_length,
                                        s.sinks + s.duo_window);
    return keep_retrieval_heads(c, score, full, s.sinks, s.duo_window);
  }
};

}  // namespace

Registration register_duo_certified() {
  return {"duo-certified", "DuoAttention's full-or-window heads, chosen by FPA's certificate (no calibration)",
          [](const Settings& s) { return std::make_unique<DuoCertified>(s); }};
}

}  // namespace fpa::cache
