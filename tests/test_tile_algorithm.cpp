// The GPU kernels' tile algorithm (kernels/cuda/tile_algorithm.h), run on the CPU tile by tile
// in the GPU's order (tile_simulation.h), against the float64 reference: outputs, the row
// log-sum-exp and the gradients of q, k, v and the gate, for softmax, FoX and FPA (exact and
// straight-through), in float64 (tolerance 1e-10, relative to the largest reference value with
// test_fused_support.h's floor) and float32 (1e-4). Fields with ties (integer walks, plateaus
// spanning tiles, a constant field) make the latest-argmin rule decide the exact gradient; steep
// walks push the soft minimum's weights apart by thousands in log space; offsets of 1e3 and 1e4
// test the centring of the soft minimum. FPA_TILE_VERBOSE=1 prints every case's errors.
#include "test_fused_support.h"
#include "tile_simulation.h"

#include "kernels/reference.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fpa::testing {
namespace {

using tiles::sim::Mode;

const char* name(Mode m) {
  switch (m) {
    case Mode::Softmax: return "softmax";
    case Mode::Fox: return "fox";
    case Mode::FpaExact: return "fpa-exact";
    case Mode::FpaSoft: return "fpa-straight-through";
  }
  return "?";
}

constexpr double kTau = 0.7;  // straight-through temperature (not 1, so tau enters)

AttentionOptions reference_options(Mode m) {
  AttentionOptions o;
  o.impl = Impl::Reference;
  o.variant = m == Mode::Softmax ? Variant::Softmax : m == Mode::Fox ? Variant::Fox : Variant::Fpa;
  o.fpa_backward = m == Mode::FpaSoft ? FpaBackward::StraightThrough : FpaBackward::Exact;
  o.st_temperature = kTau;
  return o;
}

Variant variant_of(Mode m) { return reference_options(m).variant; }

template <class T> std::vector<T> to_vector(const at::Tensor& t) {
  if (!t.defined()) return {};
  auto c = t.to(std::is_same_v<T, double> ? at::kDouble : at::kFloat).contiguous();
  const T* p = c.template data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

template <class T> at::Tensor to_tensor(const std::vector<T>& v, at::IntArrayRef shape) {
  auto dtype = std::is_same_v<T, double> ? at::kDouble : at::kFloat;
  return at::from_blob(const_cast<T*>(v.data()), shape, at::TensorOptions().dtype(dtype))
      .clone()
      .to(at::kDouble);
}

struct TileResult {
  Result r;
  at::Tensor lse;
};

template <class T> tiles::sim::Tensors<T> tensors_of(const Inputs& in) {
  tiles::sim::Tensors<T> t;
  t.q = to_vector<T>(in.q);
  t.k = to_vector<T>(in.k);
  t.v = to_vector<T>(in.v);
  t.gate = to_vector<T>(in.gate);
  t.dout = to_vector<T>(in.dout);
  return t;
}

tiles::sim::Problem problem_of(const Inputs& in, Mode mode) {
  tiles::sim::Problem p;
  p.heads = in.q.size(0) * in.q.size(1);
  p.n = in.q.size(2);
  p.d = in.q.size(3);
  p.dv = in.v.size(3);
  p.mode = mode;
  p.scale = 1.0 / std::sqrt(double(p.d));
  p.tau = kTau;
  return p;
}

template <class T> TileResult run_tiles(const Inputs& in, Mode mode, bool reversed = false) {
  auto t = tensors_of<T>(in);
  tiles::sim::TileRun<T>(problem_of(in, mode), t).run(reversed);
  TileResult out;
  out.r.out = to_tensor(t.out, in.v.sizes());
  out.r.dq = to_tensor(t.dq, in.q.sizes());
  out.r.dk = to_tensor(t.dk, in.k.sizes());
  out.r.dv = to_tensor(t.dv, in.v.sizes());
  if (in.gate.defined()) out.r.dgate = to_tensor(t.dgate, in.gate.sizes());
  out.lse = to_tensor(t.lse, in.q.sizes().slice(0, 3));
  return out;
}

// The reference's row log-sum-exp, from its logits: scale q k^T + bias, -inf above the diagonal.
at::Tensor reference_lse(const Inputs& in, Mode mode) {
  const int64_t n = in.q.size(2);
  auto s = at::matmul(in.q, in.k.transpose(-1, -2)) / std::sqrt(double(in.q.size(3)));
  if (mode == Mode::Fox) return at::logsumexp(s + fox_bias(in.gate), -1);
  if (mode == Mode::FpaExact || mode == Mode::FpaSoft) return at::logsumexp(s + fpa_bias(in.gate), -1);
  auto upper = at::ones({n, n}, at::kBool).triu(1);
  return at::logsumexp(s.masked_fill(upper, -std::numeric_limits<double>::infinity()), -1);
}

double lse_error(const at::Tensor& got, const at::Tensor& want) {
  if (want.numel() == 0) return 0.0;
  return (got - want).abs().max().item<double>() / std::max(1.0, want.abs().max().item<double>());
}

// A field of plateaus 37 positions long (so they straddle the 64-wide tiles) at levels 0, 1, 2:
// the minimum of a path is attained at many positions, in every part of the split.
at::Tensor plateau_field(int64_t b, int64_t h, int64_t n, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t runs = n / 37 + 1;
  auto levels = at::randint(0, 3, {b, h, runs}, gen, at::TensorOptions().dtype(at::kDouble));
  return levels.repeat_interleave(37, -1).slice(-1, 0, n).contiguous();
}

enum class Gate { Random, Integer, Flat, Steep, Plateau, Constant };
const char* name(Gate g) {
  switch (g) {
    case Gate::Random: return "random";
    case Gate::Integer: return "integer";
    case Gate::Flat: return "flat";
    case Gate::Steep: return "steep";
    case Gate::Plateau: return "plateau";
    case Gate::Constant: return "constant";
  }
  return "?";
}

Inputs make_case(const Shape& s, Mode mode, Gate gate, uint64_t seed, double offset = 0.0) {
  const Field f = gate == Gate::Integer ? Field::Integer
                  : gate == Gate::Flat  ? Field::Flat
                  : gate == Gate::Steep ? Field::Steep
                                        : Field::Random;
  Inputs in = make_inputs(s, variant_of(mode), f, seed);
  if (mode == Mode::FpaExact || mode == Mode::FpaSoft) {
    if (gate == Gate::Plateau) in.gate = plateau_field(s.batch, s.heads, s.n, seed);
    if (gate == Gate::Constant) in.gate = at::zeros_like(in.gate);
    // Offsets: the values both implementations see are the float32 ones.
    in.gate = (in.gate + offset).to(at::kFloat).to(at::kDouble);
  }
  return in;
}

std::string describe(Mode mode, Gate gate, const Shape& s, at::ScalarType dtype, double offset) {
  std::ostringstream o;
  o << name(mode) << " gate " << name(gate) << " shape (" << s.batch << "," << s.heads << ","
    << s.n << "," << s.d << ") offset " << offset << " " << c10::toString(dtype);
  return o.str();
}

// Runs one case in float64 and float32 against the reference; returns the worst errors seen.
struct Worst {
  double f64 = 0, f32 = 0;
};
void check_case(const Shape& s, Mode mode, Gate gate, uint64_t seed, double offset, Worst& worst) {
  const Inputs in = make_case(s, mode, gate, seed, offset);
  const Result want = run(in, reference_options(mode), at::kDouble);
  const at::Tensor want_lse = reference_lse(in, mode);
  for (auto dtype : {at::kDouble, at::kFloat}) {
    const TileResult got =
        dtype == at::kDouble ? run_tiles<double>(in, mode) : run_tiles<float>(in, mode);
    const Errors e = compare(got.r, want, dtype);
    const double le = lse_error(got.lse, want_lse);
    const double tol = tolerance(dtype);
    EXPECT_LE(e.worst(), tol) << describe(mode, gate, s, dtype, offset) << ": " << e.str();
    EXPECT_LE(le, tol) << describe(mode, gate, s, dtype, offset) << ": lse " << le;
    if (std::getenv("FPA_TILE_VERBOSE"))  // every case's errors
      std::printf("%s: %s lse %.2e\n", describe(mode, gate, s, dtype, offset).c_str(), e.str().c_str(), le);
    double& w = dtype == at::kDouble ? worst.f64 : worst.f32;
    w = std::max({w, e.worst(), le});
  }
}

const std::vector<Shape> kShapes{{1, 1, 1, 16},  {1, 2, 63, 16}, {2, 1, 64, 1},  {1, 1, 65, 64},
                                 {1, 2, 200, 16}, {1, 1, 130, 128}, {1, 1, 513, 16}};

TEST(TileAlgorithm, MatchesReferenceForEveryVariantFieldAndShape) {
  Worst worst;
  uint64_t seed = 100;
  for (Mode mode : {Mode::Softmax, Mode::Fox, Mode::FpaExact, Mode::FpaSoft}) {
    std::vector<Gate> gates{Gate::Random};
    if (mode != Mode::Softmax) gates = {Gate::Random, Gate::Integer, Gate::Flat, Gate::Steep};
    if (mode == Mode::FpaExact || mode == Mode::FpaSoft) {
      gates.push_back(Gate::Plateau);
      gates.push_back(Gate::Constant);
    }
    for (Gate gate : gates)
      for (const Shape& s : kShapes) check_case(s, mode, gate, seed++, 0.0, worst);
  }
  std::printf("worst relative error vs reference: float64 %.3g, float32 %.3g\n", worst.f64,
              worst.f32);
}

TEST(TileAlgorithm, LongSequenceAndWideHeads) {
  Worst worst;
  uint64_t seed = 500;
  for (Mode mode : {Mode::Softmax, Mode::Fox, Mode::FpaExact, Mode::FpaSoft})
    for (const Shape& s : {Shape{1, 1, 513, 64}, Shape{1, 1, 200, 128}})
      check_case(s, mode, mode == Mode::Softmax ? Gate::Random : Gate::Integer, seed++, 0.0, worst);
  std::printf("worst relative error vs reference: float64 %.3g, float32 %.3g\n", worst.f64,
              worst.f32);
}

// The soft minimum is centred on the head's phi_0, so a field's level does not enter its
// exponents: errors at offsets 1e3 and 1e4 are those at 0.
TEST(TileAlgorithm, FieldOffsetsKeepTheErrors) {
  Worst worst;
  uint64_t seed = 700;
  for (Mode mode : {Mode::FpaExact, Mode::FpaSoft})
    for (double offset : {1e3, 1e4, -1e4})
      for (Gate gate : {Gate::Random, Gate::Integer, Gate::Steep})
        check_case({1, 2, 200, 16}, mode, gate, seed++, offset, worst);
  std::printf("worst relative error vs reference: float64 %.3g, float32 %.3g\n", worst.f64,
              worst.f32);
}

bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  return a.sizes() == b.sizes() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), a.numel() * a.element_size()) == 0;
}

