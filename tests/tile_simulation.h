// The GPU kernels' tile algorithm (kernels/cuda/tile_algorithm.h) run on the CPU, block by block
// and tile by tile in the order the GPU kernels run it, at the GPU's tile sizes. Each block
// function is what one thread block does; where the GPU gives a row or a column to a thread,
// the loops here visit that row or column in the same order, and every cross-thread sum is
// taken in thread order. Blocks write disjoint outputs, so any block order gives the same
// result (the test runs them in two orders and requires identical bits).
//
// No LibTorch: plain arrays, (heads, n, d) row-major, heads = batch * heads.
#pragma once

#include "kernels/cuda/tile_algorithm.h"

#include <algorithm>
#include <utility>
#include <cstdint>
#include <vector>

namespace fpa::tiles::sim {

enum class Mode { Softmax, Fox, FpaExact, FpaSoft };

struct Problem {
  int64_t heads = 1, n = 0, d = 1, dv = 1;
  Mode mode = Mode::Softmax;
  double scale = 1.0;
  double tau = 1.0;  // FpaSoft's temperature
};

template <class T> struct Tensors {
  std::vector<T> q, k, v, gate, dout;    // inputs (gate empty for softmax)
  std::vector<T> out, dq, dk, dv, dgate;  // results
  std::vector<typename AccOf<T>::type> lse;
};

template <class T> class TileRun {
 public:
  using A = typename AccOf<T>::type;

  TileRun(const Problem& p, Tensors<T>& t) : p_(p), t_(t), tiles_(tile_count(p.n)) {}

  // Forward and backward, blocks of each pass in increasing (or, reversed, decreasing) order.
  void run(bool reversed = false) {
    const int64_t n = p_.n;
    t_.out.assign(p_.heads * n * p_.dv, T(0));
    t_.lse.assign(p_.heads * n, A(0));
    t_.dq.assign(p_.heads * n * p_.d, T(0));
    t_.dk.assign(p_.heads * n * p_.d, T(0));
    t_.dv.assign(p_.heads * n * p_.dv, T(0));
    t_.dgate.assign(t_.gate.size(), T(0));
    if (p_.mode == Mode::Fox) fox_prefix();
    delta_.assign(p_.heads * n, A(0));
    gate_kv_.assign(p_.heads * n, A(0));
    gate_q_.assign(p_.heads * n, A(0));
    slots_.assign(p_.heads * 2 * int64_t(tiles_) * level_slots(tiles_), empty_slot<A>());
    auto each_block = [&](auto&& block) {
      for (int64_t s = 0; s < p_.heads * tiles_; ++s) {
        const int64_t b = reversed ? p_.heads * tiles_ - 1 - s : s;
        block(b / tiles_, int(b % tiles_));
      }
    };
    each_block([&](int64_t h, int tile) { forward_block(h, tile); });
    for (int64_t h = 0; h < p_.heads; ++h) delta_rows(h);
    each_block([&](int64_t h, int tile) { dkdv_block(h, tile); });
    each_block([&](int64_t h, int tile) { dq_block(h, tile); });
    for (int64_t h = 0; h < p_.heads; ++h) finish_head(h);
  }

 private:
  bool fpa() const { return p_.mode == Mode::FpaExact || p_.mode == Mode::FpaSoft; }
  bool soft() const { return p_.mode == Mode::FpaSoft; }
  int rows_of(int tile) const {
    return int(std::min<int64_t>(kTile, p_.n - int64_t(tile) * kTile));
  }

  // FoX's prefix sums F, in double, by chunks (the GPU's pre-pass, a block per head).
  void fox_prefix() {
    prefix_.assign(t_.gate.size(), 0.0);
    for (int64_t h = 0; h < p_.heads; ++h)
      scan_head_by_chunks(t_.gate.data() + h * p_.n, p_.n, ScanDirection::Prefix,
                     prefix_.data() + h * p_.n);
  }

  // The field of one tile (FPA) as the accumulator type and its scans: suffix minima as a key
  // tile, prefix minima as a query tile, and (straight-through) the matching weight sums.
  struct FieldTile {
    A phi[kTile], inv_tau;
    MinAt<A> suffix[kTile], prefix[kTile];
    SoftSum<A> suffix_soft[kTile], prefix_soft[kTile];
  };
  void load_field(int64_t h, int tile, FieldTile& f) const {
    if (!fpa()) return;
    const int64_t l0 = int64_t(tile) * kTile;
    const int len = rows_of(tile);
    const T* g = t_.gate.data() + h * p_.n;
    f.inv_tau = A(1.0 / p_.tau);
    for (int c = 0; c < len; ++c) f.phi[c] = A(g[l0 + c]);
    key_tile_suffix_min(f.phi, int(l0), len, f.suffix);
    query_tile_prefix_min(f.phi, int(l0), len, f.prefix);
    if (soft()) {
      key_tile_suffix_soft_sum(f.phi, len, f.inv_tau, f.suffix_soft);
      query_tile_prefix_soft_sum(f.phi, len, f.inv_tau, f.prefix_soft);
    } else {  // unused in exact mode; defined so that C's sum is too
      std::fill(f.suffix_soft, f.suffix_soft + len, empty_soft_sum<A>());
      std::fill(f.prefix_soft, f.prefix_soft + len, empty_soft_sum<A>());
    }
  }

  A dot(const T* a, const T* b, int64_t len) const {
    A s = A(0);
    for (int64_t e = 0; e < len; ++e) s += A(a[e]) * A(b[e]);
    return s;
  }

  // The logits of tile pair (I, J), s[r * kTile + c], -inf above the diagonal. `between` is C.
  void logits(int64_t h, int ti, int tj, const FieldTile& fq, const FieldTile& fk,
              const Between<A>& between, A* s) const {
    const int64_t n = p_.n, d = p_.d, i0 = int64_t(ti) * kTile, j0 = int64_t(tj) * kTile;
    const int rows = rows_of(ti), cols = rows_of(tj);
    const bool diagonal = ti == tj;
    const T* q = t_.q.data() + (h * n + i0) * d;
    const T* k = t_.k.data() + (h * n + j0) * d;
    const double* F = prefix_.empty() ? nullptr : prefix_.data() + h * n;
    A fpa_row[kTile];
    for (int r = 0; r < rows; ++r) {
      A* sr = s + r * kTile;
      if (fpa() && diagonal) fpa_diagonal_row_bias(fk.phi, r, cols, fpa_row);
      for (int c = 0; c < cols; ++c) {
        if (diagonal && c > r) { sr[c] = -t_inf(A()); continue; }
        A b = A(0);
        if (p_.mode == Mode::Fox)
          b = diagonal ? fox_diagonal_bias<A>(F, i0 + r, j0 + c)
                       : fox_row_part<A>(F, i0, i0 + r) + fox_col_part<A>(F, i0, j0 + c);
        else if (fpa())
          b = diagonal ? fpa_row[c]
                       : fpa_bias_off_diagonal(fk.suffix[c].value, between.min.value,
                                               fq.prefix[r].value, fk.phi[c]);
        sr[c] = A(p_.scale) * dot(q + r * d, k + c * d, d) + b;
      }
    }
  }

  // 1. Forward of query tile I.
  void forward_block(int64_t h, int ti) {
    const int64_t n = p_.n, dv = p_.dv, i0 = int64_t(ti) * kTile;
    const int rows = rows_of(ti);
    FieldTile fq, fk;
    load_field(h, ti, fq);
    OnlineSoftmaxRow<A> row[kTile];
    std::vector<A> acc(rows * dv, A(0));
    A s[kTile * kTile];
    Between<A> between = empty_between<A>();
    for (int tj = ti; tj >= 0; --tj) {
      const int cols = rows_of(tj);
      const T* v = t_.v.data() + (h * n + int64_t(tj) * kTile) * dv;
      load_field(h, tj, fk);
      logits(h, ti, tj, fq, fk, between, s);
      for (int r = 0; r < rows; ++r) {  // one row per thread
        const A* sr = s + r * kTile;
        A tile_max = -t_inf(A());
        for (int c = 0; c < cols; ++c) tile_max = t_max(tile_max, sr[c]);
        const A factor = row[r].rescale(tile_max);
        A* a = acc.data() + r * dv;
        for (int64_t e = 0; e < dv; ++e) a[e] *= factor;
        A tile_sum = A(0);
        for (int c = 0; c < cols; ++c) {
          const A pr = row[r].prob(sr[c]);
          tile_sum += pr;
          for (int64_t e = 0; e < dv; ++e) a[e] += pr * A(v[c * dv + e]);
        }
        row[r].sum += tile_sum;
      }
      // C for the next key tile (tj - 1) covers tiles tj .. ti - 1.
      if (fpa() && tj < ti)
        between = extend_earlier(between, fk.suffix[0], fk.suffix_soft[0], fk.inv_tau);
    }
    for (int r = 0; r < rows; ++r) {
      T* o = t_.out.data() + (h * n + i0 + r) * dv;
      for (int64_t e = 0; e < dv; ++e) o[e] = T(acc[r * dv + e] / row[r].sum);
      t_.lse[h * n + i0 + r] = row[r].lse();
    }
  }

  // 2. delta_i = dO_i . o_i.
  void delta_rows(int64_t h) {
    const int64_t n = p_.n, dv = p_.dv;
    for (int64_t i = 0; i < n; ++i)
      delta_[h * n + i] =
          dot(t_.dout.data() + (h * n + i) * dv, t_.out.data() + (h * n + i) * dv, dv);
  }

  // p_ij and g_ij of a tile pair from its logits (p and g overwrite nothing else).
  void probs_and_grads(int64_t h, int ti, int tj, const A* s, A* pt, A* gt) const {
    const int64_t n = p_.n, dv = p_.dv, i0 = int64_t(ti) * kTile;
    const int rows = rows_of(ti), cols = rows_of(tj);
    const T* dout = t_.dout.data() + (h * n + i0) * dv;
    const T* v = t_.v.data() + (h * n + int64_t(tj) * kTile) * dv;
    for (int r = 0; r < rows; ++r) {
      const A lse = t_.lse[h * n + i0 + r], delta = delta_[h * n + i0 + r];
      for (int c = 0; c < cols; ++c) {
        const A pr = t_exp(s[r * kTile + c] - lse);
        pt[r * kTile + c] = pr;
        gt[r * kTile + c] = logit_grad(pr, dot(dout + r * dv, v + c * dv, dv), delta);
      }
    }
  }

  // 3. dK, dV, the gate gradient owed to key tile J and the slots of C's earlier parts.
  void dkdv_block(int64_t h, int tj) {
    const int64_t n = p_.n, d = p_.d, dv = p_.dv, j0 = int64_t(tj) * kTile;
    const int cols = rows_of(tj);
    FieldTile fq, fk;
    load_field(h, tj, fk);
    std::vector<A> dk(cols * d, A(0)), dvv(cols * dv, A(0));
    A col_all[kTile] = {}, col_part[kTile] = {}, diag[kTile] = {}, level_sum[kTile] = {};
    A s[kTile * kTile], pt[kTile * kTile], gt[kTile * kTile];
    SplitBetween<A> split = empty_split<A>();  // C = tiles tj + 1 .. ti - 1
    BetweenSlot<A>* slots = slots_of(h, BetweenSide::Earlier, tj);
    auto flush = [&] { slots[split.level + 1] = level_slot(level_sum, cols, split.earlier); };
    for (int ti = tj; ti < tiles_; ++ti) {
      const int rows = rows_of(ti);
      const int64_t i0 = int64_t(ti) * kTile;
      const bool diagonal = ti == tj;
      load_field(h, ti, fq);
      const Between<A> between = fpa() ? whole(split, fk.inv_tau) : empty_between<A>();
      const A fraction =
          fpa() ? part_fraction(split, BetweenSide::Earlier, soft(), fk.inv_tau) : A(0);
      logits(h, ti, tj, fq, fk, between, s);
      probs_and_grads(h, ti, tj, s, pt, gt);
      const T* q = t_.q.data() + (h * n + i0) * d;
      const T* dout = t_.dout.data() + (h * n + i0) * dv;
      for (int c = 0; c < cols; ++c) {  // one key per thread, queries in order
        A pair_col = A(0);  // what C wins in this pair
        for (int r = 0; r < rows; ++r) {
          const A pr = pt[r * kTile + c], g = gt[r * kTile + c];
          for (int64_t e = 0; e < dv; ++e) dvv[c * dv + e] += pr * A(dout[r * dv + e]);
          for (int64_t e = 0; e < d; ++e) dk[c * d + e] += g * A(q[r * d + e]);
          col_all[c] += g;
          if (diagonal || !fpa()) continue;
          route_score(PathPart::KeyTile, soft(), g, fk.suffix[c].value, fk.suffix_soft[c],
                      between, fq.prefix[r].value, fq.prefix_soft[r], fk.inv_tau, col_part[c],
                      pair_col);
        }
        if (fpa() && !diagonal) level_sum[c] += pair_col * fraction;
      }
      if (diagonal && fpa()) {  // one row per thread into its own buffer, then column sums
        A e[kTile * kTile] = {};
        SoftSum<A> z[kTile];
        for (int r = 0; r < rows; ++r) {
          if (soft()) soft_diagonal_row(fk.phi, r, gt + r * kTile, fk.inv_tau, z, e + r * kTile);
          else exact_diagonal_row(fk.phi, r, gt + r * kTile, e + r * kTile);
        }
        for (int c = 0; c < cols; ++c)
          for (int r = 0; r < rows; ++r) diag[c] += e[r * kTile + c];
      }
      if (fpa() && !diagonal && ti + 1 < tiles_) {  // tile ti joins C for query tile ti + 1
        if (level_ends(split, tj + 1, ti)) flush();
        split = split_add_later(split, fq.prefix[rows - 1], fq.prefix_soft[rows - 1], tj + 1, ti,
                                fk.inv_tau);
      }
    }
    if (split.level != kNoLevel) flush();
    for (int c = 0; c < cols; ++c) {
      for (int64_t e = 0; e < d; ++e)
        t_.dk[(h * n + j0 + c) * d + e] = T(A(p_.scale) * dk[c * d + e]);
      for (int64_t e = 0; e < dv; ++e) t_.dv[(h * n + j0 + c) * dv + e] = T(dvv[c * dv + e]);
    }
    A gate[kTile];
    for (int c = 0; c < cols; ++c) gate[c] = diag[c] - col_all[c];
    if (p_.mode == Mode::FpaExact) exact_key_tile_scatter(fk.suffix, col_part, int(j0), cols, gate);
    if (p_.mode == Mode::FpaSoft)
      soft_key_tile_spread(fk.phi, fk.suffix_soft, col_part, cols, fk.inv_tau, gate);
    if (p_.mode != Mode::Softmax)
      for (int c = 0; c < cols; ++c) gate_kv_[h * n + j0 + c] = gate[c];
  }

  // 4. dQ, the gate gradient owed to query tile I and the slots of C's later parts.
  void dq_block(int64_t h, int ti) {
    const int64_t n = p_.n, d = p_.d, i0 = int64_t(ti) * kTile;
    const int rows = rows_of(ti);
    FieldTile fq, fk;
    load_field(h, ti, fq);
    std::vector<A> dq(rows * d, A(0));
    A row_all[kTile] = {}, row_part[kTile] = {}, level_sum[kTile] = {};
    A s[kTile * kTile], pt[kTile * kTile], gt[kTile * kTile];
    SplitBetween<A> split = empty_split<A>();  // C = tiles tj + 1 .. ti - 1
    BetweenSlot<A>* slots = slots_of(h, BetweenSide::Later, ti);
    auto flush = [&] { slots[split.level + 1] = level_slot(level_sum, rows, split.later); };
    for (int tj = ti; tj >= 0; --tj) {
      const int cols = rows_of(tj);
      const bool diagonal = ti == tj;
      const T* k = t_.k.data() + (h * n + int64_t(tj) * kTile) * d;
      load_field(h, tj, fk);
      const Between<A> between = fpa() ? whole(split, fq.inv_tau) : empty_between<A>();
      const A fraction =
          fpa() ? part_fraction(split, BetweenSide::Later, soft(), fq.inv_tau) : A(0);
      logits(h, ti, tj, fq, fk, between, s);
      probs_and_grads(h, ti, tj, s, pt, gt);
      for (int r = 0; r < rows; ++r) {  // one query per thread, keys in order
        A pair_row = A(0);  // what C wins in this pair
        for (int c = 0; c < cols; ++c) {
          const A g = gt[r * kTile + c];
          for (int64_t e = 0; e < d; ++e) dq[r * d + e] += g * A(k[c * d + e]);
          row_all[r] += g;
          if (diagonal || !fpa()) continue;
          route_score(PathPart::QueryTile, soft(), g, fk.suffix[c].value, fk.suffix_soft[c],
                      between, fq.prefix[r].value, fq.prefix_soft[r], fk.inv_tau, row_part[r],
                      pair_row);
        }
        if (fpa() && !diagonal) level_sum[r] += pair_row * fraction;
      }
      if (fpa() && !diagonal && tj > 0) {  // tile tj joins C for key tile tj - 1
        if (level_ends(split, tj, ti - 1)) flush();
        split = split_add_earlier(split, fk.suffix[0], fk.suffix_soft[0], tj, ti - 1, fq.inv_tau);
      }
    }
    if (split.level != kNoLevel) flush();
    for (int r = 0; r < rows; ++r)
      for (int64_t e = 0; e < d; ++e)
        t_.dq[(h * n + i0 + r) * d + e] = T(A(p_.scale) * dq[r * d + e]);
    A gate[kTile] = {};
    if (p_.mode == Mode::Fox)
      for (int r = 0; r < rows; ++r) gate[r] = row_all[r];
    if (p_.mode == Mode::FpaExact)
      exact_query_tile_scatter(fq.prefix, row_part, int(i0), rows, gate);
    if (p_.mode == Mode::FpaSoft)
      soft_query_tile_spread(fq.phi, fq.prefix_soft, row_part, rows, fq.inv_tau, gate);
    if (p_.mode != Mode::Softmax)
      for (int r = 0; r < rows; ++r) gate_q_[h * n + i0 + r] = gate[r];
  }

  // 5. The gate gradient of one head, in double.
  void finish_head(int64_t h) {
    if (p_.mode == Mode::Softmax) return;
    const int64_t n = p_.n;
    std::vector<double> g(n);
    for (int64_t l = 0; l < n; ++l) g[l] = double(gate_kv_[h * n + l]) + double(gate_q_[h * n + l]);
    if (p_.mode == Mode::Fox) scan_head_by_chunks(g.data(), n, ScanDirection::Suffix, g.data());
    if (fpa()) {
      FieldTile f;
      for (int tk = 0; tk < tiles_; ++tk) {
        const int64_t l0 = int64_t(tk) * kTile;
        load_field(h, tk, f);
        const double total = between_total_by_lanes(
            slots_of(h, BetweenSide::Later, 0), slots_of(h, BetweenSide::Earlier, 0), tiles_, tk,
            soft(), f.suffix_soft[0], f.inv_tau, kTile);  // the finish kernel's threads
        if (p_.mode == Mode::FpaExact) g[f.suffix[0].pos] += total;
        else
          soft_between_finish(f.phi, f.suffix_soft[0], total, rows_of(tk), f.inv_tau,
                              g.data() + l0);
      }
    }
    for (int64_t l = 0; l < n; ++l) t_.dgate[h * n + l] = T(g[l]);
  }

  // A level's slot: the threads' sums (then cleared) added in thread order, with the part's
  // argmin and weight sum (the kernels' BetweenParts::flush).
  static BetweenSlot<A> level_slot(A* level_sum, int threads, const Between<A>& part) {
    A sum = A(0);
    for (int x = 0; x < threads; ++x) sum += std::exchange(level_sum[x], A(0));
    return slot_of(sum, part);
  }

  // The slots of one tile and side (tile_gate_grad.h): per head, the later side's T x slots, then
  // the earlier side's.
  BetweenSlot<A>* slots_of(int64_t h, BetweenSide side, int tile) {
    const int64_t per_side = int64_t(tiles_) * level_slots(tiles_);
    return slots_.data() + (2 * h + (side == BetweenSide::Earlier)) * per_side +
           int64_t(tile) * level_slots(tiles_);
  }

  Problem p_;
  Tensors<T>& t_;
  int tiles_;
  std::vector<double> prefix_;                 // FoX's F
  std::vector<A> delta_, gate_kv_, gate_q_;    // per position
  std::vector<BetweenSlot<A>> slots_;          // C's parts (slots_of)
};

}  // namespace fpa::tiles::sim
