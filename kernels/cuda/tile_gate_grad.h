// The gradient of the gate (FPA's field, FoX's log forget gates) by tile reductions: no
// per-element scatter and no atomics, every sum in a fixed order, so the backward is
// deterministic. g_ij = dLoss/db_ij is the logit gradient (tile_softmax.h).
//
// FPA, both modes: -g_ij goes to phi_j: a per-column sum, in the dK/dV pass. The path minimum's
// part (SPEC sections 2 and 9) splits like the forward's minimum, J strictly before I:
//
//   exact            +g_ij to l*(i, j), the latest position attaining M(j, i); by tile_bias.h's
//                    path_part that is argmin P_I(i), or C's argmin, or argmin S_J(j), so
//                      per-row sums (P_I wins)  -> argmin P_I(i)        dQ pass, query tile
//                      per-pair sums (C wins)   -> C's argmin           dQ pass, then finish
//                      per-column sums (S_J)    -> argmin S_J(j)        dK/dV pass, key tile
//   straight-through +g_ij w_l / Z_ij to every l in [j, i] (the soft minimum's weights), and
//                    Z_ij = (key part) + (between part) + (query part) (soft_shares), so
//                      per-row sums of g_ij * query share  -> spread over [start of I, i]
//                      per-pair sums of g_ij * between share -> spread over the tiles between
//                      per-column sums of g_ij * key share  -> spread over [j, end of J]
//                    each spread with weights w_l / (the part's weight sum) <= 1, so nothing
//                    overflows however far the field's levels are apart.
//   diagonal tile    per row, a scan over the row's keys (exact: the running argmin;
//                    straight-through: a recurrence with ratios <= 1), into a per-row buffer
//                    that is then summed over rows in row order.
//
// C's argmin lies in one of the tiles K strictly between J and I, and there it is tile K's own
// latest argmin (the latest tile attaining C's minimum holds the latest position). So the
// per-pair sums only need one number per (query tile I, tile K): between_to_tiles writes row I
// of a T x T buffer, and the finish step adds column K of it to tile K's argmin (exact) or spreads
// it over tile K with weights w_l / (tile K's weight sum) (straight-through).
//
// FoX: dF_i += sum_j g_ij (per row, dQ pass), dF_j -= sum_i g_ij (per column, dK/dV pass), and
// d log f_t = sum_{s >= t} dF_s (fox_log_gate_grad, in double).
#pragma once

#include "kernels/cuda/tile_bias.h"

