// h2o (Heavy-Hitter Oracle, Zhang et al. 2023): per head, half the capacity for the most recent
// keys and half for the "heavy hitters", the keys with the largest attention mass accumulated
// over every query since they entered. Online and query-agnostic; reads the accumulated mass.
#include "lm/cache/select.h"

#include <algorithm>

namespace fpa::cache {
namespace {

class H2o : public Policy {
 public:
  using Policy::Policy;
  std::string name() const override { return "h2o"; }
  Signals reads() const override { Signals s; s.mass = true; return s; }
  Keep select(const Context& c) const override {
    const int64_t cap = std::max<int64_t>(1, capacity_ahead(settings().budget, c.query + 1, c.lookahead, 1));
    const int64_t recent = std::max<int64_t>(1, cap / 2);
    auto keep = keep_all(c.heads, false);
    for (size_t h = 0; h < c.heads.size(); ++h) keep_window(c.heads[h], 0, recent, c.query, keep[h]);
    keep_top_per_head(c.heads, scores_of(c.heads, &HeadView::mass), cap - recent, keep);
    return keep;
  }
};

}  // namespace

Registration register_h2o() {
  return {"h2o", "H2O: a recent window and the keys of largest accumulated attention, per head",
          [](const Settings& s) { return std::make_unique<H2o>(s); }};
}

}  // namespace fpa::cache
