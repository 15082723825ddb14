// Cache policies as pure logic (lm/cache): which entries each keeps, and the occupancy they give.
#include "lm/cache/policy.h"
#include "lm/cache/select.h"

#include "kernels/eviction.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <numeric>

using namespace fpa::cache;

namespace {

HeadView head(std::vector<double> bias, double r = 0.0) {
  HeadView h;
  h.bias = std::move(bias);
  h.position.resize(h.bias.size());
  std::iota(h.position.begin(), h.position.end(), 0);
  h.r = r;
  return h;
}

int64_t kept(const Keep& keep) {
  int64_t n = 0;
  for (const auto& k : keep) n += std::count(k.begin(), k.end(), true);
  return n;
}

Keep select(const std::string& name, Settings s, const std::vector<HeadView>& heads,
            int64_t query, int64_t final_length, int64_t lookahead = 0,
            const std::vector<double>& head_scores = {}) {
  const auto p = make_policy(name, s);
  return select_checked(*p, Context{heads, query, final_length, lookahead, head_scores});
}

Settings with_budget(double b) {
  Settings s;
  s.budget = b;
  return s;
}

}  // namespace

TEST(CachePolicy, Registry) {
  for (const auto& r : registry()) {
    const auto p = r.make(Settings{});
    EXPECT_EQ(p->name(), r.name);
    EXPECT_FALSE(r.summary.empty());
  }
  EXPECT_EQ(make_policy("budget-per-head", {})->csv_name(), "budget");
  EXPECT_TRUE(make_policy("budget-per-head", {})->per_head());
  EXPECT_FALSE(make_policy("budget", {})->per_head());
  EXPECT_TRUE(make_policy("snapkv", {})->query_aware());
  EXPECT_TRUE(make_policy("duo-calibrated", {})->needs_head_scores());
  EXPECT_TRUE(make_policy("fpa-certified", {})->reads().r);
  EXPECT_TRUE(make_policy("h2o", {})->reads().mass);
  EXPECT_TRUE(make_policy("tova", {})->reads().weight);
  EXPECT_TRUE(make_policy("knorm", {})->reads().key_norm);
  EXPECT_FALSE(make_policy("budget", {})->reads().r);
  EXPECT_THROW(make_policy("lru", {}), std::invalid_argument);
  try {
    make_policy("certified", {});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("fpa-certified"), std::string::npos);
  }
}

TEST(CachePolicy, FullKeepsEverything) {
  EXPECT_EQ(kept(select("full", {}, {head({-100, -1, 0}), head({0, 0, 0})}, 2, 3)), 6);
}

TEST(CachePolicy, CertifiedUsesTheT5Threshold) {
  Settings s;
  s.epsilon = 0.01;
  // n = 4, R = 1: threshold -(2 + log(400)) = -7.99
  const double t = fpa::certified_eviction_threshold(1.0, 4, 0.01);
  EXPECT_NEAR(t, -(2.0 + std::log(400.0)), 1e-12);
  auto keep = select("fpa-certified", s, {head({-8.0, -7.9, -30.0, 0.0}, 1.0)}, 3, 4);
  EXPECT_EQ(keep[0], (std::vector<bool>{false, true, false, true}));
  // A larger R keeps more.
  keep = select("fpa-certified", s, {head({-8.0, -7.9, -30.0, 0.0}, 10.0)}, 3, 4);  // -25.99
  EXPECT_EQ(kept(keep), 3);
  // Without R (views not asked for it) the policy refuses instead of using a made-up value.
  EXPECT_THROW(select("fpa-certified", s, {head({0.0}, std::nan(""))}, 0, 1), std::invalid_argument);
}

TEST(CachePolicy, SharedBudgetGoesToTheHeadThatNeedsIt) {
  // Head 0 keeps everything (all biases 0); head 1 is local (old keys far below).
  // A 50% budget over 2 heads x 8 keys = 8 entries: head 1 keeps only its newest key,
  // head 0 keeps its 7 most recent.
  auto keep = select("budget", with_budget(0.5),
                     {head(std::vector<double>(8, 0.0)), head({-50, -45, -40, -35, -30, -25, -20, 0})}, 7, 8);
  EXPECT_EQ(kept(keep), 8);
  EXPECT_EQ(keep[1], (std::vector<bool>{false, false, false, false, false, false, false, true}));
  EXPECT_EQ(keep[0], (std::vector<bool>{false, true, true, true, true, true, true, true}));
  // Per head: 4 each, ties broken by recency in head 0, highest bias in head 1.
  keep = select("budget-per-head", with_budget(0.5),
                {head(std::vector<double>(8, 0.0)), head({-1, -45, -40, -35, -30, -25, -20, 0})}, 7, 8);
  EXPECT_EQ(keep[0], (std::vector<bool>{false, false, false, false, true, true, true, true}));
  EXPECT_EQ(keep[1], (std::vector<bool>{true, false, false, false, false, true, true, true}));
}

