// window (StreamingLLM, Xiao et al. 2024): the first `sinks` positions plus the last W, every
// head. W = budget x final_length - sinks, so that the window matches the budget's occupancy at
// the end of the sequence: a budgeted policy, compared with the others at each kept fraction.
#include "lm/cache/select.h"

#include <algorithm>

namespace fpa::cache {
namespace {

class Window : public Policy {
 public:
  using Policy::Policy;
  std::string name() const override { return "window"; }
  Keep select(const Context& c) const override {
    const auto& s = settings();
    const int64_t w0 = capacity(s.budget, c.final_length) - s.sinks;
    const int64_t w = std::max<int64_t>(1, w0 - c.lookahead);
    auto keep = keep_all(c.heads, false);
    for (size_t h = 0; h < c.heads.size(); ++h) keep_window(c.heads[h], s.sinks, w, c.query, keep[h]);
    return keep;
  }
};

}  // namespace

Registration register_window() {
  return {"window", "StreamingLLM: sink tokens and a recent window",
          [](const Settings& s) { return std::make_unique<Window>(s); }};
}

}  // namespace fpa::cache
