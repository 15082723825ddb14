// The fused CPU kernels against the float64 reference: outputs and gradients of q, k, v and
// the gate, for every variant and both FPA backward modes, over shapes that stress the tiling
// (n = 1, n not a multiple of the tile, several tiles) and fields with ties and flat or
// monotone stretches.
#include "test_fused_support.h"

#include "kernels/cpu/fused_math.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

namespace fpa::testing {
namespace {

struct Case {
  Variant variant;
  FpaBackward fpa_backward;
  Field field;
};

std::string case_name(const Case& c) {
  std::string s = to_string(c.variant);
  if (c.variant == Variant::Fpa)
    s += c.fpa_backward == FpaBackward::Exact ? "_exact" : "_straight_through";
  if (c.variant != Variant::Softmax) s += std::string("_") + name(c.field);
  return s;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases{{Variant::Softmax, FpaBackward::Exact, Field::Random}};
  for (Field f : {Field::Random, Field::Integer, Field::Flat, Field::Increasing,
                  Field::Decreasing, Field::Steep}) {
    cases.push_back({Variant::Fox, FpaBackward::Exact, f});
    cases.push_back({Variant::Fpa, FpaBackward::Exact, f});
    cases.push_back({Variant::Fpa, FpaBackward::StraightThrough, f});
  }
  return cases;
}

class FusedMatchesReference : public ::testing::TestWithParam<Case> {};

// (batch, heads, n, d, tile): tile 8 and 16 give several tiles at small n.
const std::vector<std::tuple<Shape, int64_t>> kShapes{
    {{1, 1, 1, 16}, 16},  {{1, 1, 1, 1}, 64},   {{2, 3, 5, 1}, 16},  {{1, 2, 37, 16}, 8},
    {{2, 1, 64, 16}, 16}, {{1, 1, 100, 64}, 16}, {{1, 2, 70, 64}, 64}, {{3, 2, 33, 1}, 8},
};

TEST_P(FusedMatchesReference, OutputsAndGradients) {
  const Case c = GetParam();
  uint64_t seed = 1;
  for (const auto& [shape, tile] : kShapes) {
    const Inputs in = make_inputs(shape, c.variant, c.field, seed++);
    AttentionOptions ref{c.variant, Impl::Reference, c.fpa_backward, 1.0, 0.0};
    // A temperature other than 1 checks that tau is used consistently.
    if (c.fpa_backward == FpaBackward::StraightThrough) ref.st_temperature = 0.7;
    const Result want = run(in, ref, at::kDouble);
    AttentionOptions fused = ref;
    fused.impl = Impl::Fused;
    for (auto dtype : {at::kDouble, at::kFloat}) {
      const Errors e = compare(run(in, fused, dtype, tile), want, dtype);
      EXPECT_LE(e.worst(), tolerance(dtype))
          << "shape (" << shape.batch << "," << shape.heads << "," << shape.n << ","
          << shape.d << ") tile " << tile << " dtype " << c10::toString(dtype) << ": "
          << e.str();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllVariants, FusedMatchesReference, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return case_name(info.param); });

TEST(Fused, EntryPointDispatchesToFused) {
  const Inputs in = make_inputs({1, 2, 40, 8}, Variant::Fpa, Field::Integer, 7);
  AttentionOptions o{Variant::Fpa, Impl::Fused, FpaBackward::Exact, 1.0, 0.0};
  auto via_entry = attention(in.q, in.k, in.v, in.gate, o);
  auto direct = fused_attention_cpu(in.q, in.k, in.v, in.gate, o);
  EXPECT_TRUE(at::equal(via_entry, direct));
  o.impl = Impl::Reference;
  EXPECT_LE(rel_error(via_entry, attention(in.q, in.k, in.v, in.gate, o), 1e-6), 1e-10);
}

TEST(Fused, ExplicitScaleAndNonContiguousInputs) {
  // (B, N, H, D) tensors transposed to (B, H, N, D), as a model produces them.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  const auto o = at::TensorOptions().dtype(at::kDouble);
  auto q = at::randn({2, 30, 3, 8}, gen, o).transpose(1, 2);
  auto k = at::randn({2, 30, 3, 8}, gen, o).transpose(1, 2);
  auto v = at::randn({2, 30, 3, 8}, gen, o).transpose(1, 2);
  auto gate = at::cumsum(at::randn({2, 3, 30}, gen, o), -1);
  for (Variant var : {Variant::Softmax, Variant::Fox, Variant::Fpa}) {
    AttentionOptions opts{var, Impl::Reference, FpaBackward::Exact, 1.0, 0.3};
    auto g = var == Variant::Fox ? at::log_sigmoid(gate) : gate;
    auto want = attention(q, k, v, g, opts);
    opts.impl = Impl::Fused;
    EXPECT_LE(rel_error(fused_attention_cpu(q, k, v, g, opts, 8), want, 1e-6), 1e-10)
        << to_string(var);
  }
}

TEST(Fused, ValueDimensionMayDifferFromKeyDimension) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(9);
  const auto o = at::TensorOptions().dtype(at::kDouble);
  auto q = at::randn({1, 2, 45, 8}, gen, o), k = at::randn({1, 2, 45, 8}, gen, o);
  auto v = at::randn({1, 2, 45, 3}, gen, o);
  auto field = at::cumsum(at::randint(-2, 3, {1, 2, 45}, gen, o), -1);
  Inputs in{q, k, v, field, at::randn({1, 2, 45, 3}, gen, o)};
  AttentionOptions opts{Variant::Fpa, Impl::Reference, FpaBackward::StraightThrough, 1.0, 0.0};
  const Result want = run(in, opts, at::kDouble);
  opts.impl = Impl::Fused;
  EXPECT_LE(compare(run(in, opts, at::kDouble, 16), want, at::kDouble).worst(), 1e-10);
}

TEST(Fused, SameResultForAnyThreadCount) {
  // The backward splits query blocks into per-chunk slots when heads are few; results must
  // not depend on how many threads ran (up to the fixed summation order of the slots).
  const Inputs in = make_inputs({1, 1, 200, 16}, Variant::Fpa, Field::Integer, 11);
  AttentionOptions opts{Variant::Fpa, Impl::Fused, FpaBackward::StraightThrough, 1.0, 0.0};
  const int before = at::get_num_threads();
  at::set_num_threads(1);
  const Result one = run(in, opts, at::kDouble, 16);
  at::set_num_threads(2);
  const Result two = run(in, opts, at::kDouble, 16);
  at::set_num_threads(before);
  EXPECT_LE(compare(two, one, at::kDouble).worst(), 1e-12);
}

TEST(Fused, GradientsOnlyWhereRequested) {
  const Inputs in = make_inputs({1, 1, 20, 4}, Variant::Fox, Field::Random, 5);
  auto q = in.q.clone().requires_grad_(true);
  AttentionOptions opts{Variant::Fox, Impl::Fused, FpaBackward::Exact, 1.0, 0.0};
  auto out = attention(q, in.k, in.v, in.gate, opts);
  out.sum().backward();
  ASSERT_TRUE(q.grad().defined());
  EXPECT_FALSE(in.k.grad().defined());
}

// The empty sequence: an empty output of shape (B, H, 0, Dv) and empty gradients, the same in
// every implementation (the reference used to fail in reshape, the fused one did not).
TEST(Fused, EmptySequenceGivesEmptyOutputAndGradients) {
  for (const Case& c : all_cases()) {
    if (c.field != Field::Random) continue;
    const Inputs in = make_inputs({2, 3, 0, 4}, c.variant, c.field, 1);
    for (Impl impl : {Impl::Reference, Impl::Fused}) {
      const AttentionOptions o{c.variant, impl, c.fpa_backward, 0.7, 0.0};
      const Result r = run(in, o, at::kFloat);
      EXPECT_EQ(r.out.sizes(), in.v.sizes()) << case_name(c) << " " << to_string(impl);
      EXPECT_EQ(r.dq.sizes(), in.q.sizes()) << case_name(c) << " " << to_string(impl);
      EXPECT_EQ(r.dv.sizes(), in.v.sizes()) << case_name(c) << " " << to_string(impl);
      if (in.gate.defined()) EXPECT_EQ(r.dgate.sizes(), in.gate.sizes()) << case_name(c);
    }
  }
}

// FPA's bias is invariant to adding a constant to the field, and so is the straight-through
// gradient. In float32 the soft minimum's exponents used to be -phi/tau themselves: at a level
// of 1e4 their rounding moved the field gradient by ~4e-4 (fused) and ~5e-4 (reference). Both are
// centred now. Fields on a grid of 1/64 are exact in float32 at these levels, so any change comes
// from the kernels. Random: the factored path of the fused backward; steep: the general one.
TEST(Fused, StraightThroughFieldGradientIgnoresTheFieldsLevel) {
  for (Field f : {Field::Random, Field::Steep}) {
    Inputs in = make_inputs({1, 2, 150, 8}, Variant::Fpa, f, 21);
    in.gate = at::round(in.gate * 64) / 64;
    for (Impl impl : {Impl::Reference, Impl::Fused}) {
      const AttentionOptions o{Variant::Fpa, impl, FpaBackward::StraightThrough, 0.7, 0.0};
      const Result level0 = run(in, o, at::kFloat, 16);
      for (double offset : {1e3, 1e4, -1e4}) {
        Inputs moved = in;
        moved.gate = in.gate + offset;
        const Result r = run(moved, o, at::kFloat, 16);
        EXPECT_TRUE(at::equal(r.out, level0.out)) << name(f) << " " << to_string(impl);
        EXPECT_LE(rel_error(r.dgate, level0.dgate, 0.0), 1e-6)
            << name(f) << " " << to_string(impl) << " offset " << offset;
      }
    }
  }
}

// Double backward (a gradient penalty): the fused backward gives first derivatives only, and
// when asked for a graph (create_graph) it recomputes through the reference. It used to return a
// gradient that did not require grad, so the penalty trained as if absent.
TEST(Fused, DoubleBackwardMatchesReference) {
  for (const Case& c : all_cases()) {
    if (c.field != Field::Random) continue;
    const Inputs in = make_inputs({1, 2, 20, 4}, c.variant, c.field, 5);
    std::vector<at::Tensor> second[2];
    for (Impl impl : {Impl::Reference, Impl::Fused}) {
      std::vector<at::Tensor> leaves{in.q.clone().requires_grad_(), in.k.clone().requires_grad_(),
                                     in.v.clone().requires_grad_()};
      if (in.gate.defined()) leaves.push_back(in.gate.clone().requires_grad_());
      const AttentionOptions o{c.variant, impl, c.fpa_backward, 0.7, 0.0};
      const auto out = attention(leaves[0], leaves[1], leaves[2],
                                 in.gate.defined() ? leaves[3] : at::Tensor(), o);
      const auto first = torch::autograd::grad({(out * in.dout).sum()}, leaves, {},
                                               /*retain_graph=*/true, /*create_graph=*/true);
      at::Tensor penalty = at::zeros({}, at::kDouble);
      for (const auto& g : first) {
        ASSERT_TRUE(g.requires_grad()) << case_name(c) << " " << to_string(impl);
        penalty = penalty + g.square().sum();
      }
      second[impl == Impl::Fused] = torch::autograd::grad({penalty}, leaves);
    }
    for (size_t i = 0; i < second[0].size(); ++i)
      EXPECT_LE(rel_error(second[1][i], second[0][i], 1e-12), 1e-10)
          << case_name(c) << " input " << i;
  }
}

// bfloat16/float16 on the CPU: the reference and the fused kernels compute in float32 and return
// the input dtype, so output and gradients are, bit for bit, the float32 computation on the
// rounded inputs rounded back (gradients of q, k, v in their dtype, the float32 gate's in float32).
TEST(HalfPrecision, CpuImplementationsComputeInFloat32AndReturnTheInputDtype) {
  for (const Case& c : all_cases()) {
    if (c.field != Field::Integer) continue;  // ties: the tie rule must survive the casts
    const Inputs in = make_inputs({1, 2, 37, 8}, c.variant, c.field, 13);
    for (Impl impl : {Impl::Reference, Impl::Fused}) {
      const AttentionOptions o{c.variant, impl, c.fpa_backward, 0.7, 0.0};
      for (auto dtype : {at::kBFloat16, at::kHalf}) {
        const std::string what = case_name(c) + " " + to_string(impl) + " " + c10::toString(dtype);
        // The inputs as the caller has them (half), and the same values in float32.
        auto leaves = [&](at::ScalarType t) {
          std::vector<at::Tensor> l;
          for (const auto& x : {in.q, in.k, in.v})
            l.push_back(x.to(dtype).to(t).detach().requires_grad_(true));
          l.push_back(in.gate.defined() ? in.gate.to(at::kFloat).detach().requires_grad_(true)
                                        : at::Tensor());
          return l;
        };
        auto grads = [&](std::vector<at::Tensor>& l, at::Tensor& out) {
          out = attention(l[0], l[1], l[2], l[3], o);
          std::vector<at::Tensor> wrt{l[0], l[1], l[2]};
          if (l[3].defined()) wrt.push_back(l[3]);
          // dout as the half output's backward delivers it: rounded to the dtype.
          const auto dout = in.dout.to(dtype).to(at::kFloat);
          return torch::autograd::grad({(out.to(at::kFloat) * dout).sum()}, wrt);
        };
        auto half = leaves(dtype), single = leaves(at::kFloat);
        at::Tensor out_half, out_single;
        const auto g_half = grads(half, out_half), g_single = grads(single, out_single);
        ASSERT_EQ(out_half.scalar_type(), dtype) << what;
        EXPECT_TRUE(at::equal(out_half, out_single.to(dtype))) << what;
        for (size_t i = 0; i < g_half.size(); ++i) {
          const auto want_dtype = i < 3 ? dtype : at::kFloat;
          ASSERT_EQ(g_half[i].scalar_type(), want_dtype) << what << " grad " << i;
          EXPECT_TRUE(at::equal(g_half[i], g_single[i].to(want_dtype))) << what << " grad " << i;
        }
      }
    }
  }
}

// The gate stays float32 with half-precision q, k, v: a half gate (its levels already rounded
// into ties) and a float64 one are refused, not cast.
TEST(HalfPrecision, GateMustBeFloat32) {
  const Inputs in = make_inputs({1, 1, 6, 4}, Variant::Fpa, Field::Random, 2);
  const auto q = in.q.to(at::kBFloat16);
  for (Impl impl : {Impl::Reference, Impl::Fused}) {
    const AttentionOptions o{Variant::Fpa, impl, FpaBackward::Exact, 1.0, 0.0};
    EXPECT_NO_THROW(attention(q, q, q, in.gate.to(at::kFloat), o));
    for (auto bad : {at::kBFloat16, at::kHalf, at::kDouble})
      EXPECT_THROW(attention(q, q, q, in.gate.to(bad), o), std::invalid_argument)
          << c10::toString(bad);
    EXPECT_THROW(attention(q, q.to(at::kHalf), q, in.gate.to(at::kFloat), o),
                 std::invalid_argument);  // mixed half dtypes
  }
}

// The tiles' float exponential: within 2e-7 of std::exp where the result matters, exactly 0 for
// negligible weights (a subnormal there made FoX's backward 10x slower on some CPUs), and NaN
// still propagates.
TEST(FusedMath, ExpIsAccurateAndDropsNegligibleWeightsToZero) {
  std::vector<float> x;
  for (float v = -63.5f; v <= 80.0f; v += 0.37f) x.push_back(v);
  std::vector<float> y = x;
  fused::exp_inplace(y.data(), int64_t(y.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(double(x[i]));
    EXPECT_NEAR(y[i] / want, 1.0, 2e-7) << "x = " << x[i];
  }
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> tail{-64.5f, -70.0f, -87.0f, -88.0f, -100.0f, -1e30f, -inf,
                          std::numeric_limits<float>::quiet_NaN()};
  fused::exp_inplace(tail.data(), int64_t(tail.size()));
  for (size_t i = 0; i + 1 < tail.size(); ++i) EXPECT_EQ(tail[i], 0.0f) << "entry " << i;
  EXPECT_TRUE(std::isnan(tail.back()));
}

// The forward's row maximum by eight running maxima gives the bits of the one-chain loop it
// replaced, zeros' signs included, on rows with ties, -inf (masked keys), +-0 and NaN.
TEST(FusedMath, MaxOfGivesTheSequentialLoopsBits) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> values{-inf, -1.5f, -0.0f, 0.0f, 2.0f, 2.0f, 7.25f, nan, -3.0f};
  std::mt19937 gen(7);
  std::uniform_int_distribution<size_t> pick(0, values.size() - 1);
  for (int trial = 0; trial < 4000; ++trial) {
    const int64_t n = trial % 70;
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = values[pick(gen)];
    const float init = trial % 3 == 0 ? -inf : values[pick(gen) % 7];  // never NaN, as row_max
    float want = init;
    for (const float v : x) want = std::max(want, v);
    const float got = fused::max_of(x.data(), n, init);
    ASSERT_EQ(std::signbit(got), std::signbit(want)) << "trial " << trial;
    ASSERT_TRUE(got == want || (std::isnan(got) && std::isnan(want))) << "trial " << trial;
  }
}

}  // namespace
}  // namespace fpa::testing
