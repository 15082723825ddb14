// Unit tests of the theory library (theory/fpa_theory.h, theory/selection_lp.h) on cases small
// enough to work out by hand.
#include "kernels/attention.h"
#include "theory/fpa_theory.h"
#include "theory/selection_lp.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fpa;
using namespace fpa::theory;

TEST(TheoryLibrary, FieldForAliveSetMatchesTheWorkedExample) {
  // Members {1, 3} of query 3: levels (2g, g, 3g, 2g); key 0 dips 1g at 1, key 2 dips 1g at 3.
  const auto phi = field_for_alive_set(3, {1, 3}, 0.5);
  EXPECT_EQ(phi, (std::vector<double>{1.0, 0.5, 1.5, 1.0}));
  const auto b = fpa_bias_of(phi);
  EXPECT_DOUBLE_EQ(b[3][0].item<double>(), -0.5);
  EXPECT_DOUBLE_EQ(b[3][1].item<double>(), 0.0);
  EXPECT_DOUBLE_EQ(b[3][2].item<double>(), -0.5);
  EXPECT_THROW(field_for_alive_set(3, {1}, 1.0), std::invalid_argument);
}

TEST(TheoryLibrary, StackRuleGivesFirstPassageSets) {
  // Levels 2, 1, 3, 3, 2: token 1 kills 0; token 4 kills 2 and 3.
  std::vector<std::vector<int64_t>> sets;
  for_each_first_passage_set({2, 1, 3, 3, 2}, [&](int64_t, const std::vector<int64_t>& a) {
    sets.push_back(a);
  });
  EXPECT_EQ(sets.back(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(sets[3], (std::vector<int64_t>{1, 2, 3}));
}

// The task families are the synthetic tasks' tables (synthetic/tasks/*.task), and their
// sequences follow the tasks' constraints.
TEST(TheoryLibrary, TaskTablesAreTheSyntheticTasks) {
  std::mt19937_64 rng(7);
  for (const auto& name : synthetic::builtin_task_names()) {
    const auto table = task_table(name);
    const auto task = synthetic::builtin_task(name);
    ASSERT_EQ(table.increment.size(), task.types.size()) << name;
    for (size_t c = 0; c < task.types.size(); ++c)
      EXPECT_EQ(double(table.increment[c]), task.types[c].increment) << name;
    const auto types = sample_types(table, 2000, rng);
    double level = 0;
    int previous = -1;
    std::vector<int> count(task.types.size());
    for (int t : types) {
      EXPECT_TRUE(task.types[size_t(t)].allowed(level, previous)) << name;
      level += task.types[size_t(t)].increment;
      previous = t;
      ++count[size_t(t)];
    }
    for (size_t c = 0; c < count.size(); ++c) EXPECT_GT(count[c], 0) << name << " type " << c;
  }
  // Erase: a clear returns to the floor, below the stretch and not below the anchors.
  const auto erase = task_table("erase");
  EXPECT_EQ(erase.types, (std::vector<std::string>{"anchor", "open", "content", "clear"}));
  EXPECT_EQ(erase.increment, (std::vector<int>{1, 1, 0, -1}));
}

TEST(TheoryLibrary, EvictionThresholdAndBound) {
  EXPECT_DOUBLE_EQ(fpa::certified_eviction_threshold(1.5, 100, 0.01), -(3.0 + std::log(1e4)));
  EXPECT_DOUBLE_EQ(eviction_bound(0.01, 3.0), 0.06);
}

TEST(TheoryLibrary, T3cBoundAndFieldOnlyAttention) {
  // Field (0, 1, 0.5): at query 2 keys 0 and 2 are alive (bias 0), key 1 has bias -0.5.
  const auto A = field_only_attention({0.0, 1.0, 0.5}, 2.0);
  const double z = 2 + std::exp(-1.0);
  EXPECT_NEAR(A[2][0].item<double>(), 1 / z, 1e-15);
  EXPECT_NEAR(A[2][1].item<double>(), std::exp(-1.0) / z, 1e-15);
  EXPECT_LE(A[2][1].item<double>(), t3c_outside_bound(3, 2, 2.0, 0.5));
}

TEST(TheoryLibrary, CountingFormulas) {
  EXPECT_EQ(binomial(12, 5), 792);
  EXPECT_EQ(cover_count(4, 2), 14);  // 4 points in the plane: 14 of 16 dichotomies
  EXPECT_EQ(cover_count(3, 2), 8);   // n <= d + 1: all
  EXPECT_EQ(arrangement_cells(3, 2), 7);
}

TEST(TheoryLibrary, SelectionLpOnThreeKeysOnALine) {
  // Keys -1, 0, 1 in R^1: every cut is a threshold, so {-1, 1} and {0} are not selectable.
  const std::vector<std::vector<double>> keys = {{-1}, {0}, {1}};
  SelectionLp soft(keys, {}, Selector::Softmax);
  int count = 0;
  for (uint64_t s = 0; s < 8; ++s) count += soft.selectable(s);
  EXPECT_EQ(count, 6);
  EXPECT_FALSE(soft.selectable(0b101));
  EXPECT_FALSE(soft.selectable(0b010));
  // A free extra coordinate u = (0, 1, 0) makes {0} (the middle key) selectable ...
  SelectionLp relaxed(keys, {0, 1, 0}, Selector::FoxFreeWeight);
  EXPECT_TRUE(relaxed.selectable(0b010));
  EXPECT_TRUE(relaxed.selectable(0b101));
  // ... but with FoX's fixed positive weight only the upper side: {0} yes, {-1, 1} no.
  SelectionLp fox(keys, {0, 1, 0}, Selector::Fox);
  EXPECT_TRUE(fox.selectable(0b010));
  EXPECT_FALSE(fox.selectable(0b101));
}

TEST(TheoryLibrary, OutputOverKeptKeysIsTheSoftmaxMixtureOfThoseKeys) {
  // Two kept keys of four, worked by hand: logits scale * q.k_j + b_j over keys 1 and 3.
  const auto opt = at::TensorOptions().dtype(at::kDouble);
  const auto q = at::tensor({1.0, 2.0}, opt);
  const auto k = at::tensor({9.0, 9.0, 1.0, 0.0, 9.0, 9.0, 0.0, 1.0}, opt).view({4, 2});
  const auto v = at::tensor({7.0, 1.0, 7.0, 3.0}, opt).view({4, 1});
  const auto b = at::tensor({0.0, -1.0, 0.0, 0.5}, opt);
  const auto out = output_over(q, k, v, b, {1, 3}, 0.5);
  const double s1 = 0.5 * 1.0 - 1.0, s3 = 0.5 * 2.0 + 0.5;  // keys 1 and 3
  const double w1 = std::exp(s1), w3 = std::exp(s3);
  ASSERT_EQ(out.sizes(), (at::IntArrayRef{1}));
  EXPECT_NEAR(out[0].item<double>(), (w1 * 1.0 + w3 * 3.0) / (w1 + w3), 1e-15);
  EXPECT_THROW(output_over(q, k, v, b, {}, 0.5), std::invalid_argument);
}
