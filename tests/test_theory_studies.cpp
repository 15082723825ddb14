// The theory studies called in-process on tiny settings (theory/*_study.h): the same checks the
// executables run, their counts consistent with the table they return.
#include "theory/eviction_study.h"
#include "theory/fox_special_case_study.h"
#include "theory/lower_bound_study.h"
#include "theory/realization_study.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

using namespace fpa;
using namespace fpa::theory;

namespace {

// Rows of a CSV text by their first cell (the check).
std::map<std::string, int> rows_per_check(const std::string& text) {
  std::map<std::string, int> out;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) out[line.substr(0, line.find(','))]++;
  return out;
}

FoxSpecialCaseSettings tiny_fox_settings() {
  FoxSpecialCaseSettings s;
  s.trials = 2;
  s.long_trials = 1;
  s.lengths = {1, 3, 8};
  s.head_dim = 4;
  s.seed = 3;
  s.out = "unused.csv";  // never committed here
  return s;
}

}  // namespace

TEST(TheoryStudies, FoxSpecialCasePassesWithCountsMatchingItsTable) {
  const auto s = tiny_fox_settings();
  const auto r = run_fox_special_case(s);
  EXPECT_TRUE(r.all_ok);
  EXPECT_EQ(r.monotone_fields, 6);  // 3 lengths x 2 trials
  EXPECT_EQ(r.fox_checks, 6 * 4);   // 4 thresholds per field
  EXPECT_EQ(r.fox_bad, 0);
  EXPECT_LE(r.worst_out, 1e-12);
  EXPECT_GT(r.a31, r.a32);  // the three-token witness
  EXPECT_GT(r.nonmono_fields, 0);
  EXPECT_EQ(r.nonmono_differ, r.nonmono_fields);  // every non-monotone field differs from FoX
  const auto rows = rows_per_check(r.table.text());
  EXPECT_EQ(rows.at("t1_nonincreasing"), 2 * r.monotone_fields);
  EXPECT_EQ(rows.at("t1_nonmonotone"), r.nonmono_fields);
  EXPECT_EQ(rows.at("t2_fox_rows"), 6);
  EXPECT_EQ(rows.at("t2_fox_suffix"), r.fox_checks);
  EXPECT_EQ(rows.at("t2_fpa_witness"), 1);
}

TEST(TheoryStudies, FoxSpecialCaseIsAFunctionOfItsSeed) {
  auto s = tiny_fox_settings();
  const auto a = run_fox_special_case(s).table.text();
  EXPECT_EQ(run_fox_special_case(s).table.text(), a);
  s.seed += 1;
  EXPECT_NE(run_fox_special_case(s).table.text(), a);
}

TEST(TheoryStudies, EvictionStaysWithinTheBoundWhichTheWorstCaseNearlyReaches) {
  EvictionSettings s;
  s.trials = 3;
  s.eps = {1e-2};
  s.lengths = {16, 32};
  s.dims = {4};
  s.worst_cases = {{16, 0.5}};
  s.seed = 2;
  s.out = "unused.csv";  // never committed here
  const auto r = run_eviction_study(s);
  EXPECT_TRUE(r.all_ok);
  EXPECT_EQ(r.random_cases, 3);
  EXPECT_EQ(r.caches, 4);
  EXPECT_EQ(r.table.rows(), 4u);
  EXPECT_EQ(r.violations, 0);
  EXPECT_LE(r.worst_ratio, 1 + 1e-9);
  EXPECT_GT(r.worst_ratio, 0.9);  // the near-worst case at n = 16 reaches about 0.93 of 2 eps V
  EXPECT_LT(r.worst_random_ratio, r.worst_ratio);
}

TEST(TheoryStudies, LowerBoundShattersWhatTheFormulasSay) {
  LowerBoundSettings s;
  s.max_n = 5;
  s.max_d = 2;
  s.out = "dir/counts.csv";  // never committed here
  const auto r = run_lower_bound(s);
  // Softmax and FoX shatter d + 1 keys, the free-weight relaxation d + 2; every count is the
  // formula's and FPA at d = 1 realises every subset.
  ASSERT_EQ(r.per_d, "d=1: 2/2/3, d=2: 3/3/4");
  ASSERT_TRUE(r.all_ok) << r.mismatches << " counts differ";
  EXPECT_EQ(r.fpa_first, s.max_n);
  EXPECT_EQ(r.table.rows(), size_t(2 * 5 + 2 * 5 * 3));  // FPA's two fields, then 3 selectors
  EXPECT_EQ(r.summary.rows(), 2u);
  EXPECT_EQ(r.summary.path(), "dir/counts_summary.csv");
}

TEST(TheoryStudies, RealizationChecksEveryPartOnEveryFamily) {
  RealizationSettings s;
  s.trials = 1;
  s.lengths = {16};
  s.eps = {1e-2};
  s.kernel_check_max_n = 16;
  s.seed = 4;
  s.out = "unused.csv";  // never committed here
  const auto r = run_realization(s);
  EXPECT_TRUE(r.all_ok);
  EXPECT_EQ(r.a.cases, 300);
  EXPECT_EQ(r.a.exact, 300);
  EXPECT_EQ(r.sequences, 4);  // dips, brackets, erase, random
  EXPECT_EQ(r.sets_equal, 4);
  EXPECT_EQ(r.worst_alive, 0.0);
  EXPECT_LE(r.worst_dead, -1.0);
  EXPECT_EQ(r.kernel_checks, 4);
  ASSERT_EQ(r.min_mass_at_eps.size(), 1u);
  EXPECT_GE(r.min_mass_at_eps[0], 1 - 1e-2);
  EXPECT_LE(r.worst_ratio, 1 + 1e-9);
  // (a) one row per target set; per sequence 3 rows of (b), 1 kernel comparison, 3 of (c).
  const auto rows = rows_per_check(r.table.text());
  EXPECT_EQ(rows.at("a"), 300);
  EXPECT_EQ(rows.at("b"), 4 * 3);
  EXPECT_EQ(rows.at("c"), 4 * (1 + 3));
}
