// Gradients of the reference operators in float64: central finite differences for q, k, v,
// forget gates and the field (exact mode, away from ties), the stated rule at ties, and
// straight-through against the gradient of the soft minimum it stands for.
#include "kernels/attention.h"

#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <functional>

using namespace fpa;

namespace {

// Compares autograd's gradient of f at x with central differences, entry by entry.
void expect_grad_matches_fd(const std::function<at::Tensor(const at::Tensor&)>& f, at::Tensor x,
                            double tol = 1e-6) {
  x = x.detach().clone().set_requires_grad(true);
  f(x).backward();
  auto analytic = x.grad().clone();
  auto flat = x.detach().clone().reshape({-1});
  const double eps = 1e-6;
  for (int64_t e = 0; e < flat.numel(); ++e) {
    auto plus = flat.clone(), minus = flat.clone();
    plus[e] += eps;
    minus[e] -= eps;
    const double fd = (f(plus.reshape(x.sizes())).item<double>() -
                       f(minus.reshape(x.sizes())).item<double>()) / (2 * eps);
    EXPECT_NEAR(analytic.reshape({-1})[e].item<double>(), fd, tol * (1 + std::abs(fd)))
        << "entry " << e;
  }
}

struct Inputs {
  at::Tensor q, k, v, gate, weights;
};

Inputs random_inputs(int64_t b, int64_t h, int64_t n, int64_t d, uint64_t seed) {
  at::manual_seed(seed);
  auto o = at::TensorOptions().dtype(at::kDouble);
  return {at::randn({b, h, n, d}, o), at::randn({b, h, n, d}, o), at::randn({b, h, n, d}, o),
          at::randn({b, h, n}, o), at::randn({b, h, n, d}, o)};
}

}  // namespace

class ReferenceGrad : public ::testing::TestWithParam<Variant> {};

TEST_P(ReferenceGrad, MatchesFiniteDifferencesForEveryInput) {
  auto in = random_inputs(2, 2, 6, 3, 7);
  AttentionOptions o;
  o.variant = GetParam();
  if (o.variant == Variant::Fox) in.gate = -at::softplus(in.gate);  // log f <= 0
  auto loss = [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                  const at::Tensor& g) { return (attention(q, k, v, g, o) * in.weights).sum(); };
  expect_grad_matches_fd([&](const at::Tensor& x) { return loss(x, in.k, in.v, in.gate); }, in.q);
  expect_grad_matches_fd([&](const at::Tensor& x) { return loss(in.q, x, in.v, in.gate); }, in.k);
  expect_grad_matches_fd([&](const at::Tensor& x) { return loss(in.q, in.k, x, in.gate); }, in.v);
  if (o.variant != Variant::Softmax)  // Gaussian field: no ties, so exact mode is differentiable
    expect_grad_matches_fd([&](const at::Tensor& x) { return loss(in.q, in.k, in.v, x); },
                           in.gate);
}

INSTANTIATE_TEST_SUITE_P(Variants, ReferenceGrad,
                         ::testing::Values(Variant::Softmax, Variant::Fox, Variant::Fpa),
                         [](const auto& info) { return to_string(info.param); });

TEST(FpaExactGrad, TieRuleSendsGradientToLatestMinimum) {
  // phi = (0, 1, 0): the minimum over [1, 3] is attained at l = 1 and l = 3; the rule picks
  // l* = 3, so d b_31 / d phi = (-1, 0, +1).
  auto phi = at::tensor(std::vector<double>{0, 1, 0}, at::kDouble).set_requires_grad(true);
  fpa_bias(phi)[2][0].backward();
  EXPECT_TRUE(at::equal(phi.grad(), at::tensor(std::vector<double>{-1, 0, 1}, at::kDouble)));
  // An alive key whose minimum is itself (l* = j) passes no gradient to the field.
  auto rising = at::tensor(std::vector<double>{0, 1, 2}, at::kDouble).set_requires_grad(true);
  fpa_bias(rising)[2][0].backward();
  EXPECT_TRUE(at::equal(rising.grad(), at::zeros({3}, at::kDouble)));
}

namespace {
// The soft-minimum bias written independently, slice by slice:
// m_s(j, i) = -tau log sum_{l=j..i} exp(-phi_l / tau), bias_s = m_s - phi_j (j <= i).
at::Tensor soft_bias_naive(const at::Tensor& phi, double tau) {
  const int64_t n = phi.size(0);
  std::vector<at::Tensor> entries;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j)
      entries.push_back(-tau * at::logsumexp(-phi.slice(0, j, i + 1) / tau, 0) - phi[j]);
  return at::stack(entries);
}
at::Tensor lower_entries(const at::Tensor& m) {
  const int64_t n = m.size(0);
  std::vector<at::Tensor> entries;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) entries.push_back(m[i][j]);
  return at::stack(entries);
}
}  // namespace

