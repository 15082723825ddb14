// The bias b_ij of one (query tile I, key tile J) pair from O(tile) state, never an n x n matrix:
// FoX's F_i - F_j and FPA's path minimum split by tiles (SPEC section 9), with the parts the
// exact backward needs (which part attains the minimum, at which position) and those the
// straight-through backward needs (the soft minimum's weight sums over the same parts, SoftSum).
//
// FPA, for J strictly before I (keys [j0, j0 + B), queries [i0, i0 + B), j0 + B <= i0):
//
//     M(j, i) = min( S_J(j),  C(J+1 .. I-1),  P_I(i) )
//     S_J(j)  = min of phi over [j, end of J]       key_tile_suffix_min, one per key
//     C       = min of phi over the tiles strictly   Between, one per tile pair, extended by one
//               between J and I                      tile minimum per step of the tile loop
//     P_I(i)  = min of phi over [start of I, i]      query_tile_prefix_min, one per query
//
// and the diagonal tile (J = I) takes each query's running minimum inside the tile
// (fpa_diagonal_row_bias). Invariant kept by every function here: the position carried with a
// minimum is the LATEST one attaining it. Scans going backwards replace only on a strictly
// smaller value; scans going forwards replace on smaller-or-equal; parts are combined by
// min_latest with the later part second (tile_config.h).
#pragma once

#include "kernels/cuda/tile_config.h"

