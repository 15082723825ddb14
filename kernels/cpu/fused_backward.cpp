// Fused backward pass (FlashAttention-2 style): recomputes each tile's probabilities from the
// saved row log-sum-exp, P_ij = exp(s_ij - lse_i), then
//   dV_j += P_ij dO_i,  dP_ij = dO_i . v_j,  dS_ij = P_ij (dP_ij - Delta_i),  Delta_i = dO_i . O_i,
//   dQ_i += scale dS_ij k_j,  dK_j += scale dS_ij q_i,  and dS_ij = dLoss/db_ij =: g_ij.
// The gate's gradient is assembled from g:
//   FoX  b_ij = F_i - F_j:  dF_i += sum_j g_ij, dF_j -= sum_i g_ij (the caller turns dF into
//        d log f by a reverse cumulative sum).
//   FPA  b_ij = min_{[j,i]} phi - phi_j:  dphi_j -= sum_i g_ij, and the minimum's part:
//        exact: dphi_{l*(i,j)} += g_ij (l* from fused_bias.h, latest position at ties);
//        straight-through: dphi_l += w_l sum_{j<=l} g_ij / Z_j with w_l = exp(-phi_l/tau) and
//        Z_j = sum_{[j,i]} w (both divided by exp(-c/tau), c = BlockBias's centre). Per query
//        this is the recurrence, for l = 0, 1, ..., i,
//            R_l = R_{l-1} Z_l / Z_{l-1} + g_il,    dphi_l += (w_l / Z_l) R_l,
//        where both ratios are <= 1 and come from log Z (so nothing overflows). R is carried
//        across key tiles, which is why tiles are visited in increasing order.
// Query blocks are split into `slots` chunks per head; each chunk owns its rows of dQ and adds
// dK, dV and the gate's gradient into its own slot, so threads never write the same memory.
#include "kernels/cpu/fused_bias.h"
#include "kernels/cpu/fused_gemm.h"
#include "kernels/cpu/fused_kernels.h"
#include "kernels/cpu/fused_math.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <vector>

namespace fpa::fused {
namespace {

constexpr int64_t kMaxTile = 256;

// First query block of chunk c when `blocks` causal blocks (block q costs q + 1 tiles) are
// split into `chunks` chunks of about equal work.
int64_t chunk_start(int64_t c, int64_t chunks, int64_t blocks) {
  if (c >= chunks) return blocks;
  const double total = double(blocks) * double(blocks + 1) / 2;
  const double target = total * double(c) / double(chunks);
  int64_t qb = 0;
  double work = 0;
  while (qb < blocks && work < target) work += double(++qb);
  return qb;
}

// Straight-through part of the field's gradient for one tile, general form: log Z given per
// entry (logz), ratios and weights by exp of log differences, so nothing overflows.
template <class T>
void straight_through_general(const BlockBias<T>& block, const T* phi, int64_t cols, int64_t rows,
                              bool diagonal, const T* g, const T* logz, int64_t ld, T* carry_r,
                              T* carry_logz, double* dphi) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t valid = diagonal ? r + 1 : cols;
    T R = carry_r[r], prev = carry_logz[r];
    for (int64_t c = 0; c < valid; ++c) {
      const T lz = logz[r * ld + c];
      R = R * std::exp(lz - prev) + g[r * ld + c];  // Z_l / Z_{l-1} = exp(log Z_l - log Z_{l-1})
      dphi[c] += double(std::exp(block.log_weight(phi[c]) - lz) * R);  // (w_l / Z_l) R_l
      prev = lz;
    }
    carry_r[r] = R;
    carry_logz[r] = prev;
  }
}