TEST(CachePolicy, WindowKeepsSinksAndRecentTokens) {
  Settings s;
  s.sinks = 2;
  s.budget = 0.5;
  // The window is derived from the budget: 0.5 * 10 - 2 sinks = 3 recent tokens at the end ...
  auto keep = select("window", s, {head(std::vector<double>(10, 0.0))}, 9, 10);
  EXPECT_EQ(keep[0], (std::vector<bool>{true, true, false, false, false, false, false, true, true, true}));
  // ... and 0.5 * 20 - 2 sinks = 8 at length 20.
  EXPECT_EQ(kept(select("window", s, {head(std::vector<double>(20, 0.0))}, 19, 20)), 10);
}

// Random views with every signal, for the properties below.
std::vector<HeadView> random_views(int64_t heads, int64_t n) {
  std::vector<HeadView> hs;
  for (int64_t h = 0; h < heads; ++h) {
    std::vector<double> bias(static_cast<size_t>(n));
    for (auto& b : bias) b = -double(*rc::gen::inRange(0, 50));
    bias.back() = 0.0;
    auto v = head(bias, 1.0);
    for (int64_t e = 0; e < n; ++e) {
      v.weight.push_back(*rc::gen::inRange(0, 1000) / 1000.0);
      v.mass.push_back(*rc::gen::inRange(0, 1000) / 100.0);
      v.key_norm.push_back(1.0 + *rc::gen::inRange(0, 1000) / 100.0);
    }
    v.q_norm = 0.5;
    hs.push_back(std::move(v));
  }
  return hs;
}

// With a lookahead of T tokens, every budgeted policy leaves room for the T entries per head that
// arrive before the next eviction: at the last of those queries the cache is still within
// budget (beyond the one key per head some always keep, when the budget is below that).
RC_GTEST_PROP(CachePolicy, EveryBudgetedPolicyLeavesRoomForTheNextTokens, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(20, 300);
  const int64_t heads = *rc::gen::inRange<int64_t>(1, 5);
  const int64_t t = *rc::gen::inRange<int64_t>(0, 40);
  Settings s;
  s.budget = *rc::gen::element(0.1, 0.25, 0.5);
  s.sinks = 2;
  s.duo_window = 6;
  s.observe = 4;
  const auto hs = random_views(heads, n);
  const std::vector<double> scores(size_t(heads), 0.5);
  for (const auto& r : registry()) {
    const auto p = r.make(s);
    if (!p->budgeted()) continue;
    const auto keep = select_checked(*p, Context{hs, n - 1, n + t, t, scores});
    const int64_t later = n + t;
    if (r.name == "budget") {
      const int64_t cap = capacity(s.budget, later * heads);
      if (cap >= (t + 1) * heads) RC_ASSERT(kept(keep) + t * heads <= cap);
    } else if (r.name == "window") {
      // Sized at the final length: within the budget there (when the window fits in it).
      const int64_t cap_per_head = capacity(s.budget, later);
      if (cap_per_head - s.sinks - t >= 1) RC_ASSERT(kept(keep) + t * heads <= cap_per_head * heads);
    } else if (r.name == "duo-certified" || r.name == "duo-calibrated") {
      if (s.duo_window - t >= 1 && s.budget * double(later) >= double(s.sinks + s.duo_window))
        RC_ASSERT(double(kept(keep) + t * heads) <= s.budget * double(heads * later) + 1e-9);
    } else {
      const int64_t cap_per_head = capacity(s.budget, later);
      if (cap_per_head >= t + 1) RC_ASSERT(kept(keep) + t * heads <= cap_per_head * heads);
      for (const auto& k : keep) RC_ASSERT(k.back());  // the current token stays
    }
  }
}

TEST(CachePolicy, Occupancy) {
  std::vector<HeadView> heads = {head({0, 0}), head({0, 0, 0, 0})};
  EXPECT_DOUBLE_EQ(occupancy(heads, 3), 6.0 / 8.0);
}