TEST(FpaStraightThroughGrad, ForwardIsExactBackwardIsTheSoftMinimumGradient) {
  at::manual_seed(3);
  for (double tau : {1.0, 0.3}) {
    auto phi = at::randn({7}, at::kDouble);
    phi[4] = phi[2];  // a tie, which the soft minimum does not care about
    auto g = at::randn({7 * 8 / 2}, at::kDouble);
    auto x = phi.clone().set_requires_grad(true);
    auto st = fpa_bias(x, FpaBackward::StraightThrough, tau);
    EXPECT_TRUE(at::equal(st.detach(), fpa_bias(phi).detach()));  // exact forward
    (lower_entries(st) * g).sum().backward();
    auto y = phi.clone().set_requires_grad(true);
    (soft_bias_naive(y, tau) * g).sum().backward();
    EXPECT_TRUE(at::allclose(x.grad(), y.grad(), 1e-12, 1e-12)) << x.grad() << y.grad();
    // and the soft bias's own gradient matches finite differences
    expect_grad_matches_fd([&](const at::Tensor& p) { return (soft_bias_naive(p, tau) * g).sum(); },
                           phi);
  }
}

TEST(FpaStraightThroughGrad, RisingFieldStillGetsGradient) {
  // The failure mode of `exact`: every key alive, zero gradient. Straight-through is not stuck.
  auto phi = at::arange(6, at::kDouble).set_requires_grad(true);
  auto psi = at::arange(6, at::kDouble).set_requires_grad(true);
  fpa_bias(phi).masked_fill(at::ones({6, 6}, at::kBool).triu(1), 0).sum().backward();
  fpa_bias(psi, FpaBackward::StraightThrough).masked_fill(at::ones({6, 6}, at::kBool).triu(1), 0)
      .sum().backward();
  EXPECT_EQ(phi.grad().abs().sum().item<double>(), 0.0);
  EXPECT_GT(psi.grad().abs().sum().item<double>(), 0.1);
}

TEST(FpaStraightThroughGrad, DoubleBackwardMatchesTheSoftMinimum) {
  // A gradient penalty through the straight-through bias: its second derivative is the soft
  // minimum's. LibTorch's own logcumsumexp gave NaN here (its backward takes log |grad|, and a
  // grad of exactly 0 is common).
  at::manual_seed(5);
  const auto phi = at::randn({7}, at::kDouble);
  const auto g = at::randn({7 * 8 / 2}, at::kDouble);
  auto penalty_grad = [&](const std::function<at::Tensor(const at::Tensor&)>& bias) {
    auto x = phi.clone().set_requires_grad(true);
    auto first = torch::autograd::grad({(bias(x) * g).sum()}, {x}, {}, /*retain_graph=*/true,
                                       /*create_graph=*/true)[0];
    return torch::autograd::grad({first.square().sum()}, {x})[0];
  };
  const auto got = penalty_grad([](const at::Tensor& x) {
    return lower_entries(fpa_bias(x, FpaBackward::StraightThrough, 0.7));
  });
  const auto want = penalty_grad([](const at::Tensor& x) { return soft_bias_naive(x, 0.7); });
  EXPECT_FALSE(got.isnan().any().item<bool>());
  EXPECT_TRUE(at::allclose(got, want, 1e-10, 1e-12)) << got << want;
}

TEST(FpaStraightThroughGrad, Float32GradientIgnoresTheFieldsLevel) {
  // The bias is invariant to a constant added to phi, so is the soft minimum's gradient. The
  // reference centres each row's exponents on its exact minimum; uncentred, a float32 field at
  // level 1e4 moved the gradient by ~5e-4. The field is on a grid of 1/64, exact in float32 at
  // these levels.
  at::manual_seed(8);
  const auto phi = at::round(at::randn({60}, at::kDouble).cumsum(0) * 64) / 64;
  const auto g = at::randn({60, 60}, at::kDouble).tril().to(at::kFloat);
  auto field_grad = [&](double offset) {
    auto x = (phi + offset).to(at::kFloat).set_requires_grad(true);
    auto b = fpa_bias(x, FpaBackward::StraightThrough, 0.7);
    (b.masked_fill(at::ones({60, 60}, at::kBool).triu(1), 0) * g).sum().backward();
    return x.grad();
  };
  const auto level0 = field_grad(0.0);
  for (double offset : {1e3, 1e4, -1e4}) {
    const double moved = (field_grad(offset) - level0).abs().max().item<double>() /
                         level0.abs().max().item<double>();
    EXPECT_LE(moved, 1e-6) << "offset " << offset;
  }
}

TEST(ReferenceAttention, EmptySequenceGivesEmptyOutputAndGradients) {
  // N = 0 used to fail in path_argmin's reshape({-1, 0}).
  for (Variant variant : {Variant::Softmax, Variant::Fox, Variant::Fpa}) {
    for (FpaBackward mode : {FpaBackward::Exact, FpaBackward::StraightThrough}) {
      auto q = at::zeros({2, 3, 0, 4}, at::kDouble).set_requires_grad(true);
      auto v = at::zeros({2, 3, 0, 5}, at::kDouble).set_requires_grad(true);
      auto gate = at::zeros({2, 3, 0}, at::kDouble).set_requires_grad(true);
      AttentionOptions o{variant, Impl::Reference, mode, 1.0, 0.0};
      auto out = attention(q, q, v, variant == Variant::Softmax ? at::Tensor() : gate, o);
      EXPECT_EQ(out.sizes(), v.sizes());
      out.sum().backward();
      EXPECT_EQ(q.grad().sizes(), q.sizes());
      if (variant != Variant::Softmax) EXPECT_EQ(gate.grad().sizes(), gate.sizes());
    }
  }
  EXPECT_EQ(fpa_bias(at::zeros({2, 0}, at::kDouble)).sizes(), (std::vector<int64_t>{2, 0, 0}));
}
