// Shared by the tile tests (test_tile_algorithm: the CPU run of the tile algorithm;
// test_tiled_cuda: the CUDA kernels): the cases (variants, fields with ties, offsets), the
// CPU run of the tile algorithm (tile_simulation.h) as tensors, and the reference's lse.
#pragma once

#include "test_fused_support.h"
#include "tile_simulation.h"

#include "kernels/reference.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace fpa::testing {

using tiles::sim::Mode;

inline const char* name(Mode m) {
  switch (m) {
    case Mode::Softmax: return "softmax";
    case Mode::Fox: return "fox";
    case Mode::FpaExact: return "fpa-exact";
    case Mode::FpaSoft: return "fpa-straight-through";
  }
  return "?";
}

constexpr double kTau = 0.7;  // straight-through temperature (not 1, so tau enters)

inline AttentionOptions reference_options(Mode m) {
  AttentionOptions o;
  o.impl = Impl::Reference;
  o.variant = m == Mode::Softmax ? Variant::Softmax : m == Mode::Fox ? Variant::Fox : Variant::Fpa;
  o.fpa_backward = m == Mode::FpaSoft ? FpaBackward::StraightThrough : FpaBackward::Exact;
  o.st_temperature = kTau;
  return o;
}

inline Variant variant_of(Mode m) { return reference_options(m).variant; }

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

inline tiles::sim::Problem problem_of(const Inputs& in, Mode mode) {
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
inline at::Tensor reference_lse(const Inputs& in, Mode mode) {
  const int64_t n = in.q.size(2);
  auto s = at::matmul(in.q, in.k.transpose(-1, -2)) / std::sqrt(double(in.q.size(3)));
  if (mode == Mode::Fox) return at::logsumexp(s + fox_bias(in.gate), -1);
  if (mode == Mode::FpaExact || mode == Mode::FpaSoft)
    return at::logsumexp(s + fpa_bias(in.gate), -1);
  auto upper = at::ones({n, n}, at::kBool).triu(1);
  return at::logsumexp(s.masked_fill(upper, -std::numeric_limits<double>::infinity()), -1);
}

// The tile tests' tolerances: float64 as the fused kernels' (1e-10), float32 tighter than theirs
// (2e-5 instead of 1e-4; the worst case seen, a steep field's straight-through gradient, is 5e-6).
inline double tile_tolerance(at::ScalarType dtype) { return dtype == at::kDouble ? 1e-10 : 2e-5; }

inline double lse_error(const at::Tensor& got, const at::Tensor& want) {
  if (want.numel() == 0) return 0.0;
  const double diff = (got - want).abs().max().item<double>();
  if (!std::isfinite(diff)) return HUGE_VAL;  // as rel_error: a NaN must not vanish in a max
  return diff / std::max(1.0, want.abs().max().item<double>());
}

// A field of plateaus 37 positions long (so they straddle the 64-wide tiles) at levels 0, 1, 2:
// the minimum of a path is attained at many positions, in every part of the split.
inline at::Tensor plateau_field(int64_t b, int64_t h, int64_t n, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t runs = n / 37 + 1;
  auto levels = at::randint(0, 3, {b, h, runs}, gen, at::TensorOptions().dtype(at::kDouble));
  return levels.repeat_interleave(37, -1).slice(-1, 0, n).contiguous();
}

enum class Gate { Random, Integer, Flat, Steep, Plateau, Constant };
inline const char* name(Gate g) {
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

inline Inputs make_case(const Shape& s, Mode mode, Gate gate, uint64_t seed, double offset = 0.0) {
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

// FPA's between part C at many tiles: a random field with valleys of several depths, each a
// whole tile or two wide, so that for far tile pairs C's minimum lies in one of them, in C's
// earlier part for some pairs and its later part for others (tile_bias.h's split), at every
// level up to the sequence's. The valleys sit at tiles 3, 9-10, 17 and 30 (those present).
inline Inputs valleys_case(const Shape& s, Mode mode, uint64_t seed) {
  Inputs in = make_case(s, mode, Gate::Random, seed);
  in.gate = in.gate * 0.25;
  const struct { int64_t first, tiles; double depth; } valleys[] = {
      {3, 1, 1.0}, {9, 2, 2.0}, {17, 1, 3.0}, {30, 1, 1.5}};
  for (const auto& v : valleys) {
    const int64_t l0 = v.first * 64, l1 = std::min<int64_t>((v.first + v.tiles) * 64, s.n);
    if (l0 < l1) in.gate.slice(2, l0, l1).sub_(v.depth);
  }
  in.gate = in.gate.to(at::kFloat).to(at::kDouble);
  return in;
}

// The same case with values (and so outputs) of width dv instead of the head dimension: the
// kernels index v, o and dO by dv, q and k by d.
inline Inputs with_value_width(Inputs in, int64_t dv, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto o = at::TensorOptions().dtype(at::kDouble);
  auto sizes = in.v.sizes().vec();
  sizes.back() = dv;
  in.v = at::randn(sizes, gen, o).to(at::kFloat).to(at::kDouble);
  in.dout = at::randn(sizes, gen, o).to(at::kFloat).to(at::kDouble);
  return in;
}

inline std::string describe(Mode mode, Gate gate, const Shape& s, at::ScalarType dtype,
                            double offset) {
  std::ostringstream o;
  o << name(mode) << " gate " << name(gate) << " shape (" << s.batch << "," << s.heads << ","
    << s.n << "," << s.d << ") offset " << offset << " " << c10::toString(dtype);
  return o.str();
}

// Equal bits (not merely equal values): the repeatability checks.
inline bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  return a.sizes() == b.sizes() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), a.numel() * a.element_size()) == 0;
}

inline bool same_bits(const TileResult& a, const TileResult& b) {
  return same_bits(a.r.out, b.r.out) && same_bits(a.lse, b.lse) && same_bits(a.r.dq, b.r.dq) &&
         same_bits(a.r.dk, b.r.dk) && same_bits(a.r.dv, b.r.dv) &&
         same_bits(a.r.dgate, b.r.dgate);
}

}  // namespace fpa::testing
