// Hand-computed cases for the reference operators: each variant's bias and output, alive sets,
// RoPE, and the entry point's argument checks.
#include "kernels/attention.h"
#include "kernels/reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace fpa;

namespace {
const double inf = std::numeric_limits<double>::infinity();

at::Tensor vec(std::vector<double> x) { return at::tensor(x, at::kDouble); }
at::Tensor as_bh(const at::Tensor& t) { return t.reshape({1, 1, t.size(0)}); }  // (1,1,N)
at::Tensor mat(std::vector<std::vector<double>> rows) {
  std::vector<at::Tensor> r;
  for (auto& row : rows) r.push_back(vec(row));
  return at::stack(r);
}
void expect_equal(const at::Tensor& a, const at::Tensor& b) {
  ASSERT_EQ(a.sizes(), b.sizes());
  // allclose treats -inf == -inf as equal when both are -inf
  EXPECT_TRUE(at::allclose(a, b, 1e-12, 1e-12)) << a << "\nexpected\n" << b;
}
}  // namespace

TEST(FpaBias, HandComputedRisingThenDipping) {
  // phi = (0, 2, 1): query 3 keeps key 1 (nothing after it goes below 0) and kills key 2
  // (phi_3 = 1 dips below phi_2 = 2 by 1).
  expect_equal(fpa_bias(vec({0, 2, 1})), mat({{0, -inf, -inf}, {0, 0, -inf}, {0, -1, 0}}));
  // phi = (3, 1, 2): key 1 is dead from query 2 on (dip of 2), key 2 alive at query 3.
  expect_equal(fpa_bias(vec({3, 1, 2})), mat({{0, -inf, -inf}, {-2, 0, -inf}, {-2, 0, 0}}));
}

TEST(FpaBias, WalkParameterisationIsCumulativeSum) {
  expect_equal(fpa_field_from_increments(vec({0, 2, -1})), vec({0, 2, 1}));
}

TEST(FoxBias, HandComputed) {
  // log f = (-0.5, -1, -2): F = (-0.5, -1.5, -3.5), b_ij = F_i - F_j.
  expect_equal(fox_bias(vec({-0.5, -1, -2})),
               mat({{0, -inf, -inf}, {-1, 0, -inf}, {-3, -2, 0}}));
}

TEST(AliveSets, ThreeTokenCaseFpaKeepsKey1KillsKey2FoxCannot) {
  auto alive = alive_sets(fpa_bias(vec({0, 2, 1})), 0.0);
  EXPECT_TRUE(alive[2][0].item<bool>());
  EXPECT_FALSE(alive[2][1].item<bool>());
  EXPECT_TRUE(alive[2][2].item<bool>());
  // FoX: keeping key 1 at margin 0 needs log f_2 = log f_3 = 0, which keeps key 2 alive too.
  auto fox = alive_sets(fox_bias(vec({-0.3, 0.0, 0.0})), 0.0);
  EXPECT_TRUE(fox[2][0].item<bool>());
  EXPECT_TRUE(fox[2][1].item<bool>());
  // A margin widens the alive set: at tau = 1 key 2 of the FPA field is alive again.
  EXPECT_TRUE(alive_sets(fpa_bias(vec({0, 2, 1})), 1.0)[2][1].item<bool>());
  EXPECT_FALSE(alive_sets(fpa_bias(vec({0, 2, 1})), 0.999)[2][1].item<bool>());
}

TEST(PathArgmin, LatestPositionWinsTies) {
  auto idx = path_argmin(vec({0, 1, 0, 0}));
  EXPECT_EQ(idx[3][0].item<int64_t>(), 3);  // min 0 at l = 0, 2, 3: latest is 3
  EXPECT_EQ(idx[2][1].item<int64_t>(), 2);
  EXPECT_EQ(idx[1][0].item<int64_t>(), 0);
  EXPECT_EQ(idx[1][1].item<int64_t>(), 1);
}

