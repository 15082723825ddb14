// snapkv (Li et al. 2024), QUERY-AWARE: compresses once, after the question has been read. Per
// head, it keeps the last settings().observe positions (the observation window, which holds the
// question) and, of the rest, the keys with the largest attention mass from the observation
// window's queries, max-pooled over 7 neighbouring positions (SnapKV's clustering). It sees the
// question before it compresses, which the online methods do not: a reference, kept out of the
// verdicts.
#include "lm/cache/select.h"

#include <algorithm>

namespace fpa::cache {
namespace {

constexpr int64_t kPool = 7;

class SnapKv : public Policy {
 public:
  using Policy::Policy;
  std::string name() const override { return "snapkv"; }
  Signals reads() const override { Signals s; s.mass = true; return s; }
  bool query_aware() const override { return true; }
  Keep select(const Context& c) const override {
    const int64_t cap = capacity_ahead(settings().budget, c.query + 1, c.lookahead, 1);
    auto keep = keep_all(c.heads, false);
    Scores pooled;
    for (size_t h = 0; h < c.heads.size(); ++h) {
      const auto& m = c.heads[h].mass;
      const int64_t n = int64_t(m.size());
      pooled.emplace_back(m.size());
      for (int64_t e = 0; e < n; ++e) {
        double best = 0;
        for (int64_t f = std::max<int64_t>(0, e - kPool / 2); f <= std::min(n - 1, e + kPool / 2); ++f)
          best = std::max(best, m[size_t(f)]);
        pooled.back()[size_t(e)] = best;
      }
      keep_window(c.heads[h], 0, std::min(settings().observe, std::max<int64_t>(1, cap)), c.query, keep[h]);
    }
    int64_t window = 0;
    for (const auto& k : keep) window = std::max(window, marked(k));
    keep_top_per_head(c.heads, pooled, cap - window, keep);
    return keep;
  }
};

}  // namespace

Registration register_snapkv() {
  return {"snapkv", "SnapKV (query-aware reference): compress once the question has been read",
          [](const Settings& s) { return std::make_unique<SnapKv>(s); }};
}

}  // namespace fpa::cache
