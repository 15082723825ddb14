// The bias b_ij of one (query tile I, key tile J) pair from O(tile) state, never an n x n matrix:
// FoX's F_i - F_j and FPA's path minimum split by tiles (SPEC section 9), with the parts the
// exact backward needs (which part attains the minimum, at which position) and those the
// straight-through backward needs (log-sums of the soft minimum's weights over the same parts).
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
// (diagonal_row_bias). Invariant kept by every function here: the position carried with a
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

// C, the path over the whole tiles strictly between J and I: its minimum (exact mode and the
// forward) and the log of its soft-minimum weight sum (straight-through mode). Empty (+inf,
// -inf) when J = I - 1. The forward and the dQ pass walk J down from I - 1 and add tile J + 1
// at the earlier end before using J; the dK/dV pass walks I up from J + 1 and adds tile I - 1
// at the later end. A minimum does not depend on the order it was taken in, so both passes
// see the same value and position.
template <class A> struct Between {
  MinAt<A> min;
  A log_sum;
};
template <class A> FPA_HD Between<A> empty_between() {
  return Between<A>{empty_min<A>(), -t_inf(A())};
}
template <class A>
FPA_HD Between<A> extend_earlier(Between<A> c, MinAt<A> tile_min, A tile_log_sum) {
  return Between<A>{min_latest(tile_min, c.min), log_add_exp(c.log_sum, tile_log_sum)};
}
template <class A>
FPA_HD Between<A> extend_later(Between<A> c, MinAt<A> tile_min, A tile_log_sum) {
  return Between<A>{min_latest(c.min, tile_min), log_add_exp(c.log_sum, tile_log_sum)};
}

// Which part attains M(j, i): the later part wins ties (P_I, then C, then S_J), so the
// position of the winning part is the latest position attaining the minimum.
enum class PathPart : int { KeyTile = 0, Between = 1, QueryTile = 2 };

template <class A>
FPA_HD PathPart path_part(A key_suffix, A between, A query_prefix) {
  if (query_prefix <= between && query_prefix <= key_suffix) return PathPart::QueryTile;
  if (between <= key_suffix) return PathPart::Between;
  return PathPart::KeyTile;
}

// b_ij for J strictly before I.
template <class A>
FPA_HD A fpa_bias_off_diagonal(A key_suffix, A between, A query_prefix, A phi_j) {
  return t_min(t_min(key_suffix, between), query_prefix) - phi_j;
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

// ---- FPA straight-through: log-sums of the soft minimum's weights over the same parts ----------
//
// w_l = exp(lw_l), lw_l = -(phi_l - centre) / tau. Every ratio the backward uses is unchanged by
// the centre (a constant of the head); it is there for rounding: with centre = phi_0 of the head,
// phi_l - centre is exact for a field on a coarse grid and as large as the field's spread, not its
// level (a float32 field at level 1e4 otherwise loses ~1e-3 of every exponent, issue 32).
template <class A> FPA_HD A soft_log_weight(A phi, A centre, A inv_tau) {
  return -(phi - centre) * inv_tau;
}

// suffix[c] = log sum of w over keys [c, cols) of a key tile (lw[c] = lw_{j0 + c}).
template <class A> FPA_HD void key_tile_suffix_log_sum(const A* lw, int cols, A* suffix) {
  A s = -t_inf(A());
  for (int c = cols - 1; c >= 0; --c) suffix[c] = s = log_add_exp(lw[c], s);
}

// prefix[r] = log sum of w over queries [0, r] of a query tile; prefix[rows - 1] is the tile's.
template <class A> FPA_HD void query_tile_prefix_log_sum(const A* lw, int rows, A* prefix) {
  A s = -t_inf(A());
  for (int r = 0; r < rows; ++r) prefix[r] = s = log_add_exp(s, lw[r]);
}

// For J strictly before I: the shares of Z_ij = sum of w over [j, i] that lie in each part,
// key + between + query = 1, each in [0, 1] (the largest log-sum is the reference, so nothing
// overflows whatever the field's spread).
template <class A> struct SoftShares {
  A key, between, query;
};
template <class A> FPA_HD SoftShares<A> soft_shares(A log_key, A log_between, A log_query) {
  const A m = t_max(t_max(log_key, log_between), log_query);
  const A ek = t_exp(log_key - m), eb = t_exp(log_between - m), eq = t_exp(log_query - m);
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
template <class A> FPA_HD A fox_row_part(const double* prefix, int64_t i0, int64_t i) {
  return A(prefix[i] - prefix[i0]);
}
template <class A> FPA_HD A fox_col_part(const double* prefix, int64_t i0, int64_t j) {
  return A(prefix[i0] - prefix[j]);
}
template <class A> FPA_HD A fox_diagonal_bias(const double* prefix, int64_t i, int64_t j) {
  return A(prefix[i] - prefix[j]);
}

}  // namespace fpa::tiles
