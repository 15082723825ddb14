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
//                      per-pair sums (C wins)   -> C's argmin           by C's parts, then finish
//                      per-column sums (S_J)    -> argmin S_J(j)        dK/dV pass, key tile
//   straight-through +g_ij w_l / Z_ij to every l in [j, i] (the soft minimum's weights), and
//                    Z_ij = (key part) + (between part) + (query part) (soft_shares), so
//                      per-row sums of g_ij * query share  -> spread over [start of I, i]
//                      per-pair sums of g_ij * between share -> spread over C's tiles (by part)
//                      per-column sums of g_ij * key share  -> spread over [j, end of J]
//                    each spread with weights w_l / (the part's weight sum) <= 1, so nothing
//                    overflows however far the field's levels are apart.
//   diagonal tile    per row, a scan over the row's keys (exact: the running argmin;
//                    straight-through: a recurrence with ratios <= 1), into a per-row buffer
//                    that is then summed over rows in row order.
//
// What C wins goes to C's two parts (tile_bias.h's SplitBetween): per tile pair, the pass that
// owns a part (dQ: the later, dK/dV: the earlier) adds the pair's C sum times the part's
// fraction (exact: 1 for the part holding C's latest argmin, else 0; straight-through: the
// part's weight sum over C's) to its sum for the pair's level, and writes one BetweenSlot per
// level: that sum, the part's argmin and weight sum. The finish step gives tile K the slots whose
// part covers it: in exact mode those whose argmin lies in K (there it is tile K's own latest
// argmin: the latest tile attaining a part's minimum holds the latest position), in
// straight-through mode each slot's sum times (tile K's weight sum / the part's), spread over K
// with weights w_l / (tile K's weight sum).
//
// FoX: dF_i += sum_j g_ij (per row, dQ pass), dF_j -= sum_i g_ij (per column, dK/dV pass), and
// d log f_t = sum_{s >= t} dF_s (in double, by chunks: tile_head_scan.h).
#pragma once

#include "kernels/cuda/tile_bias.h"

namespace fpa::tiles {

// ---- exact mode --------------------------------------------------------------------------------

// The part of g that a pass routes: g if the minimum came from `part`, else 0.
template <class A> FPA_HD A exact_share(PathPart winner, PathPart part, A g) {
  return winner == part ? g : A(0);
}

// route_score's exact mode with the winning part known (path_part, or path_part_of_key_side
// where a kernel keeps the key's side).
template <class A>
FPA_HD void route_exact(PathPart own, PathPart winner, A g, A& own_sum, A& c_sum) {
  own_sum += exact_share(winner, own, g);
  c_sum += exact_share(winner, PathPart::Between, g);
}

// What one off-diagonal score's logit gradient g owes its pass's own part of the path (own:
// KeyTile in the dK/dV pass, QueryTile in the dQ pass) and C, added to own_sum and c_sum. Exact:
// g to the part attaining the minimum (path_part); straight-through: g times each part's share
// of the soft minimum's weight (soft_shares).
template <class A>
FPA_HD void route_score(PathPart own, bool soft, A g, A key_min, SoftSum<A> key_soft,
                        const Between<A>& c, A query_min, SoftSum<A> query_soft, A inv_tau,
                        A& own_sum, A& c_sum) {
  if (soft) {
    const SoftShares<A> sh = soft_shares(key_soft, c.soft, query_soft, inv_tau);
    own_sum += g * (own == PathPart::KeyTile ? sh.key : sh.query);
    c_sum += g * sh.between;
  } else {
    route_exact(own, path_part(key_min, c.min.value, query_min), g, own_sum, c_sum);
  }
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

// ---- C's parts: one sum per (tile, level) ----------------------------------------------------

enum class BetweenSide { Earlier, Later };

// The fraction of what C wins in one tile pair that goes to one part of C.
template <class A>
FPA_HD A part_fraction(const SplitBetween<A>& s, BetweenSide side, bool soft, A inv_tau) {
  const Between<A>& part = side == BetweenSide::Later ? s.later : s.earlier;
  if (soft) {
    if (part.soft.rest == -t_inf(A())) return A(0);
    return t_exp(soft_log_ratio(part.soft, whole(s, inv_tau).soft, inv_tau));
  }
  const bool later_wins = s.later.min.value <= s.earlier.min.value;  // min_latest
  if (part.min.pos < 0) return A(0);
  return (side == BetweenSide::Later) == later_wins ? A(1) : A(0);
}

// One level's sum of a part, with the part's argmin (exact) and weight sum (straight-through).
// pos < 0: no pair of the block had that level.
template <class A> struct BetweenSlot {
  A sum;
  int pos;
  SoftSum<A> soft;
};
template <class A> FPA_HD BetweenSlot<A> empty_slot() {
  return BetweenSlot<A>{A(0), -1, empty_soft_sum<A>()};
}
template <class A> FPA_HD BetweenSlot<A> slot_of(A sum, const Between<A>& part) {
  return BetweenSlot<A>{sum, part.min.pos, part.soft};
}

// The slots' part for tile K, in double. later[I * slots + level + 1] was written by query tile
// I (later part [later_part_first(I - 1, level), I - 1]), earlier[J * slots + level + 1] by key
// tile J (earlier part [J + 1, earlier_part_last(J + 1, level)]); this visits exactly the slots
// whose part covers K, levels in increasing order, later side first. Exact: the sums of the
// slots whose argmin lies in K; straight-through: each sum times (tile's / part's weight sum).
// Spread over `lanes` threads (the finish kernel's block): lane takes, in each level's range of
// candidates on each side, every lanes-th from the range's start + lane (between_total_by_lanes
// adds the lanes' totals in lane order); lanes = 1 is the one-thread walk.
template <class A>
FPA_HD double between_total(const BetweenSlot<A>* later, const BetweenSlot<A>* earlier,
                            int tiles, int k, bool soft, SoftSum<A> tile, A inv_tau, int lane = 0,
                            int lanes = 1) {
  const int slots = level_slots(tiles);
  double total = 0;
  auto add = [&](const BetweenSlot<A>& s) {
    if (s.pos < 0) return;
    if (!soft) {
      if (s.pos / kTile == k) total += double(s.sum);
      return;
    }
    total += double(t_exp(soft_log_ratio(tile, s.soft, inv_tau)) * s.sum);
  };
  for (int x = 0; x < slots; ++x) {
    const int level = x - 1, span = level < 0 ? 0 : (1 << level) - 1;
    for (int b = k + lane; b <= t_min(k | span, tiles - 2); b += lanes)
      add(later[(b + 1) * slots + x]);
    if (level < 0) continue;
    for (int a = t_max(k & ~span, 1) + lane; a <= k; a += lanes) add(earlier[(a - 1) * slots + x]);
  }
  return total;
}
template <class A>
inline double between_total_by_lanes(const BetweenSlot<A>* later, const BetweenSlot<A>* earlier,
                                     int tiles, int k, bool soft, SoftSum<A> tile, A inv_tau,
                                     int lanes) {
  double total = 0;
  for (int lane = 0; lane < lanes; ++lane)
    total += between_total(later, earlier, tiles, k, soft, tile, inv_tau, lane, lanes);
  return total;
}

// ---- the finish step (one per head, after both passes), in double ------------------------------

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

}  // namespace fpa::tiles
