// Properties of the reference biases over generated fields (RapidCheck shrinks failures to a
// minimal field). Integer-valued fields make ties common, which is where mistakes hide.
#include "kernels/attention.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

using namespace fpa;

namespace {

// A field of 1..24 integer levels in [-4, 4]: small, tie-rich, exactly representable.
rc::Gen<std::vector<int>> gen_levels() {
  return rc::gen::resize(24, rc::gen::nonEmpty(rc::gen::container<std::vector<int>>(
                                 rc::gen::inRange(-4, 5))));
}

at::Tensor to_tensor(const std::vector<int>& x) {
  std::vector<double> d(x.begin(), x.end());
  return at::tensor(d, at::kDouble);
}

double at2(const at::Tensor& m, int64_t i, int64_t j) { return m[i][j].item<double>(); }

}  // namespace

RC_GTEST_PROP(FpaBiasProperty, NonPositiveWithZeroDiagonal, ()) {
  auto phi = to_tensor(*gen_levels());
  auto b = fpa_bias(phi);
  const int64_t n = phi.size(0);
  for (int64_t i = 0; i < n; ++i) {
    RC_ASSERT(at2(b, i, i) == 0.0);
    for (int64_t j = 0; j <= i; ++j) RC_ASSERT(at2(b, i, j) <= 0.0);
  }
}

RC_GTEST_PROP(FpaBiasProperty, InvariantToAddingAConstant, ()) {
  auto phi = to_tensor(*gen_levels());
  const int c = *rc::gen::inRange(-100, 101);
  RC_ASSERT(at::equal(fpa_bias(phi), fpa_bias(phi + c)));
}

RC_GTEST_PROP(FpaBiasProperty, DeadForeverBiasNonIncreasingInQuery, ()) {
  auto phi = to_tensor(*gen_levels());
  auto b = fpa_bias(phi);
  const int64_t n = phi.size(0);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = j + 1; i < n; ++i) RC_ASSERT(at2(b, i, j) <= at2(b, i - 1, j));
}

RC_GTEST_PROP(FpaBiasProperty, AliveKeysFormAStackOfNonDecreasingLevels, ()) {
  const auto levels = *gen_levels();
  auto alive = alive_sets(fpa_bias(to_tensor(levels)), 0.0);
  const int64_t n = int64_t(levels.size());
  for (int64_t i = 0; i < n; ++i) {
    RC_ASSERT(alive[i][i].item<bool>());  // the query is always in its own alive set
    int last = -1000;
    for (int64_t j = 0; j <= i; ++j) {
      if (!alive[i][j].item<bool>()) continue;
      RC_ASSERT(levels[j] >= last);
      last = levels[j];
      // first-passage: alive iff nothing in (j, i] goes below phi_j
      for (int64_t l = j; l <= i; ++l) RC_ASSERT(levels[l] >= levels[j]);
    }
  }
}

RC_GTEST_PROP(FoxBiasProperty, NonDecreasingInKeyForNonPositiveGates, ()) {
  const auto raw = *gen_levels();
  std::vector<int> neg;
  for (int x : raw) neg.push_back(-std::abs(x));
  auto b = fox_bias(to_tensor(neg));
  const int64_t n = int64_t(neg.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 1; j <= i; ++j) RC_ASSERT(at2(b, i, j - 1) <= at2(b, i, j));
}

RC_GTEST_PROP(FpaEqualsFox, WhenAllIncrementsAreNonPositive, ()) {
  // T1: a non-increasing walk phi = cumsum(delta), delta <= 0, gives FoX's bias with
  // log f = delta, and hence the same attention output.
  const auto raw = *gen_levels();
  std::vector<double> delta;
  for (int x : raw) delta.push_back(-std::abs(x) * 0.25);
  auto d = at::tensor(delta, at::kDouble);
  RC_ASSERT(at::allclose(fpa_bias(fpa_field_from_increments(d)), fox_bias(d), 0, 1e-12));
  const int64_t n = d.size(0);
  at::manual_seed(*rc::gen::inRange(0, 1000));
  auto q = at::randn({1, 2, n, 4}, at::kDouble), k = at::randn({1, 2, n, 4}, at::kDouble),
       v = at::randn({1, 2, n, 3}, at::kDouble);
  auto gate = d.reshape({1, 1, n}).expand({1, 2, n}).contiguous();
  AttentionOptions fox, fpa;
  fox.variant = Variant::Fox;
  fpa.variant = Variant::Fpa;
  RC_ASSERT(at::allclose(attention(q, k, v, gate, fox),
                         attention(q, k, v, at::cumsum(gate, -1), fpa), 0, 1e-12));
}
