// budget: keep at most budget x (entries a full cache would hold), dropping the lowest-bias keys
// first, ties by recency (older dropped first), in one pool shared by every head and layer;
// every head keeps its newest key (the current token, bias 0). FPA's and FoX's own signal: the
// bias is comparable across heads, so the pool goes to the heads whose keys are still alive.
#include "lm/cache/select.h"

namespace fpa::cache {
namespace {

class Budget : public Policy {
 public:
  using Policy::Policy;
  std::string name() const override { return "budget"; }
  Keep select(const Context& c) const override {
    auto keep = keep_all(c.heads, false);
    const int64_t forced = keep_newest(c.heads, keep);
    const int64_t H = int64_t(c.heads.size());
    keep_top_shared(c.heads, scores_of(c.heads, &HeadView::bias),
                    capacity_ahead(settings().budget, c.query + 1, c.lookahead, H) - forced, keep);
    return keep;
  }
};

}  // namespace

Registration register_budget() {
  return {"budget", "the highest-bias keys, one pool over all heads and layers",
          [](const Settings& s) { return std::make_unique<Budget>(s); }};
}

}  // namespace fpa::cache
