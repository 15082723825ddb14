// Property-based checks of theorems T1, T2, T3(a), T3(b) and T5 (theory/THEORY.md) against the
// reference kernels (float64). Each property runs RapidCheck's default 100 generated cases of
// at most a few dozen tokens; a failure is shrunk to a minimal counterexample.
#include "kernels/attention.h"
#include "theory/fpa_theory.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

using namespace fpa;
using namespace fpa::theory;

namespace {

const auto kF64 = at::TensorOptions().dtype(at::kDouble);

at::Tensor reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const std::vector<double>& gate, Variant variant) {
  AttentionOptions o;
  o.variant = variant;
  o.impl = Impl::Reference;
  return fpa::attention(q, k, v, to_tensor(gate).view({1, 1, -1}), o);
}

// Integer-valued steps keep ties (equal levels) frequent, which is where tie rules go wrong.
rc::Gen<std::vector<double>> steps(int n, int lo, int hi, double unit) {
  return rc::gen::map(rc::gen::container<std::vector<int>>(n, rc::gen::inRange(lo, hi + 1)),
                      [unit](const std::vector<int>& xs) {
                        std::vector<double> out;
                        for (int x : xs) out.push_back(unit * x);
                        return out;
                      });
}

}  // namespace

// T1: a non-increasing field gives FoX's bias (log f = delta) and FoX's outputs.
RC_GTEST_PROP(TheoryT1, NonIncreasingFieldEqualsFox, ()) {
  const int n = *rc::gen::inRange(1, 49);
  const double unit = *rc::gen::element(0.25, 1.0, 1.7);
  const auto log_f = *steps(n, -3, 0, unit);
  const auto phi = cumulative_sum(log_f);
  RC_ASSERT(max_causal_diff(fpa_bias_of(phi), fox_bias_of(log_f)) <= 1e-12 * (1 + 3 * n));
  at::manual_seed(*rc::gen::inRange(0, 1 << 30));
  auto q = at::randn({1, 1, n, 4}, kF64), k = at::randn({1, 1, n, 4}, kF64),
       v = at::randn({1, 1, n, 4}, kF64);
  const double out = (reference(q, k, v, phi, Variant::Fpa) - reference(q, k, v, log_f, Variant::Fox))
                         .abs().max().item<double>();
  RC_ASSERT(out <= 1e-12);
}

// T1, converse: delta_t > 0 (t >= 2) makes b_{t,t-1} = 0 for FPA but delta_t for FoX. The field
// is any non-monotone one: free increments of either sign with a rise of any size at a random t
// (the theorem's premise); the computed biases must show exactly that difference at the witness.
RC_GTEST_PROP(TheoryT1, NonMonotoneFieldDiffersFromFox, ()) {
  const int n = *rc::gen::inRange(2, 49);
  auto delta = *steps(n, -3, 3, 0.5);
  const int t = *rc::gen::inRange(1, n);
  delta[t] = *rc::gen::inRange(1, 13) * 0.25;  // a rise
  const auto b_fpa = fpa_bias_of(cumulative_sum(delta));
  const auto b_fox = fox_bias_of(delta);
  RC_ASSERT(b_fpa[t][t - 1].item<double>() == 0.0);
  RC_ASSERT(std::abs(b_fox[t][t - 1].item<double>() - delta[t]) <= 1e-12 * (1 + 3 * n));
  RC_ASSERT(max_causal_diff(b_fpa, b_fox) >= delta[t] - 1e-12 * (1 + 3 * n));
}

// T2: FoX bias rows are non-decreasing in j, so every alive set is a suffix window.
RC_GTEST_PROP(TheoryT2, FoxAliveSetsAreSuffixWindows, ()) {
  const int n = *rc::gen::inRange(1, 49);
  const auto log_f = *steps(n, -4, 0, 0.5);
  const double tau = *rc::gen::element(0.0, 0.5, 1.0, 3.0);
  const auto b = fox_bias_of(log_f);
  if (n >= 2) RC_ASSERT(max_row_decrease(b) <= 0.0);
  RC_ASSERT(non_suffix_rows(b, tau) == 0);
}