// The same for an off-diagonal tile whose own soft-min mass spans at most max_tile_range in
// log space: Z_j = exp(tl_j) + exp(rz_i) is factored per row as exp(m_i) (E_j F_i + G_i) with
// E_j = exp(tl_j - tl_0) in [e^-range, 1] and max(F_i, G_i) = 1, so the per-entry work is a
// multiply-add and two divisions instead of three exponentials and a logarithm.
// The recurrence runs along a row, so a row at a time is one long chain of dependent steps.
// Rows are independent: kLanes rows advance together, one column at a time, as vector lanes.
// Each entry's arithmetic is the row-at-a-time loop's, and col[c] still adds its rows in
// increasing order, so the bits are the same.
constexpr int64_t kLanes = 8;

template <class T>
void straight_through_factored(const BlockBias<T>& block, const T* phi, int64_t cols,
                               int64_t rows, const T* g, int64_t ld, T* carry_r,
                               T* carry_logz, std::vector<double>& col, double* dphi) {
  const T* tl = block.tile_log_z();
  const T* rz = block.right_log_z();
  T e[kMaxTile], w[kMaxTile];
  for (int64_t c = 0; c < cols; ++c) {
    e[c] = std::exp(tl[c] - tl[0]);
    w[c] = std::exp(block.log_weight(phi[c]) - tl[0]);  // w_j / exp(tl_0) <= e[c]
  }
  std::fill(col.begin(), col.end(), 0.0);
  for (int64_t r0 = 0; r0 < rows; r0 += kLanes) {
    const int64_t lanes = std::min(kLanes, rows - r0);
    // Lanes past the last row get f = 0, G = 1, R = 0, g = 0: finite, and never added to col.
    T m[kLanes], f[kLanes], gr[kLanes], prev_z[kLanes], ratio[kLanes], R[kLanes];
    T g_by_col[kMaxTile * kLanes];
    double term[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) {
      const bool row = l < lanes;
      m[l] = row ? std::max(tl[0], rz[r0 + l]) : T(0);
      f[l] = row ? std::exp(tl[0] - m[l]) : T(0);
      gr[l] = row ? std::exp(rz[r0 + l] - m[l]) : T(1);
      prev_z[l] = e[0] * f[l] + gr[l];
      ratio[l] = row ? std::exp(m[l] + std::log(prev_z[l]) - carry_logz[r0 + l]) : T(1);
      R[l] = row ? carry_r[r0 + l] : T(0);
      for (int64_t c = 0; c < cols; ++c)
        g_by_col[c * kLanes + l] = row ? g[(r0 + l) * ld + c] : T(0);
    }
    for (int64_t c = 0; c < cols; ++c) {
      const T* gc = g_by_col + c * kLanes;
      T z[kLanes];
      for (int64_t l = 0; l < kLanes; ++l) z[l] = e[c] * f[l] + gr[l];
      if (c > 0)
        for (int64_t l = 0; l < kLanes; ++l) ratio[l] = z[l] / prev_z[l];
      for (int64_t l = 0; l < kLanes; ++l) {
        R[l] = R[l] * ratio[l] + gc[l];
        term[l] = double(w[c] * f[l] / z[l] * R[l]);
        prev_z[l] = z[l];
      }
      for (int64_t l = 0; l < lanes; ++l) col[c] += term[l];
    }
    for (int64_t l = 0; l < lanes; ++l) {
      carry_r[r0 + l] = R[l];
      carry_logz[r0 + l] = m[l] + std::log(prev_z[l]);
    }
  }
  for (int64_t c = 0; c < cols; ++c) dphi[c] += col[c];
}

}  // namespace

int64_t backward_slots(const Problem& p, int threads) {
  const int64_t blocks = (p.n + p.tile - 1) / p.tile;
  const int64_t heads = std::max<int64_t>(1, p.batch * p.heads);
  const int64_t want = (threads + heads - 1) / heads;
  return std::max<int64_t>(1, std::min(want, blocks));
}