bool same_bits(const TileResult& a, const TileResult& b) {
  return same_bits(a.r.out, b.r.out) && same_bits(a.lse, b.lse) && same_bits(a.r.dq, b.r.dq) &&
         same_bits(a.r.dk, b.r.dk) && same_bits(a.r.dv, b.r.dv) &&
         same_bits(a.r.dgate, b.r.dgate);
}

// No atomics and fixed summation orders: two runs, the second with every pass's blocks in the
// opposite order, give the same bits.
TEST(TileAlgorithm, RunsAreBitwiseRepeatable) {
  for (Mode mode : {Mode::Softmax, Mode::Fox, Mode::FpaExact, Mode::FpaSoft}) {
    const Inputs in = make_case({2, 2, 200, 16}, mode, Gate::Integer, 900);
    EXPECT_TRUE(same_bits(run_tiles<float>(in, mode), run_tiles<float>(in, mode, true)))
        << name(mode);
    EXPECT_TRUE(same_bits(run_tiles<double>(in, mode), run_tiles<double>(in, mode, true)))
        << name(mode);
  }
}

// A field on a grid of 1/64 is exact in float32 at these levels, and so is phi_l - phi_0: the
// whole float32 run, field gradient included, is the same bit for bit at every offset.
TEST(TileAlgorithm, GridFieldGivesTheSameBitsAtEveryOffset) {
  for (Mode mode : {Mode::FpaExact, Mode::FpaSoft}) {
    Inputs in = make_case({1, 2, 200, 16}, mode, Gate::Random, 901);
    const at::Tensor grid = (in.gate * 64).round() / 64;
    in.gate = grid;
    const TileResult base = run_tiles<float>(in, mode);
    for (double offset : {1e3, 1e4, -1e4}) {
      in.gate = grid + offset;
      EXPECT_TRUE(same_bits(run_tiles<float>(in, mode), base)) << name(mode) << " " << offset;
    }
  }
}

}  // namespace
}  // namespace fpa::testing