// T3(a): the constructed field leaves exactly S alive at the query, non-members >= g below.
RC_GTEST_PROP(TheoryT3, ConstructedFieldRealisesTargetSet, ()) {
  const int query = *rc::gen::inRange(0, 61);
  const auto bits = *rc::gen::container<std::vector<bool>>(query, rc::gen::arbitrary<bool>());
  const double gap = *rc::gen::element(0.5, 1.0, 2.5);
  std::vector<int64_t> S;
  for (int j = 0; j < query; ++j)
    if (bits[j]) S.push_back(j);
  S.push_back(query);
  const auto bias = fpa_bias_of(field_for_alive_set(query, S, gap));
  const auto alive = alive_sets(bias, 0.0);
  for (int j = 0; j <= query; ++j) {
    const bool member = j == query || bits[j];
    RC_ASSERT(alive[query][j].item<bool>() == member);
    if (!member) RC_ASSERT(bias[query][j].item<double>() <= -gap + 1e-12 * (1 + query));
  }
}

// T3(b): a head whose increments depend only on the token type realises the first-passage
// ground truth (stack rule) at every query, with bias 0 on alive keys and <= -1 on dead ones.
RC_GTEST_PROP(TheoryT3, TypeTableHeadRealisesFirstPassageSets, ()) {
  const int types = *rc::gen::inRange(2, 6);
  const auto increments = *rc::gen::container<std::vector<int>>(types, rc::gen::inRange(-3, 4));
  const int n = *rc::gen::inRange(1, 81);
  const auto seq = *rc::gen::container<std::vector<int>>(n, rc::gen::inRange(0, types));
  IncrementTable table{"generated", std::vector<std::string>(types, "t"), increments};
  const auto field = field_of_types(table, seq);
  const auto bias = fpa_bias_of(field);
  const auto truth = first_passage_mask(field);
  RC_ASSERT(at::equal(alive_sets(bias, 0.0), truth));
  const auto lower = at::ones({n, n}, at::kBool).tril();
  RC_ASSERT(bias.masked_select(truth).abs().max().item<double>() == 0.0);
  const auto dead = bias.masked_select(lower & ~truth);
  if (dead.numel() > 0) RC_ASSERT(dead.max().item<double>() <= -1.0);
}

// T5: evicting keys below -(2R + log(N/eps)) changes no output by more than 2 eps V, and
// evicted keys stay below the threshold for every later query (random caches).
RC_GTEST_PROP(TheoryT5, EvictionChangesOutputsByAtMostTwoEpsV, ()) {
  const int n = *rc::gen::inRange(2, 65);
  const int d = *rc::gen::inRange(1, 9);
  const double eps = *rc::gen::element(0.3, 0.1, 0.01);
  const double step = *rc::gen::element(1.0, 3.0, 6.0);
  const double qk = *rc::gen::element(0.3, 1.0, 2.0);
  EvictionCase c;
  c.eps = eps;
  c.field = cumulative_sum(*steps(n, -3, 3, step));
  at::manual_seed(*rc::gen::inRange(0, 1 << 30));
  c.q = at::randn({n, d}, kF64) * qk;
  c.k = at::randn({n, d}, kF64) * qk;
  c.v = at::randn({n, d}, kF64);
  const auto r = run_eviction(c);
  RC_ASSERT(r.max_change <= r.bound * (1 + 1e-9));
  RC_ASSERT(r.later_violations == 0);
  RC_ASSERT(r.reference_mismatch <= 1e-10);
}

// T5 on near-worst-case caches: the bound holds and is nearly attained, so a threshold that
// forgot a term (for example -(R + log(N/eps))) is caught.
RC_GTEST_PROP(TheoryT5, EvictionBoundHoldsAndIsNearlyTightOnWorstCases, ()) {
  const int n = *rc::gen::inRange(2, 201);
  const double R = *rc::gen::inRange(0, 11) * 0.5;
  const double eps = *rc::gen::element(0.3, 0.1, 0.01, 1e-4);
  const auto r = run_eviction(adversarial_eviction_case(n, R, 1.0, eps));
  RC_ASSERT(r.max_change <= r.bound * (1 + 1e-9));
  // Exact value 2 eps V (n-1)/n / (1 + eps (n-1)/n) up to the 1e-9 slack below the threshold.
  const double m = eps * (n - 1) / n;
  RC_ASSERT(r.max_change >= 0.999 * r.bound * ((n - 1.0) / n) / (1 + m));
}