TEST(ReferenceAttention, HandComputedSoftmaxAndFox) {
  // N = 2, D = 1 (scale 1): q = (1, 1), k = (1, 2), v = (10, 20).
  auto q = vec({1, 1}).reshape({1, 1, 2, 1});
  auto k = vec({1, 2}).reshape({1, 1, 2, 1});
  auto v = vec({10, 20}).reshape({1, 1, 2, 1});
  const double e = std::exp(1.0);
  AttentionOptions o;
  auto out = attention(q, k, v, {}, o);
  EXPECT_NEAR(out[0][0][0][0].item<double>(), 10.0, 1e-12);
  EXPECT_NEAR(out[0][0][1][0].item<double>(), (10 + 20 * e) / (1 + e), 1e-12);
  // FoX with log f_2 = -1: key 1 at query 2 gets bias -1, logits (0, 2).
  o.variant = Variant::Fox;
  out = attention(q, k, v, as_bh(vec({-5, -1})), o);
  const double e2 = std::exp(2.0);
  EXPECT_NEAR(out[0][0][1][0].item<double>(), (10 + 20 * e2) / (1 + e2), 1e-12);
  // FPA with phi = (0, -1): the same bias as that FoX head (a falling field, T1).
  o.variant = Variant::Fpa;
  out = attention(q, k, v, as_bh(vec({0, -1})), o);
  EXPECT_NEAR(out[0][0][1][0].item<double>(), (10 + 20 * e2) / (1 + e2), 1e-12);
  // FPA with phi = (0, 1): rising field, key 1 stays alive: plain softmax output.
  out = attention(q, k, v, as_bh(vec({0, 1})), o);
  EXPECT_NEAR(out[0][0][1][0].item<double>(), (10 + 20 * e) / (1 + e), 1e-12);
}

TEST(ReferenceAttention, ThreeTokenFpaSelectsKeys1And3) {
  // q.k = 0 everywhere, so attention is softmax of the bias alone. phi = (0, 20, 0): key 2
  // is dead at query 3 (dip of 20), keys 1 and 3 share the mass equally.
  auto z = at::zeros({1, 1, 3, 1}, at::kDouble);
  auto v = vec({1, 100, 3}).reshape({1, 1, 3, 1});
  AttentionOptions o;
  o.variant = Variant::Fpa;
  auto out = attention(z, z, v, as_bh(vec({0, 20, 0})), o);
  EXPECT_NEAR(out[0][0][2][0].item<double>(), 2.0 + 98.0 * std::exp(-20.0) / (2 + std::exp(-20.0)),
              1e-12);
}

TEST(Rope, RotatesPairsAndDependsOnlyOnRelativePosition) {
  auto x = vec({1, 0}).reshape({1, 1, 1, 2});
  auto r = apply_rope(x, 1);  // position 1, frequency 1: angle 1 radian
  EXPECT_NEAR(r[0][0][0][0].item<double>(), std::cos(1.0), 1e-12);
  EXPECT_NEAR(r[0][0][0][1].item<double>(), std::sin(1.0), 1e-12);
  at::manual_seed(0);
  auto q = at::randn({1, 2, 5, 8}, at::kDouble), k = at::randn({1, 2, 5, 8}, at::kDouble);
  auto s0 = at::matmul(apply_rope(q, 0), apply_rope(k, 0).transpose(-1, -2));
  auto s7 = at::matmul(apply_rope(q, 7), apply_rope(k, 7).transpose(-1, -2));
  EXPECT_TRUE(at::allclose(s0, s7, 1e-10, 1e-10));
  EXPECT_TRUE(at::allclose(apply_rope(q, 3).norm(2, -1), q.norm(2, -1), 1e-12, 1e-12));
}

TEST(Attention, RejectsBadArguments) {
  auto q = at::zeros({1, 1, 3, 4}, at::kDouble);
  AttentionOptions o;
  EXPECT_THROW(attention(q.squeeze(0), q, q, {}, o), std::invalid_argument);
  EXPECT_THROW(attention(q, q.to(at::kFloat), q, {}, o), std::invalid_argument);
  o.variant = Variant::Fpa;
  EXPECT_THROW(attention(q, q, q, {}, o), std::invalid_argument);  // no field
  EXPECT_THROW(attention(q, q, q, at::zeros({1, 1, 4}, at::kDouble), o), std::invalid_argument);
  EXPECT_THROW(attention(q.to(at::kInt), q, q, {}, AttentionOptions{}), std::invalid_argument);
  EXPECT_THROW(parse_variant("fpa2"), std::invalid_argument);
  // Non-finite scalars: `scale >= 0` alone let +inf through to an all-NaN output.
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {inf, std::nan(""), -1.0}) {
    AttentionOptions s;
    s.scale = bad;
    EXPECT_THROW(attention(q, q, q, {}, s), std::invalid_argument) << "scale " << bad;
    s.scale = 0;
    s.st_temperature = bad;
    EXPECT_THROW(attention(q, q, q, {}, s), std::invalid_argument) << "temperature " << bad;
  }
  EXPECT_THROW(fpa_bias(q[0][0][0], FpaBackward::StraightThrough, inf), std::invalid_argument);
  EXPECT_THROW(apply_rope(q, 0, inf), std::invalid_argument);
  EXPECT_EQ(parse_fpa_backward("straight-through"), FpaBackward::StraightThrough);
  EXPECT_EQ(to_string(parse_impl("fused")), "fused");
}
