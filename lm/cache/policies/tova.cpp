// tova (Token Omission Via Attention, Oren et al. 2024): per head, keep the keys with the
// largest attention weight at the current query (and the newest key). Online, query-agnostic.
// TOVA and kvpress average the weights over a layer's heads; our caches are ragged per head,
// so each head ranks its own keys.
#include "lm/cache/select.h"

namespace fpa::cache {
namespace {

class Tova : public Policy {
 public:
  using Policy::Policy;
  std::string name() const override { return "tova"; }
  Signals reads() const override { Signals s; s.weight = true; return s; }
  Keep select(const Context& c) const override {
    return keep_newest_and_top_per_head(c, scores_of(c.heads, &HeadView::weight), settings().budget);
  }
};

}  // namespace

Registration register_tova() {
  return {"tova", "TOVA: the largest attention weights at the current query, per head",
          [](const Settings& s) { return std::make_unique<Tova>(s); }};
}

}  // namespace fpa::cache
