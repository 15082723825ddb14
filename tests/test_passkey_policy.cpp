// Cache policies as pure logic: which entries each keeps, and the occupancy they give.
#include "lm/passkey/policy.h"

#include "kernels/eviction.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <numeric>

using namespace fpa::passkey;

namespace {

HeadCache head(std::vector<double> bias, double r = 0.0) {
  HeadCache h;
  h.bias = std::move(bias);
  h.position.resize(h.bias.size());
  std::iota(h.position.begin(), h.position.end(), 0);
  h.r = r;
  return h;
}

int64_t kept(const std::vector<std::vector<bool>>& keep) {
  int64_t n = 0;
  for (const auto& k : keep) n += std::count(k.begin(), k.end(), true);
  return n;
}

}  // namespace

TEST(PasskeyPolicy, Names) {
  for (auto k : {PolicyKind::Full, PolicyKind::FpaCertified, PolicyKind::Budget, PolicyKind::Window})
    EXPECT_EQ(parse_policy(to_string(k)), k);
  EXPECT_THROW(parse_policy("lru"), std::invalid_argument);
  EXPECT_TRUE(policy_named("budget-per-head").per_head);
  EXPECT_EQ(policy_named("budget-per-head").kind, PolicyKind::Budget);
  EXPECT_FALSE(policy_named("budget").per_head);
  EXPECT_EQ(policy_named("certified").kind, PolicyKind::FpaCertified);
  EXPECT_THROW(policy_named("budget-per-layer"), std::invalid_argument);
}

TEST(PasskeyPolicy, FullKeepsEverything) {
  PolicyConfig cfg;
  auto keep = select_keep(cfg, {head({-100, -1, 0}), head({0, 0, 0})}, 2, 3);
  EXPECT_EQ(kept(keep), 6);
}

TEST(PasskeyPolicy, CertifiedUsesTheT5Threshold) {
  PolicyConfig cfg;
  cfg.kind = PolicyKind::FpaCertified;
  cfg.epsilon = 0.01;
  // n = 4, R = 1: threshold -(2 + log(400)) = -7.99
  const double t = fpa::certified_eviction_threshold(1.0, 4, 0.01);
  EXPECT_NEAR(t, -(2.0 + std::log(400.0)), 1e-12);
  auto keep = select_keep(cfg, {head({-8.0, -7.9, -30.0, 0.0}, 1.0)}, 3, 4);
  EXPECT_EQ(keep[0], (std::vector<bool>{false, true, false, true}));
  // A larger R keeps more.
  keep = select_keep(cfg, {head({-8.0, -7.9, -30.0, 0.0}, 10.0)}, 3, 4);  // threshold -25.99
  EXPECT_EQ(kept(keep), 3);
}

TEST(PasskeyPolicy, SharedBudgetGoesToTheHeadThatNeedsIt) {
  // Head 0 keeps everything (all biases 0); head 1 is local (old keys far below).
  // A 50% budget over 2 heads x 8 keys = 8 entries: head 1 keeps only its newest key,
  // head 0 keeps its 7 most recent.
  PolicyConfig cfg;
  cfg.kind = PolicyKind::Budget;
  cfg.budget = 0.5;
  auto keep = select_keep(cfg, {head(std::vector<double>(8, 0.0)),
                                head({-50, -45, -40, -35, -30, -25, -20, 0})},
                          7, 8);
  EXPECT_EQ(kept(keep), 8);
  EXPECT_EQ(keep[1], (std::vector<bool>{false, false, false, false, false, false, false, true}));
  EXPECT_EQ(keep[0], (std::vector<bool>{false, true, true, true, true, true, true, true}));
  // Per head: 4 each, ties broken by recency in head 0, highest bias in head 1.
  cfg.per_head = true;
  keep = select_keep(cfg, {head(std::vector<double>(8, 0.0)),
                           head({-1, -45, -40, -35, -30, -25, -20, 0})},
                     7, 8);
  EXPECT_EQ(keep[0], (std::vector<bool>{false, false, false, false, true, true, true, true}));
  EXPECT_EQ(keep[1], (std::vector<bool>{true, false, false, false, false, true, true, true}));
}

