// What every piece of the tiled attention algorithm shares: the tile sizes, the host/device
// qualifier, a few math wrappers, and the (value, position) pair that carries an argmin.
//
// The tile headers (tile_bias.h, tile_softmax.h, tile_gate_grad.h) are plain C++ that nvcc
// compiles for the GPU and g++ compiles for the CPU test (tests/test_tile_algorithm.cpp), which
// runs them tile by tile in the GPU kernels' order. No LibTorch, no STL containers, no
// allocation: every function works on caller-owned arrays (shared memory or registers on the GPU,
// stack arrays in the test).
#pragma once

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define FPA_HD __host__ __device__ inline
#else
#define FPA_HD inline
#endif

namespace fpa::tiles {

// Tile sizes of the GPU kernels (and of the CPU test, which must use the same ones for its
// order of operations to be the GPU's).
//
// Queries and keys use the same size, so the key tiles and the query tiles are aligned: the query
// tile I has exactly one diagonal key tile, J = I, and every other key tile is entirely before
// it. That is what SPEC section 9's split of the path minimum assumes (S_J, C, P_I); a query tile
// of 128 rows would straddle two key tiles and need a fourth kind of tile. 64 is also what the
// FlashAttention-2 backward uses at head dimension 128 to keep dK and dV of a key tile on chip,
// and a 64 x 64 fp32 score tile (16 KB) plus Q, K, V tiles of 64 x 128 fp32 (96 KB) fit the shared
// memory of sm_80 and sm_90.
constexpr int kBlockM = 64;  // queries per query tile
constexpr int kBlockN = 64;  // keys per key tile
static_assert(kBlockM == kBlockN, "the path-minimum split assumes aligned query and key tiles");
constexpr int kTile = kBlockN;

FPA_HD int tile_count(int64_t n) { return int((n + kTile - 1) / kTile); }

// The accumulator type of an input type: fp32 for fp32/bf16/fp16 inputs, double for double.
template <class In> struct AccOf { using type = float; };
template <> struct AccOf<double> { using type = double; };

FPA_HD float t_exp(float x) { return expf(x); }
FPA_HD double t_exp(double x) { return exp(x); }
FPA_HD float t_log(float x) { return logf(x); }
FPA_HD double t_log(double x) { return log(x); }
FPA_HD float t_log1p(float x) { return log1pf(x); }
FPA_HD double t_log1p(double x) { return log1p(x); }
FPA_HD float t_inf(float) { return HUGE_VALF; }
FPA_HD double t_inf(double) { return HUGE_VAL; }
template <class A> FPA_HD A t_max(A a, A b) { return a < b ? b : a; }
template <class A> FPA_HD A t_min(A a, A b) { return b < a ? b : a; }

// log(exp(a) + exp(b)) without overflow; -inf is the empty sum.
template <class A> FPA_HD A log_add_exp(A a, A b) {
  const A inf = t_inf(A());
  if (a == -inf) return b;
  if (b == -inf) return a;
  const A m = t_max(a, b), lo = t_min(a, b);
  return m + t_log1p(t_exp(lo - m));
}

// A minimum of the field and the position attaining it. pos = -1 marks the empty minimum (+inf).
template <class A> struct MinAt {
  A value;
  int pos;
};
template <class A> FPA_HD MinAt<A> empty_min() { return MinAt<A>{t_inf(A()), -1}; }

// The minimum of two stretches of the path, `earlier` entirely before `later`. THE TIE RULE: at
// equal values the later stretch wins, so the position carried is always the LATEST one attaining
// the minimum (the reference's path_argmin). Every combination of parts goes through here.
template <class A> FPA_HD MinAt<A> min_latest(MinAt<A> earlier, MinAt<A> later) {
  return later.value <= earlier.value ? later : earlier;
}

}  // namespace fpa::tiles