namespace fpa::tiles {

// ---- exact mode --------------------------------------------------------------------------------

// The part of g that a pass routes: g if the minimum came from `part`, else 0.
template <class A> FPA_HD A exact_share(PathPart winner, PathPart part, A g) {
  return winner == part ? g : A(0);
}

// Row r of the diagonal tile (phi[c] = phi_{i0 + c}): adds g[c] (c <= r) to e[l*] with l* the
// latest position of the minimum of phi over [c, r], in tile coordinates. A backward scan keeps
// the running argmin, replacing it only on a strictly smaller value (the latest one at ties).
template <class A> FPA_HD void exact_diagonal_row(const A* phi, int r, const A* g, A* e) {
  A m = t_inf(A());
  int at = r;
  for (int c = r; c >= 0; --c) {
    if (phi[c] < m) { m = phi[c]; at = c; }
    e[at] += g[c];
  }
}

// End of the dK/dV pass of key tile J: col[c] (the sum of g over the scores whose minimum came
// from S_J(j0 + c)) goes to argmin S_J(j0 + c). out is the tile's gate gradient (tile coordinates).
template <class A>
FPA_HD void exact_key_tile_scatter(const MinAt<A>* suffix, const A* col, int j0, int cols,
                                   A* out) {
  for (int c = 0; c < cols; ++c) out[suffix[c].pos - j0] += col[c];
}

// End of the dQ pass of query tile I: row[r] (scores whose minimum came from P_I(i0 + r)) goes
// to argmin P_I(i0 + r).
template <class A>
FPA_HD void exact_query_tile_scatter(const MinAt<A>* prefix, const A* row, int i0, int rows,
                                     A* out) {
  for (int r = 0; r < rows; ++r) out[prefix[r].pos - i0] += row[r];
}

// End of the dQ pass of query tile I: pair[J] (scores of the pair (I, J) whose minimum came from
// C) and pos[J] (C's argmin, -1 when no tile lies between) for J < I; writes to_tile[K] for
// K < I, the sum of the pairs whose C-minimum lies in tile K.
template <class A>
FPA_HD void exact_between_to_tiles(const A* pair, const int* pos, int tile_i, A* to_tile) {
  for (int k = 0; k < tile_i; ++k) to_tile[k] = A(0);
  for (int j = 0; j < tile_i; ++j)
    if (pos[j] >= 0) to_tile[pos[j] / kTile] += pair[j];
}

// ---- straight-through mode ---------------------------------------------------------------------

// Row r of the diagonal tile (phi[c] = phi_{i0 + c}). With Z_c = sum of w over [c, r],
// e[l] += w_l * sum_{c <= l} g[c] / Z_c for l <= r, through R_l = Z_l * sum_{c <= l} g[c] / Z_c,
// R_l = R_{l-1} Z_l / Z_{l-1} + g[l]: both ratios are <= 1. z: scratch of r + 1 entries.
template <class A>
FPA_HD void soft_diagonal_row(const A* phi, int r, const A* g, A inv_tau, SoftSum<A>* z, A* e) {
  SoftSum<A> s = empty_soft_sum<A>();
  for (int c = r; c >= 0; --c) z[c] = s = soft_add(soft_sum_of(phi[c]), s, inv_tau);
  A carry = A(0);
  for (int l = 0; l <= r; ++l) {
    if (l > 0) carry *= t_exp(soft_log_ratio(z[l], z[l - 1], inv_tau));
    carry += g[l];
    e[l] += t_exp(soft_log_ratio(phi[l], z[l], inv_tau)) * carry;
  }
}

// End of the dK/dV pass of key tile J: col[c] = sum_i g_ij * (key share of Z_ij), the key share
// being (the tile's part of Z_ij, suffix[c]) / Z_ij. Then w_l / Z_ij = w_l / suffix[c] * share
// for l in [c, cols), so position l of the tile gets sum_{c <= l} (w_l / suffix[c]) col[c];
// w_l is in that suffix: each ratio <= 1.
// One position per call (a GPU thread each); the version without _at loops over positions.
template <class A>
FPA_HD A soft_key_tile_spread_at(int l, const A* phi, const SoftSum<A>* suffix, const A* col,
                                 A inv_tau) {
  A s = A(0);
  for (int c = 0; c <= l; ++c) s += t_exp(soft_log_ratio(phi[l], suffix[c], inv_tau)) * col[c];
  return s;
}
template <class A>
FPA_HD void soft_key_tile_spread(const A* phi, const SoftSum<A>* suffix, const A* col, int cols,
                                 A inv_tau, A* out) {
  for (int l = 0; l < cols; ++l) out[l] += soft_key_tile_spread_at(l, phi, suffix, col, inv_tau);
}

// End of the dQ pass of query tile I: position l of the tile gets
// sum_{r >= l} (w_l / prefix[r]) row[r] (row[r]: g times the query share).
template <class A>
FPA_HD A soft_query_tile_spread_at(int l, const A* phi, const SoftSum<A>* prefix, const A* row,
                                   int rows, A inv_tau) {
  A s = A(0);
  for (int r = l; r < rows; ++r) s += t_exp(soft_log_ratio(phi[l], prefix[r], inv_tau)) * row[r];
  return s;
}
template <class A>
FPA_HD void soft_query_tile_spread(const A* phi, const SoftSum<A>* prefix, const A* row, int rows,
                                   A inv_tau, A* out) {
  for (int l = 0; l < rows; ++l)
    out[l] += soft_query_tile_spread_at(l, phi, prefix, row, rows, inv_tau);
}

// End of the dQ pass of query tile I: pair[J] = sum over the pair (I, J) of g_ij * (between
// share), between[J] = C's weight sum for that pair, tile[K] = tile K's weight sum.
// to_tile[K] = sum_{J < K} (tile[K] / between[J]) pair[J] for K < I (tile K lies between J and
// I exactly when J < K < I; the ratio is <= 1).
template <class A>
FPA_HD A soft_between_to_tile(int k, const A* pair, const SoftSum<A>* between,
                              const SoftSum<A>* tile, A inv_tau) {
  A s = A(0);
  for (int j = 0; j < k; ++j) s += t_exp(soft_log_ratio(tile[k], between[j], inv_tau)) * pair[j];
  return s;
}
template <class A>
FPA_HD void soft_between_to_tiles(const A* pair, const SoftSum<A>* between,
                                  const SoftSum<A>* tile, int tile_i, A inv_tau, A* to_tile) {
  for (int k = 0; k < tile_i; ++k)
    to_tile[k] = soft_between_to_tile(k, pair, between, tile, inv_tau);
}

// ---- the finish step (one per head, after both passes), in double ------------------------------

// Column K of the T x T buffer (row I written by query tile I's dQ pass): the between-part total
// of tile K, summed over the query tiles after it in increasing order.
template <class A>
FPA_HD double between_total(const A* to_tiles, int tiles, int tile_k) {
  double s = 0;
  for (int i = tile_k + 1; i < tiles; ++i) s += double(to_tiles[int64_t(i) * tiles + tile_k]);
  return s;
}

// Straight-through: tile K's between total spread with weights w_l / (tile K's weight sum).
template <class A>
FPA_HD double soft_between_finish_at(A phi, SoftSum<A> tile, double total, A inv_tau) {
  return double(t_exp(soft_log_ratio(phi, tile, inv_tau))) * total;
}
template <class A>
FPA_HD void soft_between_finish(const A* phi, SoftSum<A> tile, double total, int cols, A inv_tau,
                                double* out) {
  for (int l = 0; l < cols; ++l) out[l] += soft_between_finish_at(phi[l], tile, total, inv_tau);
}

// FoX: d log f_t = sum_{s >= t} dF_s, in place (a reverse cumulative sum in double: dF has many
// nearly cancelling terms).
FPA_HD void fox_log_gate_grad(double* df, int64_t n) {
  double s = 0;
  for (int64_t t = n - 1; t >= 0; --t) df[t] = s += df[t];
}

}  // namespace fpa::tiles