TEST(PasskeyPolicy, WindowKeepsSinksAndRecentTokens) {
  PolicyConfig cfg;
  cfg.kind = PolicyKind::Window;
  cfg.sinks = 2;
  cfg.window = 3;
  auto keep = select_keep(cfg, {head(std::vector<double>(10, 0.0))}, 9, 10);
  EXPECT_EQ(keep[0], (std::vector<bool>{true, true, false, false, false, false, false, true,
                                        true, true}));
  // Derived from the budget: 0.5 * 20 - 2 sinks = 8 recent tokens at the end.
  cfg.window = 0;
  cfg.budget = 0.5;
  keep = select_keep(cfg, {head(std::vector<double>(20, 0.0))}, 19, 20);
  EXPECT_EQ(kept(keep), 10);
}

// With a lookahead of T tokens, budget and window leave room for the T entries per head that
// arrive before the next eviction: at the last of those queries the cache is still within budget.
TEST(PasskeyPolicy, LookaheadLeavesRoomForTheNextTokens) {
  rc::check("kept + new entries <= budget at query + T", [] {
    const int64_t n = *rc::gen::inRange<int64_t>(20, 400);
    const int64_t heads = *rc::gen::inRange<int64_t>(1, 5);
    const int64_t t = *rc::gen::inRange<int64_t>(0, 40);
    const double budget = *rc::gen::element(0.1, 0.25, 0.5);
    for (auto kind : {PolicyKind::Budget, PolicyKind::Window}) {
      PolicyConfig cfg;
      cfg.kind = kind;
      cfg.budget = budget;
      cfg.sinks = 2;
      std::vector<HeadCache> hs;
      for (int64_t h = 0; h < heads; ++h) {
        std::vector<double> bias(static_cast<size_t>(n));
        for (auto& b : bias) b = -double(*rc::gen::inRange(0, 50));
        bias.back() = 0.0;
        hs.push_back(head(bias));
      }
      // Window sized for a sequence that ends T tokens from now.
      const auto keep = select_keep(cfg, hs, n - 1, n + t, t);
      const int64_t later_full = (n + t) * heads;
      const int64_t cap = int64_t(std::floor(budget * double(later_full) + 1e-9));
      if (kind == PolicyKind::Budget && cap >= (t + 1) * heads)
        RC_ASSERT(kept(keep) + t * heads <= cap);
      const int64_t cap_per_head = int64_t(std::floor(budget * double(n + t) + 1e-9));
      if (kind == PolicyKind::Window && cap_per_head - cfg.sinks - t >= 1)
        RC_ASSERT(kept(keep) + t * heads <= cap_per_head * heads);
    }
  });
}

TEST(PasskeyPolicy, Occupancy) {
  std::vector<HeadCache> heads = {head({0, 0}), head({0, 0, 0, 0})};
  EXPECT_DOUBLE_EQ(occupancy(heads, 3), 6.0 / 8.0);
}

TEST(PasskeyPolicy, RejectsBadConfig) {
  PolicyConfig cfg;
  cfg.budget = 0.0;
  EXPECT_THROW(cfg.validate(), std::invalid_argument);
  cfg.budget = 0.5;
  cfg.epsilon = 2.0;
  EXPECT_THROW(cfg.validate(), std::invalid_argument);
}

// Budget: never more than the capacity (beyond one forced key per head), always each head's
// newest key, and every dropped key's bias at most every kept non-forced key's bias.
RC_GTEST_PROP(PasskeyPolicy, BudgetKeepsTheHighestBiases, ()) {
  const int nheads = *rc::gen::inRange(1, 6);
  const int n = *rc::gen::inRange(1, 40);
  const double budget = *rc::gen::inRange(1, 101) / 100.0;
  std::vector<HeadCache> heads;
  for (int h = 0; h < nheads; ++h) {
    auto b = *rc::gen::container<std::vector<int>>(size_t(n), rc::gen::inRange(-5, 1));
    heads.push_back(head(std::vector<double>(b.begin(), b.end())));
  }
  PolicyConfig cfg;
  cfg.kind = PolicyKind::Budget;
  cfg.budget = budget;
  const auto keep = select_keep(cfg, heads, n - 1, n);
  const int64_t cap = int64_t(std::floor(budget * n * nheads + 1e-9));
  RC_ASSERT(kept(keep) == std::max<int64_t>(cap, nheads));
  double min_kept = 1e9, max_dropped = -1e9;
  for (int h = 0; h < nheads; ++h) {
    RC_ASSERT(keep[size_t(h)][size_t(n - 1)]);
    for (int j = 0; j + 1 < n; ++j) {
      const double b = heads[size_t(h)].bias[size_t(j)];
      if (keep[size_t(h)][size_t(j)]) min_kept = std::min(min_kept, b);
      else max_dropped = std::max(max_dropped, b);
    }
  }
  RC_ASSERT(max_dropped <= min_kept);
}
