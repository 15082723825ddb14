// The bias b_ij of one (query block, key tile) pair, computed from O(n) state, never from an
// n x n matrix. Shared by the fused forward and backward passes.
//
// Blocks and tiles are aligned: query block q covers rows [q*B, q*B + B), key tile t covers keys
// [t*B, t*B + B), and tile t == q is the diagonal tile (causal mask inside it).
//
// FoX:  b_ij = F_i - F_j with F the prefix sum of log forget gates (kept in double).
// FPA:  b_ij = min_{j<=l<=i} phi_l - phi_j. For an off-diagonal tile (keys [j0, j1), j1 <= i0)
//       the path [j, i] splits into three parts:
//          [j, j1)   inside the tile         -> suffix minimum of the tile (per key),
//          [j1, i0)  between tile and block  -> one value per tile boundary, shared by the block,
//          [i0, i]   inside the query block  -> one running minimum per query,
//       so min over [j, i] = min(tile_suffix_j, right_i) with right_i = min(segment, running_i).
//       This is the carried path minimum: the query block computes, once, the minimum of phi
//       from each tile boundary up to i0 (a single backward scan), and every tile combines it
//       with its own suffix minima. Ties: the LATEST position attaining the minimum wins (the
//       reference's rule), so later parts win ties and scans keep the later position.
//       The straight-through backward needs log Z_j = log sum_{l in [j, i]} exp(-phi_l / tau),
//       which splits over the same three parts (combined with log-add-exp). Its weights and
//       ratios are unchanged when every w_l of a query is divided by one constant, so the block
//       uses w_l = exp(-(phi_l - c) / tau) with c = min of phi over [0, i1): the exponents are
//       <= 0 and as large as the field's spread, not its level (in float32 a field at level 1e4
//       had exponents near -1e4, whose rounding moved the gradient by ~4e-4).
#pragma once

#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace fpa::fused {

