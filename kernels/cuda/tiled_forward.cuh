// The tiled forward pass: one block per (query tile I, batch * head), one thread per query row.
// Key tiles J = I (diagonal), I - 1, ..., 0, as tests/tile_simulation.h's forward_block: the
// logits of a tile pair with tile_bias.h's bias, then tile_softmax.h's online softmax per row.
// FPA carries P_I (the query tile's prefix minima, loaded once), C (extended by tile J after it
// is used, so that it covers the tiles strictly between the next J and I) and each key tile's
// suffix minima.
#pragma once

#include "kernels/cuda/tiled_device.cuh"

namespace fpa::cuda::tiled::detail {

template <class T>
__global__ void __launch_bounds__(kTile)
    forward_kernel(Problem p, const T* __restrict__ q, const T* __restrict__ k,
                   const T* __restrict__ v, const FieldTile<Acc<T>>* __restrict__ fields,
                   const double* __restrict__ prefix, T* __restrict__ out,
                   Acc<T>* __restrict__ lse) {
  using A = Acc<T>;
  const int64_t n = p.n, d = p.d, dv = p.dv, bh = blockIdx.y;
  const int ti = query_tile_of_block(p), r = threadIdx.x;
  const int64_t i0 = int64_t(ti) * kTile;
  const int rows = int(min(int64_t(kTile), n - i0));
  const bool active = r < rows, fpa = is_fpa(p.mode);
  const A inf = t::t_inf(A());

  FPA_DYNAMIC_SMEM(smem);
  A* sq = reinterpret_cast<A*>(smem);          // kTile x padded(d)
  A* sk = sq + kTile * padded(d);              // kTile x padded(d)
  A* sv = sk + kTile * padded(d);              // kTile x padded(dv)
  A* ss = sv + kTile * padded(dv);             // kTile x padded(kTile): logits, one row each
  __shared__ FieldTile<A> fq, fk;

  const FieldTile<A>* fh = fields ? fields + bh * tiles_of(p) : nullptr;
  const double* F = prefix ? prefix + bh * n : nullptr;
  load_rows(q + bh * n * d, i0, rows, d, sq);
  if (fpa) load_field(fh, ti, fq);

  t::OnlineSoftmaxRow<A> row;
  A acc[kMaxHeadDim];
  for (int64_t e = 0; e < dv; ++e) acc[e] = A(0);
  t::Between<A> between = t::empty_between<A>();

  for (int tj = ti; tj >= 0; --tj) {
    const int64_t j0 = int64_t(tj) * kTile;
    const int cols = int(min(int64_t(kTile), n - j0));
    const bool diagonal = tj == ti;
    __syncthreads();  // the previous tile's readers are done
    load_rows(k + bh * n * d, j0, cols, d, sk);
    load_rows(v + bh * n * dv, j0, cols, dv, sv);
    if (fpa) load_field(fh, tj, fk);  // synchronises
    __syncthreads();
    if (active) {
      A* sr = ss + r * padded(kTile);
      if (fpa && diagonal) t::fpa_diagonal_row_bias(fk.phi, r, cols, sr);
      for (int c = 0; c < cols; ++c) {
        if (diagonal && c > r) { sr[c] = -inf; continue; }
        const A b = bias_at(p, diagonal, F, i0, j0, r, c, fq, fk, between,
                            fpa && diagonal ? sr[c] : A(0));
        sr[c] = A(p.scale) * dot(sq + r * padded(d), sk + c * padded(d), d) + b;
      }
      A tile_max = -inf;
      for (int c = 0; c < cols; ++c) tile_max = t::t_max(tile_max, sr[c]);
      const A factor = row.rescale(tile_max);
      for (int64_t e = 0; e < dv; ++e) acc[e] *= factor;
      A tile_sum = A(0);
      for (int c = 0; c < cols; ++c) {
        const A pr = row.prob(sr[c]);
        tile_sum += pr;
        for (int64_t e = 0; e < dv; ++e) acc[e] += pr * sv[c * padded(dv) + e];
      }
      row.sum += tile_sum;
    }
    // C for the next key tile (tj - 1) covers tiles tj .. ti - 1.
    if (fpa && !diagonal)
      between = t::extend_earlier(between, fk.suffix[0], fk.suffix_soft[0], fk.inv_tau);
  }
  if (!active) return;
  T* o = out + (bh * n + i0 + r) * dv;
  for (int64_t e = 0; e < dv; ++e) o[e] = FromAcc<T>::of(acc[e] / row.sum);
  lse[bh * n + i0 + r] = row.lse();
}

template <class T>
int launch_forward(const Problem& p, const T* q, const T* k, const T* v, const Acc<T>* gate,
                   T* out, Acc<T>* lse, void* workspace, cudaStream_t s) {
  using A = Acc<T>;
  GateInput<A> g;
  if (int e = prepare_gate(p, gate, workspace, s, g)) return e;
  const size_t smem = sizeof(A) * kTile * (2 * padded(p.d) + padded(p.dv) + padded(kTile));
  if (int e = FPA_ALLOW_SMEM(forward_kernel<T>, smem)) return e;
  const dim3 grid(unsigned(tiles_of(p)), unsigned(p.batch * p.heads));
  FPA_LAUNCH(forward_kernel<T>, grid, kTile, smem, s, p, q, k, v, g.fields, g.prefix, out, lse);
  return FPA_LAST_STATUS();
}

}  // namespace fpa::cuda::tiled::detail