template <class T>
void backward(const Problem& p, const BackwardArgs<T>& a) {
  const int64_t B = p.tile, n = p.n, d = p.d, dv = p.dv, bhs = p.batch * p.heads;
  const int64_t blocks = (n + B - 1) / B, chunks = a.slots;
  const bool fpa = p.variant == Variant::Fpa;
  const bool exact = fpa && p.fpa_backward == FpaBackward::Exact;
  const bool straight = fpa && p.fpa_backward == FpaBackward::StraightThrough;
  const BiasRequest request{exact, straight};
  const T scale = T(p.scale);
  // Largest log-space span of a tile's own soft-min mass for the factored straight-through path
  // (keeps E_j = exp(tl_j - tl_0) a normal number with room to spare).
  const T max_tile_range = sizeof(T) == 4 ? T(60) : T(600);
  TORCH_CHECK(B <= kMaxTile, "fused attention: tile size must be <= ", kMaxTile);
  at::parallel_for(0, bhs * chunks, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> prob(B * B), ds(B * B), bias(B * B), logz(straight ? B * B : 0);
    std::vector<int32_t> arg(exact ? B * B : 0);
    std::vector<T> delta(B), carry_r(B), carry_logz(B);
    std::vector<double> col(B);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t bh = task / chunks, c = task % chunks;
      const T* q = a.q + bh * n * d;
      const T* k = a.k + bh * n * d;
      const T* v = a.v + bh * n * dv;
      const T* gate = a.gate ? a.gate + bh * n : nullptr;
      T* dq = a.dq + bh * n * d;
      T* dk = a.dk + (c * bhs + bh) * n * d;
      T* dvv = a.dv + (c * bhs + bh) * n * dv;
      double* dgate = a.dgate ? a.dgate + (c * bhs + bh) * n : nullptr;
      for (int64_t qb = chunk_start(c, chunks, blocks); qb < chunk_start(c + 1, chunks, blocks);
           ++qb) {
        const int64_t i0 = qb * B, i1 = std::min(i0 + B, n), rows = i1 - i0;
        const T* qi = q + i0 * d;
        const T* doi = a.dout + (bh * n + i0) * dv;
        const T* oi = a.out + (bh * n + i0) * dv;
        const T* lse = a.lse + bh * n + i0;
        T* dqi = dq + i0 * d;
        std::fill(dqi, dqi + rows * d, T(0));
        for (int64_t r = 0; r < rows; ++r) {
          T acc = 0;
          for (int64_t e = 0; e < dv; ++e) acc += doi[r * dv + e] * oi[r * dv + e];
          delta[r] = acc;
          carry_r[r] = 0;
          carry_logz[r] = std::numeric_limits<T>::infinity();  // first ratio exp(-inf) = 0
        }
        BlockBias<T> block(p.variant, gate, i0, i1, B, p.tau, request);
        for (int64_t t = 0; t <= qb; ++t) {
          const int64_t j0 = t * B, cols = std::min(j0 + B, i1) - j0;
          const bool diagonal = t == qb;
          gemm_nt<T>(rows, cols, d, scale, qi, d, k + j0 * d, d, T(0), prob.data(), B);
          // Off-diagonal tiles: the exact argmin and log Z are used in factored form below.
          block.tile(t, bias.data(), exact && diagonal ? arg.data() : nullptr,
                     straight && diagonal ? logz.data() : nullptr, B);
          for (int64_t r = 0; r < rows; ++r) {
            T* pr = prob.data() + r * B;
            const T* br = bias.data() + r * B;
            for (int64_t c2 = 0; c2 < cols; ++c2) pr[c2] += br[c2] - lse[r];
            exp_inplace(pr, cols);
            if (diagonal)  // above the diagonal: exactly zero
              for (int64_t c2 = r + 1; c2 < cols; ++c2) pr[c2] = 0;
          }
          gemm_nt<T>(rows, cols, dv, T(1), doi, dv, v + j0 * dv, dv, T(0), ds.data(), B);
          for (int64_t r = 0; r < rows; ++r) {
            T* dsr = ds.data() + r * B;
            const T* pr = prob.data() + r * B;
            const int64_t valid = diagonal ? r + 1 : cols;
            for (int64_t c2 = 0; c2 < valid; ++c2) dsr[c2] = pr[c2] * (dsr[c2] - delta[r]);
            for (int64_t c2 = valid; c2 < cols; ++c2) dsr[c2] = 0;
          }
          gemm_tn<T>(cols, dv, rows, T(1), prob.data(), B, doi, dv, T(1), dvv + j0 * dv, dv);
          gemm_tn<T>(cols, d, rows, scale, ds.data(), B, qi, d, T(1), dk + j0 * d, d);
          gemm_nn<T>(rows, d, cols, scale, ds.data(), B, k + j0 * d, d, T(1), dqi, d);
          if (!dgate) continue;
          // Column sums of g: -phi_j (FPA) and -F_j (FoX) terms; FoX's row sums (+F_i) in a
          // loop of their own, as their one long chain of additions would hold up the columns'.
          std::fill(col.begin(), col.end(), 0.0);
          for (int64_t r = 0; r < rows; ++r) {
            const T* dsr = ds.data() + r * B;
            for (int64_t c2 = 0; c2 < cols; ++c2) col[c2] += dsr[c2];
            if (p.variant != Variant::Fox) continue;
            double row = 0;
            for (int64_t c2 = 0; c2 < cols; ++c2) row += dsr[c2];
            dgate[i0 + r] += row;
          }
          for (int64_t c2 = 0; c2 < cols; ++c2) dgate[j0 + c2] -= col[c2];
          if (exact && diagonal) {
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t c2 = 0; c2 <= r; ++c2) dgate[arg[r * B + c2]] += ds[r * B + c2];
          } else if (exact) {
            // l* is the query's right-part argmin or the key's tile-suffix argmin.
            const T* tmin = block.tile_min();
            std::fill(col.begin(), col.end(), 0.0);
            for (int64_t r = 0; r < rows; ++r) {
              const T right = block.right_min()[r];
              const T* dsr = ds.data() + r * B;
              double to_right = 0;
              for (int64_t c2 = 0; c2 < cols; ++c2) {
                const bool right_wins = right <= tmin[c2];
                to_right += right_wins ? double(dsr[c2]) : 0.0;
                col[c2] += right_wins ? 0.0 : double(dsr[c2]);
              }
              dgate[block.right_arg()[r]] += to_right;
            }
            for (int64_t c2 = 0; c2 < cols; ++c2) dgate[block.tile_arg()[c2]] += col[c2];
          } else if (straight) {
            const T* tl = block.tile_log_z();
            const bool factored = !diagonal && tl[0] - tl[cols - 1] <= max_tile_range;
            if (!factored && !diagonal) block.fill_log_z(cols, logz.data(), B);
            if (factored)
              straight_through_factored(block, gate + j0, cols, rows, ds.data(), B,
                                        carry_r.data(), carry_logz.data(), col, dgate + j0);
            else
              straight_through_general(block, gate + j0, cols, rows, diagonal, ds.data(),
                                       logz.data(), B, carry_r.data(), carry_logz.data(),
                                       dgate + j0);
          }
        }
      }
    }
  });
}

int64_t backward_extra_bytes(const Problem& p, int64_t elem_size, int threads) {
  const int64_t B = p.tile;
  const bool fpa = p.variant == Variant::Fpa;
  const int64_t per_thread = (4 * B * B + 3 * B) * elem_size + B * 8 + B * B * 4 +
                             (p.variant == Variant::Fox ? p.n * 8 : 0) +
                             (fpa ? (p.n / B + 1) * (2 * elem_size + 4) +
                                        5 * B * (2 * elem_size + 4)
                                  : 0);
  // Slots beyond the first: extra copies of dK, dV and the gate's gradient.
  const int64_t slots = backward_slots(p, threads);
  const int64_t slot_bytes =
      (slots > 1 ? slots : 0) * p.batch * p.heads * p.n * (p.d + p.dv + 1) * elem_size;
  return per_thread * threads + slot_bytes;
}

template void backward<float>(const Problem&, const BackwardArgs<float>&);
template void backward<double>(const Problem&, const BackwardArgs<double>&);

}  // namespace fpa::fused
