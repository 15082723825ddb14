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
//        Z_j = sum_{[j,i]} w. Per query this is the recurrence, for l = 0, 1, ..., i,
//            R_l = R_{l-1} Z_l / Z_{l-1} + g_il,    dphi_l += (w_l / Z_l) R_l,
//        where both ratios are <= 1 and come from log Z (so nothing overflows). R is carried
//        across key tiles, which is why tiles are visited in increasing order.
// Query blocks are split into `slots` chunks per head; each chunk owns its rows of dQ and adds
// dK, dV and the gate's gradient into its own slot, so threads never write the same memory.
#include "fused_bias.h"
#include "fused_gemm.h"
#include "fused_kernels.h"
#include "fused_math.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

namespace fpa::fused {
namespace {

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
  const bool exact = fpa && p.min_grad == MinGrad::Exact;
  const bool straight = fpa && p.min_grad == MinGrad::StraightThrough;
  const BiasRequest request{exact, straight};
  const T inv_tau = T(1.0 / p.tau), scale = T(p.scale);
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
          block.tile(t, bias.data(), exact ? arg.data() : nullptr,
                     straight ? logz.data() : nullptr, B);
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
          // Column sums of g: -phi_j (FPA) and -F_j (FoX) terms.
          std::fill(col.begin(), col.end(), 0.0);
          for (int64_t r = 0; r < rows; ++r) {
            const T* dsr = ds.data() + r * B;
            double row = 0;
            for (int64_t c2 = 0; c2 < cols; ++c2) {
              col[c2] += dsr[c2];
              row += dsr[c2];
            }
            if (p.variant == Variant::Fox) dgate[i0 + r] += row;
          }
          for (int64_t c2 = 0; c2 < cols; ++c2) dgate[j0 + c2] -= col[c2];
          if (exact) {
            for (int64_t r = 0; r < rows; ++r) {
              const int64_t valid = diagonal ? r + 1 : cols;
              for (int64_t c2 = 0; c2 < valid; ++c2)
                dgate[arg[r * B + c2]] += ds[r * B + c2];
            }
          } else if (straight) {
            for (int64_t r = 0; r < rows; ++r) {
              const int64_t valid = diagonal ? r + 1 : cols;
              T R = carry_r[r], prev = carry_logz[r];
              for (int64_t c2 = 0; c2 < valid; ++c2) {
                const T lz = logz[r * B + c2];
                R = R * std::exp(lz - prev) + ds[r * B + c2];
                dgate[j0 + c2] += double(std::exp(-gate[j0 + c2] * inv_tau - lz) * R);
                prev = lz;
              }
              carry_r[r] = R;
              carry_logz[r] = prev;
            }
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