namespace fpa::tiles {

// ---- FPA: the three parts of the path minimum --------------------------------------------------

// suffix[c] = min of phi over keys [j0 + c, j0 + cols) of key tile J; phi[c] = phi_{j0 + c}.
template <class A>
FPA_HD void key_tile_suffix_min(const A* phi, int j0, int cols, MinAt<A>* suffix) {
  MinAt<A> m = empty_min<A>();
  for (int c = cols - 1; c >= 0; --c) {
    if (phi[c] < m.value) m = MinAt<A>{phi[c], j0 + c};  // strict: an equal earlier key loses
    suffix[c] = m;
  }
}

// prefix[r] = min of phi over queries [i0, i0 + r] of query tile I; phi[r] = phi_{i0 + r}.
// prefix[rows - 1] is the whole tile's minimum (what C takes from this tile).
template <class A>
FPA_HD void query_tile_prefix_min(const A* phi, int i0, int rows, MinAt<A>* prefix) {
  MinAt<A> m = empty_min<A>();
  for (int r = 0; r < rows; ++r) {
    if (phi[r] <= m.value) m = MinAt<A>{phi[r], i0 + r};  // <=: an equal later query wins
    prefix[r] = m;
  }
}

// The same two scans by many threads at once (the GPU's load of a field tile), in two steps with
// a barrier between them: first each position scans within its chunk of kScanChunk, then
// combines the chunks after it (suffix) or before it (prefix) by min_latest. A minimum is exact
// and min_latest associative, so values and positions are those of the one-thread scans above
// (the latest position at ties), bit for bit: test_tile_algorithm checks it on fields with ties.
// 8 + 7 dependent steps per position instead of 64.
constexpr int kScanChunk = 8;

// Step 1 for key c < cols: the suffix minimum over [c, end of c's chunk).
template <class A>
FPA_HD MinAt<A> key_suffix_min_in_chunk(const A* phi, int j0, int cols, int c) {
  const int end = t_min((c / kScanChunk + 1) * kScanChunk, cols);
  MinAt<A> m = empty_min<A>();
  for (int l = end - 1; l >= c; --l)
    if (phi[l] < m.value) m = MinAt<A>{phi[l], j0 + l};
  return m;
}
// Step 2: suffix[c] from step 1's values of every key (in_chunk[l] for l < cols).
template <class A>
FPA_HD MinAt<A> key_suffix_min_across_chunks(const MinAt<A>* in_chunk, int cols, int c) {
  MinAt<A> m = in_chunk[c];
  for (int start = (c / kScanChunk + 1) * kScanChunk; start < cols; start += kScanChunk)
    m = min_latest(m, in_chunk[start]);
  return m;
}
// Step 1 for query r < rows: the prefix minimum over [start of r's chunk, r].
template <class A>
FPA_HD MinAt<A> query_prefix_min_in_chunk(const A* phi, int i0, int r) {
  MinAt<A> m = empty_min<A>();
  for (int l = r / kScanChunk * kScanChunk; l <= r; ++l)
    if (phi[l] <= m.value) m = MinAt<A>{phi[l], i0 + l};
  return m;
}
// Step 2: prefix[r] from step 1's values (the chunks before r's are whole).
template <class A>
FPA_HD MinAt<A> query_prefix_min_across_chunks(const MinAt<A>* in_chunk, int r) {
  MinAt<A> m = empty_min<A>();
  for (int end = kScanChunk - 1; end < r / kScanChunk * kScanChunk; end += kScanChunk)
    m = min_latest(m, in_chunk[end]);
  return min_latest(m, in_chunk[r]);
}

// ---- FPA straight-through: the soft minimum's weight sums over the same parts -----------------
//
// w_l = exp(-phi_l / tau). A sum of weights W is kept as SoftSum{min, rest}: min = the smallest
// phi in the sum, W = exp(-min / tau + rest), rest = log sum exp(-(phi_l - min) / tau) in
// [0, log(count)]. Every quantity the backward needs is a ratio of two such sums (or of a weight
// and a sum), log(W_a / W_b) = (b.min - a.min) / tau + a.rest - b.rest: a difference of two field
// values, exact or rounded relative to itself, so neither the field's level nor its spread enters
// the rounding. (A single centre for the whole head, exp(-(phi - c) / tau), rounds every
// exponent relative to |phi - c| / tau: in float32 the field gradient of a steep walk, spread /
// tau ~ 2e3, was off by 1.1e-4.)
template <class A> struct SoftSum {
  A min;   // +inf for the empty sum
  A rest;  // -inf for the empty sum
};
template <class A> FPA_HD SoftSum<A> empty_soft_sum() {
  return SoftSum<A>{t_inf(A()), -t_inf(A())};
}
template <class A> FPA_HD SoftSum<A> soft_sum_of(A phi) { return SoftSum<A>{phi, A(0)}; }

// W_a + W_b.
template <class A> FPA_HD SoftSum<A> soft_add(SoftSum<A> a, SoftSum<A> b, A inv_tau) {
  if (a.rest == -t_inf(A())) return b;
  if (b.rest == -t_inf(A())) return a;
  const A m = t_min(a.min, b.min);
  return SoftSum<A>{m, log_add_exp(a.rest - (a.min - m) * inv_tau, b.rest - (b.min - m) * inv_tau)};
}

// log(W_a / W_b) (b not empty; -inf when a is).
template <class A> FPA_HD A soft_log_ratio(SoftSum<A> a, SoftSum<A> b, A inv_tau) {
  return (b.min - a.min) * inv_tau + a.rest - b.rest;
}
// log(w_l / W_b) for one position's weight.
template <class A> FPA_HD A soft_log_ratio(A phi, SoftSum<A> b, A inv_tau) {
  return (b.min - phi) * inv_tau - b.rest;
}

// suffix[c] = the weight sum over keys [c, cols) of a key tile (phi[c] = phi_{j0 + c}).
template <class A>
FPA_HD void key_tile_suffix_soft_sum(const A* phi, int cols, A inv_tau, SoftSum<A>* suffix) {
  SoftSum<A> s = empty_soft_sum<A>();
  for (int c = cols - 1; c >= 0; --c) suffix[c] = s = soft_add(soft_sum_of(phi[c]), s, inv_tau);
}

// prefix[r] = the weight sum over queries [0, r] of a query tile; prefix[rows - 1] is the tile's.
template <class A>
FPA_HD void query_tile_prefix_soft_sum(const A* phi, int rows, A inv_tau, SoftSum<A>* prefix) {
  SoftSum<A> s = empty_soft_sum<A>();
  for (int r = 0; r < rows; ++r) prefix[r] = s = soft_add(s, soft_sum_of(phi[r]), inv_tau);
}

// ---- C: the tiles strictly between ------------------------------------------------------

// C, the path over the whole tiles strictly between J and I: its minimum (exact mode and the
// forward) and its soft-minimum weight sum (straight-through mode, SoftSum above). Empty when
// J = I - 1. The forward and the dQ pass walk J down from I - 1 and add tile J + 1
// at the earlier end before using J; the dK/dV pass walks I up from J + 1 and adds tile I - 1
// at the later end. A minimum does not depend on the order it was taken in, so both passes
// see the same value and position; the weight sums agree to rounding.
template <class A> struct Between {
  MinAt<A> min;
  SoftSum<A> soft;
};
template <class A> FPA_HD Between<A> empty_between() {
  return Between<A>{empty_min<A>(), empty_soft_sum<A>()};
}
template <class A>
FPA_HD Between<A> extend_earlier(Between<A> c, MinAt<A> tile_min, SoftSum<A> tile_soft,
                                 A inv_tau) {
  return Between<A>{min_latest(tile_min, c.min), soft_add(tile_soft, c.soft, inv_tau)};
}
template <class A>
FPA_HD Between<A> extend_later(Between<A> c, MinAt<A> tile_min, SoftSum<A> tile_soft, A inv_tau) {
  return Between<A>{min_latest(c.min, tile_min), soft_add(c.soft, tile_soft, inv_tau)};
}

// ---- C split in two, for the backward ---------------------------------------------------------
//
// The backward must send what C wins in pair (I, J) to C's tiles, and many pairs share a tile:
// summed per (I, tile K) that was a T x T buffer. Instead C = tiles a = J + 1 .. b = I - 1 is
// split where a and b part in binary: L = the highest bit in which they differ (-1 when a = b)
// and m = b with its L lowest bits cleared give
//
//     earlier part [a, m)   (empty when a = b)     = a .. a | (2^L - 1): depends on (J, L) only
//     later part   [m, b]                           = b & ~(2^L - 1) .. b: depends on (I, L) only
//
// so the dK/dV pass of key tile J can own what the earlier part wins (one sum per level L) and
// the dQ pass of query tile I what the later part wins: T x (log2 T + 1) sums per side, each
// written by one block, no cross-block reduction. The level only grows along either pass's walk
// (a falling with b fixed, or b rising with a fixed), and when it grows the new fixed part is
// the whole C before the step (tests/test_tile_algorithm.cpp checks both walks against the
// ranges above), so each pass carries the split with two Betweens.
constexpr int kNoLevel = -2;  // before the walk's first tile

FPA_HD int between_level(int a, int b) {
  int level = -1;
  for (unsigned x = unsigned(a ^ b); x != 0; x >>= 1) ++level;
  return level;
}
// Slots per tile and side: levels -1 .. between_level(0, tiles - 1).
FPA_HD int level_slots(int tiles) {
  return between_level(0, tiles > 1 ? tiles - 1 : 0) + 2;
}

// The tile ranges of the two parts (inclusive; first > last when empty).
FPA_HD int earlier_part_last(int a, int level) {
  return level < 0 ? a - 1 : a | ((1 << level) - 1);
}
FPA_HD int later_part_first(int b, int level) {
  return level < 0 ? b : b & ~((1 << level) - 1);
}

template <class A> struct SplitBetween {
  Between<A> earlier, later;
  int level;
};
template <class A> FPA_HD SplitBetween<A> empty_split() {
  return SplitBetween<A>{empty_between<A>(), empty_between<A>(), kNoLevel};
}
// C itself (the earlier part first: min_latest's tie rule).
template <class A> FPA_HD Between<A> whole(const SplitBetween<A>& s, A inv_tau) {
  return Between<A>{min_latest(s.earlier.min, s.later.min),
                    soft_add(s.earlier.soft, s.later.soft, inv_tau)};
}
// Whether C = tiles a .. b is at another level than s (s's level is then complete: its pass
// writes that level's sum before taking the step).
template <class A> FPA_HD bool level_ends(const SplitBetween<A>& s, int a, int b) {
  return s.level != kNoLevel && between_level(a, b) != s.level;
}
// The dQ pass's step: tile a joins C at the earlier end, C becoming tiles a .. b.
template <class A>
FPA_HD SplitBetween<A> split_add_earlier(SplitBetween<A> s, MinAt<A> tile_min,
                                         SoftSum<A> tile_soft, int a, int b, A inv_tau) {
  const int level = between_level(a, b);
  if (level != s.level) s = SplitBetween<A>{empty_between<A>(), whole(s, inv_tau), level};
  if (level < 0) s.later = extend_earlier(s.later, tile_min, tile_soft, inv_tau);  // a = b
  else s.earlier = extend_earlier(s.earlier, tile_min, tile_soft, inv_tau);
  return s;
}
// The dK/dV pass's step: tile b joins C at the later end, C becoming tiles a .. b.
template <class A>
FPA_HD SplitBetween<A> split_add_later(SplitBetween<A> s, MinAt<A> tile_min,
                                       SoftSum<A> tile_soft, int a, int b, A inv_tau) {
  const int level = between_level(a, b);
  if (level != s.level) s = SplitBetween<A>{whole(s, inv_tau), empty_between<A>(), level};
  s.later = extend_later(s.later, tile_min, tile_soft, inv_tau);
  return s;
}

// Which part attains M(j, i): the later part wins ties (P_I, then C, then S_J), so the
// position of the winning part is the latest position attaining the minimum.
enum class PathPart : int { KeyTile = 0, Between = 1, QueryTile = 2 };

// b_ij for J strictly before I, in two steps: the key's side min(S_J(j), C) is the same for
// every query of tile I, so a kernel may work it out once per key (the register forward does).
template <class A> FPA_HD A fpa_key_side(A key_suffix, A between) {
  return t_min(key_suffix, between);
}
template <class A> FPA_HD A fpa_bias_of_key_side(A key_side, A query_prefix, A phi_j) {
  return t_min(key_side, query_prefix) - phi_j;
}
template <class A>
FPA_HD A fpa_bias_off_diagonal(A key_suffix, A between, A query_prefix, A phi_j) {
  return fpa_bias_of_key_side(fpa_key_side(key_suffix, between), query_prefix, phi_j);
}

// path_part (below) with the key's side, min(S_J(j), C), and whether C wins against S_J(j)
// (C <= S_J(j)) worked out once per key, as a kernel can: P_I(i) wins iff it is <= the key's side
// (then it is <= both), else C iff it wins against S_J(j). Comparisons only: the same decisions.
template <class A>
FPA_HD PathPart path_part_of_key_side(A key_side, bool between_wins_key, A query_prefix) {
  if (query_prefix <= key_side) return PathPart::QueryTile;
  return between_wins_key ? PathPart::Between : PathPart::KeyTile;
}
template <class A>
FPA_HD PathPart path_part(A key_suffix, A between, A query_prefix) {
  return path_part_of_key_side(fpa_key_side(key_suffix, between), between <= key_suffix,
                               query_prefix);
}

// Row r of the diagonal tile (queries and keys both start at i0; phi[c] = phi_{i0 + c}):
// bias[c] = min of phi over [c, r] - phi[c] for c <= r (the running minimum of a backward scan),
// -inf for keys after the query (c in (r, cols)).
template <class A>
FPA_HD void fpa_diagonal_row_bias(const A* phi, int r, int cols, A* bias) {
  A m = t_inf(A());
  for (int c = r; c >= 0; --c) {
    m = t_min(m, phi[c]);
    bias[c] = m - phi[c];
  }
  for (int c = r + 1; c < cols; ++c) bias[c] = -t_inf(A());
}

// ---- FPA straight-through: the shares of the three parts ------------------------------------

// For J strictly before I: the shares of Z_ij = sum of w over [j, i] that lie in each part,
// key + between + query = 1, each in [0, 1]. Exponents are taken relative to the smallest min
// of the three (the largest weight), so nothing overflows whatever the field's spread.
template <class A> struct SoftShares {
  A key, between, query;
};
template <class A>
FPA_HD SoftShares<A> soft_shares(SoftSum<A> key, SoftSum<A> between, SoftSum<A> query,
                                 A inv_tau) {
  const A m = t_min(t_min(key.min, between.min), query.min);
  const A lk = key.rest - (key.min - m) * inv_tau;
  const A lb = between.rest - (between.min - m) * inv_tau;  // -inf when empty
  const A lq = query.rest - (query.min - m) * inv_tau;
  const A top = t_max(t_max(lk, lb), lq);
  const A ek = t_exp(lk - top), eb = t_exp(lb - top), eq = t_exp(lq - top);
  const A inv = A(1) / (ek + eb + eq);
  return SoftShares<A>{ek * inv, eb * inv, eq * inv};
}

// ---- FoX --------------------------------------------------------------------------------------
//
// b_ij = F_i - F_j, F the prefix sum of the log forget gates, kept in double (n terms of one
// sign: its magnitude grows with n). For J strictly before I it is split as
// (F_i - F_i0) + (F_i0 - F_j): the row part is formed once per query, the column part once per
// (tile pair, key), each from doubles, so a score costs one fp32 addition. F is monotone
// (log f <= 0) and i0 lies between j and i, so both parts are at most |b_ij|: the split costs
// two roundings of numbers no larger than the bias itself. On the diagonal tile i0 is not
// between j and i (with log gates of -20 the two parts reached 1e3 while the bias was near 0,
// and float32 outputs were off by 5e-5), so there the bias is one double difference.
template <class A> FPA_HD A fox_row_part_of(double prefix_i, double prefix_i0) {
  return A(prefix_i - prefix_i0);
}
template <class A> FPA_HD A fox_row_part(const double* prefix, int64_t i0, int64_t i) {
  return fox_row_part_of<A>(prefix[i], prefix[i0]);
}
template <class A> FPA_HD A fox_col_part_of(double prefix_i0, double prefix_j) {
  return A(prefix_i0 - prefix_j);
}
template <class A> FPA_HD A fox_col_part(const double* prefix, int64_t i0, int64_t j) {
  return fox_col_part_of<A>(prefix[i0], prefix[j]);
}
template <class A> FPA_HD A fox_diagonal_bias(const double* prefix, int64_t i, int64_t j) {
  return A(prefix[i] - prefix[j]);
}

}  // namespace fpa::tiles
