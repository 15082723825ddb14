// RapidCheck: random shapes, tile sizes, fields and temperatures; the fused kernels agree with
// the float64 reference in outputs and all gradients (float64 and float32).
#include "test_fused_support.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace fpa::testing {
namespace {

RC_GTEST_PROP(FusedProperty, MatchesReferenceOnRandomProblems, ()) {
  const Shape shape{*rc::gen::inRange<int64_t>(1, 3), *rc::gen::inRange<int64_t>(1, 3),
                    *rc::gen::inRange<int64_t>(1, 60), *rc::gen::element<int64_t>(1, 3, 8, 16)};
  const int64_t tile = *rc::gen::element<int64_t>(1, 4, 7, 16, 64);
  const auto variant = *rc::gen::element(Variant::Softmax, Variant::Fox, Variant::Fpa);
  const auto fpa_backward = *rc::gen::element(FpaBackward::Exact, FpaBackward::StraightThrough);
  const auto field = *rc::gen::element(Field::Random, Field::Integer, Field::Flat,
                                       Field::Increasing, Field::Decreasing, Field::Steep);
  const double tau = *rc::gen::element(0.25, 1.0, 3.0);
  const auto dtype = *rc::gen::element(at::kDouble, at::kFloat);
  const uint64_t seed = *rc::gen::inRange<uint64_t>(0, 1000000);
  const Inputs in = make_inputs(shape, variant, field, seed);
  AttentionOptions opts{variant, Impl::Reference, fpa_backward, tau, 0.0};
  const Result want = run(in, opts, at::kDouble);
  opts.impl = Impl::Fused;
  const Errors e = compare(run(in, opts, dtype, tile), want, dtype);
  RC_LOG() << to_string(variant) << " " << to_string(fpa_backward) << " field " << name(field)
           << " tau " << tau << " shape (" << shape.batch << "," << shape.heads << ","
           << shape.n << "," << shape.d << ") tile " << tile << " seed " << seed << ": "
           << e.str() << "\n";
  RC_ASSERT(e.worst() <= tolerance(dtype));
}

}  // namespace
}  // namespace fpa::testing
