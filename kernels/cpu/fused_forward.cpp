// Fused forward pass: one query block at a time, streaming over key tiles with an online
// softmax. Nothing of size n x n exists; per query block the state is the running row maximum
// m_i, the running normaliser l_i and the unnormalised output O_i (B x Dv), plus the O(n)
// bias state of fused_bias.h.
//
// Online softmax invariant, after the tiles seen so far:  m_i = max_j s_ij,
//   l_i = sum_j exp(s_ij - m_i),  O_i = sum_j exp(s_ij - m_i) v_j.
// A new tile with a larger maximum rescales l_i and O_i by exp(m_old - m_new).
#include "kernels/cpu/fused_bias.h"
#include "kernels/cpu/fused_gemm.h"
#include "kernels/cpu/fused_kernels.h"
#include "kernels/cpu/fused_math.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

namespace fpa::fused {

// Order the query blocks of a head heavy, light, heavy, light...: at::parallel_for hands each
// thread a contiguous range, and causal blocks near the end cost more.
inline int64_t interleaved_block(int64_t idx, int64_t blocks) {
  return idx % 2 == 0 ? blocks - 1 - idx / 2 : idx / 2;
}

template <class T>
void forward(const Problem& p, const ForwardArgs<T>& a) {
  const int64_t B = p.tile, n = p.n, d = p.d, dv = p.dv;
  const int64_t blocks = (n + B - 1) / B;
  const int64_t tasks = p.batch * p.heads * blocks;
  const BiasRequest no_extras{};
  at::parallel_for(0, tasks, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> s(B * B), bias(B * B), row_max(B), row_sum(B);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t bh = task / blocks, qb = interleaved_block(task % blocks, blocks);
      const int64_t i0 = qb * B, i1 = std::min(i0 + B, n), rows = i1 - i0;
      const T* q = a.q + (bh * n + i0) * d;
      const T* k = a.k + bh * n * d;
      const T* v = a.v + bh * n * dv;
      const T* gate = a.gate ? a.gate + bh * n : nullptr;
      T* o = a.out + (bh * n + i0) * dv;
      std::fill(o, o + rows * dv, T(0));
      std::fill(row_max.begin(), row_max.end(), -std::numeric_limits<T>::infinity());
      std::fill(row_sum.begin(), row_sum.end(), T(0));
      BlockBias<T> block(p.variant, gate, i0, i1, B, p.tau, no_extras);
      for (int64_t t = 0; t <= qb; ++t) {
        const int64_t j0 = t * B, cols = std::min(j0 + B, i1) - j0;
        gemm_nt<T>(rows, cols, d, T(p.scale), q, d, k + j0 * d, d, T(0), s.data(), B);
        block.tile(t, bias.data(), nullptr, nullptr, B);
        for (int64_t r = 0; r < rows; ++r) {
          T* sr = s.data() + r * B;
          const T* br = bias.data() + r * B;
          for (int64_t c = 0; c < cols; ++c) sr[c] += br[c];  // -inf above the diagonal
          const T mx = max_of(sr, cols, row_max[r]);
          const T rescale = std::exp(row_max[r] - mx);  // 0 on the first tile
          for (int64_t c = 0; c < cols; ++c) sr[c] -= mx;
          exp_inplace(sr, cols);
          if (t == qb)  // above the diagonal: exactly zero
            for (int64_t c = r + 1; c < cols; ++c) sr[c] = 0;
          T sum = 0;
          for (int64_t c = 0; c < cols; ++c) sum += sr[c];
          row_sum[r] = row_sum[r] * rescale + sum;
          row_max[r] = mx;
          if (rescale != T(1)) {
            T* orow = o + r * dv;
            for (int64_t e = 0; e < dv; ++e) orow[e] *= rescale;
          }
        }
        gemm_nn<T>(rows, dv, cols, T(1), s.data(), B, v + j0 * dv, dv, T(1), o, dv);
      }
      T* lse = a.lse + bh * n + i0;
      for (int64_t r = 0; r < rows; ++r) {
        const T inv = T(1) / row_sum[r];
        T* orow = o + r * dv;
        for (int64_t e = 0; e < dv; ++e) orow[e] *= inv;
        lse[r] = row_max[r] + std::log(row_sum[r]);
      }
    }
  });
}

int64_t forward_extra_bytes(const Problem& p, int64_t elem_size, int threads) {
  const int64_t B = p.tile;
  const int64_t per_thread = (2 * B * B + 2 * B) * elem_size +     // s, bias, max, sum
                             (p.variant == Variant::Fox ? p.n * 8 : 0) +
                             (p.variant == Variant::Fpa ? (p.n / B + 1) * (2 * elem_size + 4) +
                                                              5 * B * (2 * elem_size + 4)
                                                        : 0);
  const int64_t lse = p.batch * p.heads * p.n * elem_size;
  return lse + per_thread * threads;
}

template void forward<float>(const Problem&, const ForwardArgs<float>&);
template void forward<double>(const Problem&, const ForwardArgs<double>&);

}  // namespace fpa::fused