template <class T>
inline T log_add_exp(T a, T b) {
  if (a == -std::numeric_limits<T>::infinity()) return b;
  if (b == -std::numeric_limits<T>::infinity()) return a;
  const T m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

// What a tile's consumer asks for, besides the bias itself.
struct BiasRequest {
  bool argmin = false;   // l*(i, j), for the exact backward of FPA
  bool log_z = false;    // log Z_j for query i, for the straight-through backward of FPA
};

template <class T>
class BlockBias {
 public:
  // gate: this head's gate (log forget gates for FoX, the field for FPA), nullptr for softmax.
  BlockBias(Variant variant, const T* gate, int64_t i0, int64_t i1, int64_t tile, double tau,
            BiasRequest request)
      : variant_(variant), gate_(gate), i0_(i0), i1_(i1), tile_(tile), request_(request),
        inv_tau_(T(1.0 / tau)) {
    if (variant_ == Variant::Fox) prepare_fox();
    if (variant_ == Variant::Fpa) prepare_fpa();
  }

  // log w_l for the straight-through backward: -(phi_l - c) / tau, centred (see the top).
  T log_weight(T phi) const { return (centre_ - phi) * inv_tau_; }

  // Fills bias[r * ld + c] = b_{i0 + r, j0 + c} for key tile t (keys [j0, j1)); entries with
  // j > i get -inf. With the request, also arg[r * ld + c] = l*(i, j) and logz[r * ld + c].
  void tile(int64_t t, T* bias, int32_t* arg, T* logz, int64_t ld) {
    const int64_t j0 = t * tile_, j1 = std::min(j0 + tile_, i1_);
    const bool diagonal = j0 == i0_;
    const int64_t rows = i1_ - i0_, cols = j1 - j0;
    constexpr T inf = std::numeric_limits<T>::infinity();
    switch (variant_) {
      case Variant::Softmax:
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            bias[r * ld + c] = (diagonal && c > r) ? -inf : T(0);
        return;
      case Variant::Fox:
        for (int64_t r = 0; r < rows; ++r) {
          const double fi = prefix_[i0_ + r];
          for (int64_t c = 0; c < cols; ++c)
            bias[r * ld + c] = (diagonal && c > r) ? -inf : T(fi - prefix_[j0 + c]);
        }
        return;
      case Variant::Fpa:
        if (diagonal) fpa_diagonal(bias, arg, logz, ld);
        else fpa_off_diagonal(t, j0, j1, bias, arg, logz, ld);
        return;
    }
  }

 private:
  void prepare_fox() {
    prefix_.resize(size_t(i1_));
    double s = 0;
    for (int64_t l = 0; l < i1_; ++l) prefix_[l] = s += double(gate_[l]);
  }

  // One scan from i0 - 1 down to 0 gives the minimum of phi over [t*B, i0) for every tile
  // boundary t, and one scan up the block gives the running minimum over [i0, i] per query.
  void prepare_fpa() {
    constexpr T inf = std::numeric_limits<T>::infinity();
    if (request_.log_z) centre_ = *std::min_element(gate_, gate_ + i1_);
    const int64_t blocks = i0_ / tile_ + 1;
    seg_min_.assign(blocks, inf);
    seg_arg_.assign(blocks, int32_t(i0_));
    seg_lse_.assign(blocks, -inf);
    T m = inf, lse = -inf;
    int32_t at = int32_t(i0_);
    for (int64_t l = i0_ - 1; l >= 0; --l) {
      if (gate_[l] < m) { m = gate_[l]; at = int32_t(l); }  // strict: keep the latest
      if (request_.log_z) lse = log_add_exp(lse, log_weight(gate_[l]));
      if (l % tile_ == 0) {
        seg_min_[l / tile_] = m;
        seg_arg_[l / tile_] = at;
        seg_lse_[l / tile_] = lse;
      }
    }
    const int64_t rows = i1_ - i0_;
    run_min_.resize(rows);
    run_arg_.resize(rows);
    run_lse_.resize(rows);
    m = inf;
    lse = -inf;
    for (int64_t r = 0; r < rows; ++r) {
      const T phi = gate_[i0_ + r];
      if (phi <= m) { m = phi; at = int32_t(i0_ + r); }  // <= going up: keep the latest
      if (request_.log_z) lse = log_add_exp(lse, log_weight(phi));
      run_min_[r] = m;
      run_arg_[r] = at;
      run_lse_[r] = lse;
    }
    right_min_.resize(rows);
    right_arg_.resize(rows);
    right_lse_.resize(rows);
    tile_min_.resize(tile_);
    tile_arg_.resize(tile_);
    tile_lse_.resize(tile_);
  }

  void fpa_off_diagonal(int64_t t, int64_t j0, int64_t j1, T* bias, int32_t* arg, T* logz,
                        int64_t ld) {
    constexpr T inf = std::numeric_limits<T>::infinity();
    const int64_t rows = i1_ - i0_, cols = j1 - j0;
    // Suffix minima of the tile: [j, j1).
    T m = inf, lse = -inf;
    int32_t at = int32_t(j1 - 1);
    for (int64_t c = cols - 1; c >= 0; --c) {
      const T phi = gate_[j0 + c];
      if (phi < m) { m = phi; at = int32_t(j0 + c); }
      if (request_.log_z) lse = log_add_exp(lse, log_weight(phi));
      tile_min_[c] = m;
      tile_arg_[c] = at;
      tile_lse_[c] = lse;
    }
    // Right context [j1, i] per query: the segment [j1, i0) and the block's running part.
    const int64_t s = t + 1;
    for (int64_t r = 0; r < rows; ++r) {
      const bool block_wins = run_min_[r] <= seg_min_[s];  // later part wins ties
      right_min_[r] = block_wins ? run_min_[r] : seg_min_[s];
      right_arg_[r] = block_wins ? run_arg_[r] : seg_arg_[s];
      if (request_.log_z) right_lse_[r] = log_add_exp(seg_lse_[s], run_lse_[r]);
    }
    const T* phi = gate_ + j0;
    for (int64_t r = 0; r < rows; ++r) {
      const T right = right_min_[r];
      T* b = bias + r * ld;
      for (int64_t c = 0; c < cols; ++c) b[c] = std::min(tile_min_[c], right) - phi[c];
      if (request_.argmin && arg) {
        int32_t* a = arg + r * ld;
        for (int64_t c = 0; c < cols; ++c)
          a[c] = right <= tile_min_[c] ? right_arg_[r] : tile_arg_[c];
      }
    }
    if (request_.log_z && logz) fill_log_z(cols, logz, ld);
  }

 public:
  // Off-diagonal tiles, after tile(): the parts the path minimum and log Z are combined from.
  // l*(i, j) is right_arg(r) when right_min(r) <= tile_min(c) (the later part wins ties), else
  // tile_arg(c); log Z_j = log_add_exp(tile_log_z(c), right_log_z(r)).
  const T* tile_min() const { return tile_min_.data(); }
  const int32_t* tile_arg() const { return tile_arg_.data(); }
  const T* tile_log_z() const { return tile_lse_.data(); }
  const T* right_min() const { return right_min_.data(); }
  const int32_t* right_arg() const { return right_arg_.data(); }
  const T* right_log_z() const { return right_lse_.data(); }

  // logz[r * ld + c] = log Z for every entry of the last off-diagonal tile (the general path).
  void fill_log_z(int64_t cols, T* logz, int64_t ld) const {
    for (int64_t r = 0; r < i1_ - i0_; ++r) {
      T* z = logz + r * ld;
      for (int64_t c = 0; c < cols; ++c) z[c] = log_add_exp(tile_lse_[c], right_lse_[r]);
    }
  }

 private:

  // The diagonal tile: a direct scan j = i, i-1, ..., i0 per query.
  void fpa_diagonal(T* bias, int32_t* arg, T* logz, int64_t ld) {
    constexpr T inf = std::numeric_limits<T>::infinity();
    const int64_t rows = i1_ - i0_;
    for (int64_t r = 0; r < rows; ++r) {
      T m = inf, lse = -inf;
      int32_t at = int32_t(i0_ + r);
      for (int64_t c = r; c >= 0; --c) {
        const T phi = gate_[i0_ + c];
        if (phi < m) { m = phi; at = int32_t(i0_ + c); }
        bias[r * ld + c] = m - phi;
        if (request_.argmin) arg[r * ld + c] = at;
        if (request_.log_z) logz[r * ld + c] = lse = log_add_exp(lse, log_weight(phi));
      }
      for (int64_t c = r + 1; c < rows; ++c) bias[r * ld + c] = -inf;
    }
  }

  Variant variant_;
  const T* gate_;
  int64_t i0_, i1_, tile_;
  BiasRequest request_;
  T inv_tau_;
  T centre_ = 0;                                     // FPA straight-through: min phi, [0, i1)
  std::vector<double> prefix_;                       // FoX
  std::vector<T> seg_min_, seg_lse_;                 // FPA, per tile boundary
  std::vector<int32_t> seg_arg_;
  std::vector<T> run_min_, run_lse_;                 // FPA, per query of the block
  std::vector<int32_t> run_arg_;
  std::vector<T> right_min_, right_lse_;             // FPA, per query, for the current tile
  std::vector<int32_t> right_arg_;
  std::vector<T> tile_min_, tile_lse_;               // FPA, per key of the current tile
  std::vector<int32_t> tile_arg_;
};

}  // namespace fpa::fused
