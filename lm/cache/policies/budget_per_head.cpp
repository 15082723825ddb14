// budget-per-head: as budget, but every head keeps the same number of entries (its newest key
// and its highest-bias others). Written to CSVs as policy "budget" with per_head 1.
#include "lm/cache/select.h"

namespace fpa::cache {
namespace {

class BudgetPerHead : public Policy {
 public:
  using Policy::Policy;
  std::string name() const override { return "budget-per-head"; }
  std::string csv_name() const override { return "budget"; }
  bool per_head() const override { return true; }
  Keep select(const Context& c) const override {
    return keep_newest_and_top_per_head(c, scores_of(c.heads, &HeadView::bias), settings().budget);
  }
};

}  // namespace

Registration register_budget_per_head() {
  return {"budget-per-head", "the highest-bias keys, the same capacity in every head",
          [](const Settings& s) { return std::make_unique<BudgetPerHead>(s); }};
}

}  // namespace fpa::cache