TEST(CachePolicy, RejectsBadSettings) {
  Settings s;
  s.budget = 0.0;
  EXPECT_THROW(s.validate(), std::invalid_argument);
  EXPECT_THROW(make_policy("budget", s), std::invalid_argument);
  s.budget = 0.5;
  s.epsilon = 2.0;
  EXPECT_THROW(s.validate(), std::invalid_argument);
}

// Budget: never more than the capacity (beyond one forced key per head), always each head's
// newest key, and every dropped key's bias at most every kept non-forced key's bias.
RC_GTEST_PROP(CachePolicy, BudgetKeepsTheHighestBiases, ()) {
  const int nheads = *rc::gen::inRange(1, 6);
  const int n = *rc::gen::inRange(1, 40);
  const double budget = *rc::gen::inRange(1, 101) / 100.0;
  std::vector<HeadView> heads;
  for (int h = 0; h < nheads; ++h) {
    auto b = *rc::gen::container<std::vector<int>>(size_t(n), rc::gen::inRange(-5, 1));
    heads.push_back(head(std::vector<double>(b.begin(), b.end())));
  }
  const auto keep = select("budget", with_budget(budget), heads, n - 1, n);
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

// The score-ranked methods keep, per head, every key scoring above any key they drop (the
// protected ones aside: the newest key, H2O's recent half).
RC_GTEST_PROP(CachePolicy, ScoreMethodsKeepTheirBestKeys, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(4, 60);
  const auto hs = random_views(*rc::gen::inRange<int64_t>(1, 4), n);
  Settings s;
  s.budget = *rc::gen::element(0.1, 0.25, 0.5);
  const int64_t cap = std::max<int64_t>(1, capacity(s.budget, n));
  struct Case { const char* name; std::function<double(const HeadView&, size_t)> score; int64_t protect; };
  for (const Case& c : {Case{"tova", [](const HeadView& v, size_t e) { return v.weight[e]; }, 1},
                        Case{"knorm", [](const HeadView& v, size_t e) { return -v.key_norm[e]; }, 1},
                        Case{"h2o", [](const HeadView& v, size_t e) { return v.mass[e]; },
                             std::max<int64_t>(1, cap / 2)}}) {
    const auto keep = select(c.name, s, hs, n - 1, n);
    for (size_t h = 0; h < hs.size(); ++h) {
      RC_ASSERT(int64_t(std::count(keep[h].begin(), keep[h].end(), true)) <= std::max<int64_t>(cap, 1));
      double worst_kept = 1e18, best_dropped = -1e18;
      for (size_t e = 0; e + size_t(c.protect) < size_t(n); ++e) {
        const double x = c.score(hs[h], e);
        if (keep[h][e]) worst_kept = std::min(worst_kept, x);
        else best_dropped = std::max(best_dropped, x);
      }
      for (size_t e = size_t(n - c.protect); e < size_t(n); ++e) RC_ASSERT(keep[h][e]);
      RC_ASSERT(best_dropped <= worst_kept);
    }
  }
}

TEST(CachePolicy, H2oKeepsRecentHalfAndHeavyHitters) {
  auto v = head(std::vector<double>(10, 0.0));
  v.mass = {5, 0, 0, 9, 0, 0, 0, 0, 0, 0};
  // budget 0.4 of 10 = 4: recent 2 (positions 8, 9), heavy hitters 3 and 0.
  const auto keep = select("h2o", with_budget(0.4), {v}, 9, 10);
  EXPECT_EQ(keep[0], (std::vector<bool>{true, false, false, true, false, false, false, false, true, true}));
}

TEST(CachePolicy, RandomIsSeeded) {
  std::vector<HeadView> hs = {head(std::vector<double>(200, 0.0)), head(std::vector<double>(200, 0.0))};
  Settings a = with_budget(0.25), b = with_budget(0.25);
  b.seed = 1;
  const auto ka = select("random", a, hs, 199, 200), kb = select("random", b, hs, 199, 200);
  EXPECT_EQ(ka, select("random", a, hs, 199, 200));
  EXPECT_NE(ka, kb);
  EXPECT_NE(ka[0], ka[1]);  // heads draw differently
  EXPECT_EQ(kept(ka), 100);
}

TEST(CachePolicy, DuoGivesFullCachesToTheBestHeads) {
  // 4 heads of 100 keys; budget 0.5 with sinks 2 + window 8: k = floor((200 - 40) / 90) = 1.
  EXPECT_EQ(duo_full_heads(0.5, 4, 100, 10), 1);
  EXPECT_EQ(duo_full_heads(0.25, 16, 4096, 64), 3);
  EXPECT_EQ(duo_full_heads(0.5, 4, 8, 10), 4);  // a window head holds everything anyway
  Settings s = with_budget(0.5);
  s.sinks = 2;
  s.duo_window = 8;
  std::vector<HeadView> hs;
  for (int h = 0; h < 4; ++h) {
    std::vector<double> bias(100);
    for (int j = 0; j < 100; ++j) bias[size_t(j)] = h == 2 ? 0.0 : -double(99 - j);  // head 2 flat
    hs.push_back(head(bias, 1.0));
  }
  auto keep = select("duo-certified", s, hs, 99, 100);
  EXPECT_EQ(std::count(keep[2].begin(), keep[2].end(), true), 100);
  for (int h : {0, 1, 3}) EXPECT_EQ(std::count(keep[size_t(h)].begin(), keep[size_t(h)].end(), true), 10);
  // Calibrated: the scores decide, not the biases.
  keep = select("duo-calibrated", s, hs, 99, 100, 0, {0.1, 0.9, 0.2, 0.3});
  EXPECT_EQ(std::count(keep[1].begin(), keep[1].end(), true), 100);
  EXPECT_EQ(std::count(keep[2].begin(), keep[2].end(), true), 10);
  EXPECT_THROW(select("duo-calibrated", s, hs, 99, 100), std::invalid_argument);  // no scores
}

// The allocation is made at the first eviction and kept: a full local head whose alive keys are
// few keeps its cache against a window head whose recent keys are all alive.
TEST(CachePolicy, DuoCertifiedKeepsItsAllocation) {
  Settings s = with_budget(0.6);  // 2 heads of 100 keys, sinks 2 + window 8: one full head
  EXPECT_EQ(duo_full_heads(0.6, 2, 100, 10), 1);
  s.sinks = 2;
  s.duo_window = 8;
  // Head 0 kept every one of 100 keys; only its last 5 are certified alive (bias 0 against -1000
  // for the rest, R = 1). Head 1 was cut to sinks + window: its 10 keys are all alive.
  std::vector<double> b0(100, -1000.0);
  for (int j = 95; j < 100; ++j) b0[size_t(j)] = 0.0;
  auto h0 = head(b0, 1.0);
  auto h1 = head(std::vector<double>(10, 0.0), 1.0);
  h1.position = {0, 1, 92, 93, 94, 95, 96, 97, 98, 99};
  // Both ranked by alive fraction alone, head 1 (10/100) would beat head 0 (5/100).
  const auto keep = select("duo-certified", s, {h0, h1}, 99, 100);
  EXPECT_EQ(std::count(keep[0].begin(), keep[0].end(), true), 100);
  EXPECT_EQ(std::count(keep[1].begin(), keep[1].end(), true), 10);
}

// FoX's pruning threshold uses ||q|| max ||k|| >= R, so it keeps every key fpa-certified keeps.
RC_GTEST_PROP(CachePolicy, FoxAcpKeepsWhatTheCertificateKeeps, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(2, 60);
  auto hs = random_views(*rc::gen::inRange<int64_t>(1, 4), n);
  for (auto& v : hs) {
    v.q_norm = *rc::gen::inRange(1, 100) / 10.0;
    v.r = v.q_norm * *std::max_element(v.key_norm.begin(), v.key_norm.end()) *
          (*rc::gen::inRange(0, 101) / 100.0);  // any R the Cauchy-Schwarz bound allows
  }
  const auto certified = select("fpa-certified", {}, hs, n - 1, n), acp = select("fox-acp", {}, hs, n - 1, n);
  for (size_t h = 0; h < hs.size(); ++h)
    for (size_t e = 0; e < size_t(n); ++e) RC_ASSERT(!certified[h][e] || acp[h][e]);
}

TEST(CachePolicy, SnapKvKeepsTheObservationWindowAndPooledMass) {
  auto v = head(std::vector<double>(40, 0.0));
  v.mass.assign(40, 0.0);
  v.mass[10] = 5.0;  // pooled over 7 neighbours: 7..13 score 5
  Settings s = with_budget(0.5);
  s.observe = 8;
  const auto keep = select("snapkv", s, {v}, 39, 40);
  EXPECT_EQ(kept(keep), 20);
  for (int e = 32; e < 40; ++e) EXPECT_TRUE(keep[0][size_t(e)]);  // the observation window
  for (int e = 7; e <= 13; ++e) EXPECT_TRUE(keep[0][size_t(e)]);
}
