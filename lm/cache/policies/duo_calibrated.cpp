// duo-calibrated: DuoAttention's head-level allocation with head scores from a calibration run
// (Context::head_scores; passkey-eval computes them on prompts at the training length, see
// lm/passkey/calibrate.h): the best-scoring heads keep everything, the others sinks +
// settings().duo_window recent keys, as many full heads as the budget allows.
#include "lm/cache/select.h"

namespace fpa::cache {
namespace {

class DuoCalibrated : public Policy {
 public:
  using Policy::Policy;
  std::string name() const override { return "duo-calibrated"; }
  bool needs_head_scores() const override { return true; }
  Keep select(const Context& c) const override {
    const auto& s = settings();
    const int64_t full = duo_full_heads(s.budget, int64_t(c.heads.size()), c.final_length,
                                        s.sinks + s.duo_window);
    return keep_retrieval_heads(c, c.head_scores, full, s.sinks, s.duo_window);
  }
};

}  // namespace

Registration register_duo_calibrated() {
  return {"duo-calibrated", "DuoAttention's full-or-window heads, chosen by a calibration run",
          [](const Settings& s) { return std::make_unique<DuoCalibrated>(s); }};
}

}  // namespace fpa::cache
