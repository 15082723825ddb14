// Shared by the fused-kernel tests: inputs with chosen field shapes, and the comparison of an
// implementation's output and gradients against the float64 reference.
#pragma once

#include "kernels/attention.h"
#include "kernels/cpu/fused_cpu.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

namespace fpa::testing {

// How the gate (FoX log forget gates, FPA field) is drawn.
enum class Field {
  Random,      // continuous random walk: no ties
  Integer,     // walk with increments in {-2..2}: many ties (equal levels)
  Flat,        // long stretches of equal levels with rare steps
  Increasing,  // every key stays alive (FPA exact: zero field gradient)
  Decreasing,  // FPA equals FoX here
  Steep,       // random walk with large steps: a tile's soft-min mass spans more than the
               // factored straight-through path allows, so the general path runs
};

inline const char* name(Field f) {
  switch (f) {
    case Field::Random: return "random";
    case Field::Integer: return "integer";
    case Field::Flat: return "flat";
    case Field::Increasing: return "increasing";
    case Field::Decreasing: return "decreasing";
    case Field::Steep: return "steep";
  }
  return "?";
}

struct Shape {
  int64_t batch, heads, n, d;
};

struct Inputs {
  at::Tensor q, k, v, gate, dout;  // float64 values exactly representable in float32
};

inline at::Tensor make_field(int64_t b, int64_t h, int64_t n, Field f, at::Generator& gen) {
  const auto o = at::TensorOptions().dtype(at::kDouble);
  at::Tensor inc;
  switch (f) {
    case Field::Random: inc = at::randn({b, h, n}, gen, o); break;
    case Field::Integer: inc = at::randint(-2, 3, {b, h, n}, gen, o); break;
    case Field::Flat:
      inc = at::randint(-1, 2, {b, h, n}, gen, o) * (at::rand({b, h, n}, gen, o) < 0.1);
      break;
    case Field::Increasing: inc = at::rand({b, h, n}, gen, o) + 0.01; break;
    case Field::Decreasing: inc = -at::rand({b, h, n}, gen, o) - 0.01; break;
    case Field::Steep: inc = at::randn({b, h, n}, gen, o) * 40.0; break;
  }
  return at::cumsum(inc, -1);
}

inline Inputs make_inputs(const Shape& s, Variant variant, Field field, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto o = at::TensorOptions().dtype(at::kDouble);
  auto f32 = [](const at::Tensor& t) { return t.to(at::kFloat).to(at::kDouble); };
  Inputs in;
  in.q = f32(at::randn({s.batch, s.heads, s.n, s.d}, gen, o));
  in.k = f32(at::randn({s.batch, s.heads, s.n, s.d}, gen, o));
  in.v = f32(at::randn({s.batch, s.heads, s.n, s.d}, gen, o));
  in.dout = f32(at::randn({s.batch, s.heads, s.n, s.d}, gen, o));
  if (variant == Variant::Fpa) {
    in.gate = f32(make_field(s.batch, s.heads, s.n, field, gen));
  } else if (variant == Variant::Fox) {
    // Log forget gates: log sigmoid of a walk-shaped pre-activation keeps the field's ties.
    in.gate = f32(at::log_sigmoid(make_field(s.batch, s.heads, s.n, field, gen) * 0.5 + 2.0));
  }
  return in;
}

struct Result {
  at::Tensor out, dq, dk, dv, dgate;
};

// Output and gradients of sum(out * dout) for one implementation at one dtype.
inline Result run(const Inputs& in, const AttentionOptions& opts, at::ScalarType dtype,
                  int64_t tile = kFusedTile) {
  auto leaf = [&](const at::Tensor& t) {
    return t.defined() ? t.to(dtype).detach().requires_grad_(true) : at::Tensor();
  };
  auto q = leaf(in.q), k = leaf(in.k), v = leaf(in.v), gate = leaf(in.gate);
  at::Tensor out = opts.impl == Impl::Fused ? fused_attention_cpu(q, k, v, gate, opts, tile)
                                            : attention(q, k, v, gate, opts);
  std::vector<at::Tensor> inputs{q, k, v};
  if (gate.defined()) inputs.push_back(gate);
  auto grads = torch::autograd::grad({(out * in.dout.to(dtype)).sum()}, inputs);
  Result r;
  r.out = out.detach().to(at::kDouble);
  r.dq = grads[0].to(at::kDouble);
  r.dk = grads[1].to(at::kDouble);
  r.dv = grads[2].to(at::kDouble);
  if (gate.defined()) r.dgate = grads[3].to(at::kDouble);
  return r;
}

// max |a - b| / max(max |b|, floor). The floor keeps a gradient that is zero in exact arithmetic
// (q and k at n = 1, the field of an all-alive FPA head) from turning rounding noise into a
// huge relative error; compare() sets it to a small fraction of the problem's gradient scale.
// A NaN or infinite difference is an infinite error: a NaN would otherwise vanish in the
// std::max of several errors (NaN compares false), and a NaN gradient would pass.
inline double rel_error(const at::Tensor& a, const at::Tensor& b, double floor) {
  if (b.numel() == 0) return 0.0;
  const double diff = (a - b).abs().max().item<double>();
  if (!std::isfinite(diff)) return HUGE_VAL;
  const double scale = std::max(b.abs().max().item<double>(), floor);
  return diff / scale;
}

struct Errors {
  double out = 0, dq = 0, dk = 0, dv = 0, dgate = 0;
  double worst() const { return std::max({out, dq, dk, dv, dgate}); }
  std::string str() const {
    std::ostringstream s;
    s << std::scientific << std::setprecision(2) << "out " << out << " dq " << dq << " dk " << dk
      << " dv " << dv << " dgate " << dgate;
    return s.str();
  }
};

inline Errors compare(const Result& got, const Result& want, at::ScalarType dtype) {
  // Gradient scale of the problem: dLoss/dv = P^T dout is never zero in exact arithmetic.
  const double floor =
      (dtype == at::kDouble ? 1e-3 : 1e-2) * want.dv.abs().max().item<double>();
  Errors e;
  e.out = rel_error(got.out, want.out, floor);
  e.dq = rel_error(got.dq, want.dq, floor);
  e.dk = rel_error(got.dk, want.dk, floor);
  e.dv = rel_error(got.dv, want.dv, floor);
  if (want.dgate.defined()) e.dgate = rel_error(got.dgate, want.dgate, floor);
  return e;
}

inline double tolerance(at::ScalarType dtype) { return dtype == at::kDouble ? 1e-10 : 1e-4; }

// The one exception: FPA's straight-through field gradient from the CPU implementations (fused
// and reference alike: one centre of the soft minimum per query block or row, kernels/README
// "Straight-through in float32"), which on steep fields at small n reached 2.1e-3 relative in
// float32 and 1.1e-10 in float64 (FusedProperty.StraightThroughFieldErrorOnSteepFields with
// FPA_STEEP_DRAWS=20000, and a RapidCheck counterexample): 50 times the other tolerances.
inline double straight_through_field_tolerance(at::ScalarType dtype) {
  return 50 * tolerance(dtype);
}

}  // namespace fpa::testing
