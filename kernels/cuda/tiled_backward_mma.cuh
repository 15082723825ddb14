// The backward's two tile passes on registers (FlashAttention-2's layout), bf16 / fp16 at
// D = Dv in {64, 128}: mma.sync m16n8k16 (mma_fragments.cuh), fp32 accumulation, in place of
// tiled_backward_wmma.cuh's passes; the same blocks, tile order, tile functions and gate
// reductions, with the logits, dP, p_ij, g_ij and the gradient accumulators in registers.
//   dQ pass     4 warps of 16 query rows; per key tile S = Q K^T and dP = dO V^T (8 m16n8 tiles
//               each), then per element the bias, p = exp(s - lse), g = p (dp - delta) and the
//               row's gate reductions (each lane its own partial sums, added over the quad of
//               lanes sharing the row at the end; what C's later part wins, each lane's own
//               over a level's tile pairs, then over the warp by shuffles and over the 4 warps
//               in order when the level ends: WarpOrderSum); dQ += dS K from g's registers.
//   dK/dV pass  4 warps of 16 keys, the transposed products: S^T = K Q^T and dP^T = V dO^T, so
//               that p and g sit where dV += P^T dO and dK += dS^T Q want them as A fragments;
//               each key's gate reductions as the rows' above (C's earlier part in place of
//               its later one). FPA's diagonal tile, whose gate gradient is a scan along each
//               query row, writes g into shared memory, where one thread per row runs
//               tile_gate_grad.h's scan as the other kernels do.
// The sums are the same as the WMMA passes', in another order (per-lane partials, then the quad):
// the results agree to fp32 rounding, and a run repeats bit for bit (no atomics; every order is
// fixed). The Q, dO, K and V fragments are read from shared memory at each use (keeping them in
// registers as well would spill at D = 128), by ldmatrix (mma_fragments.cuh); the streamed tiles
// (K and V in the dQ pass, Q and dO in the dK/dV pass) are double-buffered with cp.async, and
// so are FPA's field tiles that go with them (load_field_async).
#pragma once

#include "kernels/cuda/mma_fragments.cuh"
#include "kernels/cuda/tiled_backward_wmma.cuh"  // the fallback passes
#include "kernels/cuda/tiled_forward_mma.cuh"    // mma_shape, kMmaThreads

namespace fpa::cuda::tiled::detail {

// The two products of a backward pass on the warp's 16 rows of a and a2 (row-major kTile x D
// tiles): c = a b^T and c2 = a2 b2^T over N n-tiles of 8 rows of b and b2 from row n0 on
// (dQ pass: S = Q K^T and dP = dO V^T; dK/dV pass: S^T = K Q^T and dP^T = V dO^T).
template <class T, int D, int N>
__device__ inline void two_products_abt(const T* a, const T* b, const T* a2, const T* b2, int warp,
                                        int lane, int n0, float (&c)[N][4], float (&c2)[N][4]) {
  constexpr int LD = D + 8;
  FPA_UNROLL
  for (int nt = 0; nt < N; ++nt)
    FPA_UNROLL
    for (int e = 0; e < 4; ++e) c[nt][e] = c2[nt][e] = 0.0f;
  FPA_UNROLL
  for (int kk = 0; kk < D / 16; ++kk) {
    uint32_t fa[4], fa2[4];
    load_a(a, LD, warp, lane, kk * 16, fa);
    load_a(a2, LD, warp, lane, kk * 16, fa2);
    FPA_UNROLL
    for (int nt = 0; nt < N; nt += 2) {
      uint32_t f0[2], f1[2];
      load_b_rows2(b, LD, lane, n0 + nt * 8, kk * 16, f0, f1);
      mma_m16n8k16<T>(c[nt], fa, f0);
      mma_m16n8k16<T>(c[nt + 1], fa, f1);
      load_b_rows2(b2, LD, lane, n0 + nt * 8, kk * 16, f0, f1);
      mma_m16n8k16<T>(c2[nt], fa2, f0);
      mma_m16n8k16<T>(c2[nt + 1], fa2, f1);
    }
  }
}

// What an off-diagonal score's bias and exact route take from its key alone (key c of the key
// tile fk, C = between), worked out once per key for every query that meets it in a backward
// pass: FPA's key side min(S_J(j), C), phi_j and whether C wins against S_J(j) (tile_bias.h);
// FoX's column part.
template <class A> struct KeyParts {
  A suffix, side, phi, fox_col;
  bool between_wins;
};
template <class A>
__device__ inline KeyParts<A> key_parts(const FieldTile<A>& fk, int c, const t::Between<A>& between,
                                        A fox_col) {
  // Loads and selects, no branch (outside FPA nothing reads these values: the bias selects FoX's
  // part), so that the score loops around it stay branch-free.
  const A suffix = fk.suffix[c].value;
  return KeyParts<A>{suffix, t::fpa_key_side(suffix, between.min.value), fk.phi[c], fox_col,
                     between.min.value <= suffix};
}
// b_ij off the diagonal from its key's parts and its query's (FPA: P_I(i); FoX: the row part):
// tile_bias.h's fpa_bias_off_diagonal and FoX's row plus column part; 0 for softmax.
template <class A>
__device__ inline A off_diagonal_bias(bool fpa, const KeyParts<A>& key, A q_prefix, A fox_row) {
  return fpa ? t::fpa_bias_of_key_side(key.side, q_prefix, key.phi) : fox_row + key.fox_col;
}
// The part of the path an off-diagonal score's minimum comes from, in exact mode.
template <class A> __device__ inline t::PathPart exact_winner(const KeyParts<A>& key, A q_prefix) {
  return t::path_part_of_key_side(key.side, key.between_wins, q_prefix);
}

// block_sum for the register kernels (BetweenParts): each warp's sum by shuffles, then the
// warps in order, through buf (kMmaWarps entries of shared memory).
struct WarpOrderSum {
  float* buf;
  __device__ float operator()(float x) const {
    const float w = warp_sum(x);
    if (threadIdx.x % 32 == 0) buf[threadIdx.x / 32] = w;
    __syncthreads();
    float sum = 0.0f;
    if (threadIdx.x == 0)
      for (int y = 0; y < kMmaWarps; ++y) sum += buf[y];
    __syncthreads();  // buf is free again
    return sum;
  }
};

template <class T, int D>
__global__ void __launch_bounds__(kMmaThreads)
    dq_mma_kernel(Problem p, const T* __restrict__ q, const T* __restrict__ k,
                  const T* __restrict__ v, const FieldTile<float>* __restrict__ fields,
                  const double* __restrict__ prefix, const float* __restrict__ lse,
                  const float* __restrict__ delta, const T* __restrict__ dout,
                  T* __restrict__ dq, float* __restrict__ gate_q,
                  t::BetweenSlot<float>* __restrict__ slots) {
  using A = float;
  constexpr int LD = D + 8, LB = kTile + 4;  // ld16(D), ld32(kTile)
  const int64_t n = p.n, bh = blockIdx.y;
  const int ti = query_tile_of_block(p), tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int q4 = lane % 4;
  const int tiles = int(tiles_of(p));
  const int64_t i0 = int64_t(ti) * kTile;
  const int rows = int(min(int64_t(kTile), n - i0));
  const bool fpa = is_fpa(p.mode), fox = p.mode == Mode::Fox;
  const bool soft = p.mode == Mode::FpaStraightThrough;
  const A scale = A(p.scale);
  const int row_of[2] = {warp * 16 + lane / 4, warp * 16 + lane / 4 + 8};
  const bool active[2] = {row_of[0] < rows, row_of[1] < rows};

  FPA_DYNAMIC_SMEM(smem);
  T* sq = reinterpret_cast<T*>(smem);  // kTile x LD each: Q, dO, then K and V double-buffered
  T* sdo = sq + kTile * LD;
  auto sk_buf = [&](int b) { return sq + (2 + b) * kTile * LD; };
  auto sv_buf = [&](int b) { return sq + (4 + b) * kTile * LD; };
  float* sb = reinterpret_cast<float*>(sq + 6 * kTile * LD);  // kTile x LB: FPA's diagonal bias
  __shared__ A s_level_warp[kMmaWarps], s_row_part[kTile], s_gate[kTile], fox_col[kTile];
  __shared__ FieldTile<A> fq, fk_buf[2];  // the key tiles' fields double-buffered as K and V
  __shared__ double fox_f[2][kTile];      // FoX: the key tiles' F, double-buffered as K and V

  const FieldTile<A>* fh = fields ? fields + bh * tiles_of(p) : nullptr;
  const double* F = prefix ? prefix + bh * n : nullptr;
  BetweenParts<A, t::BetweenSide::Later> parts(
      slots_of(slots, bh, t::BetweenSide::Later, ti, tiles), tiles);  // C = tj + 1 .. ti - 1
  const WarpOrderSum block_sum{s_level_warp};
  load_tile_16b<T, D>(q + bh * n * D, i0, rows, sq);
  load_tile_16b<T, D>(dout + bh * n * D, i0, rows, sdo);
  if (fpa) load_field(fh, ti, fq);  // synchronises
  A lse_r[2], delta_r[2], fox_row[2] = {A(0), A(0)}, q_prefix[2] = {A(0), A(0)};
  FPA_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int64_t i = bh * n + i0 + row_of[h];
    lse_r[h] = active[h] ? lse[i] : A(0);
    delta_r[h] = active[h] ? delta[i] : A(0);
    if (fox && active[h]) fox_row[h] = t::fox_row_part<A>(F, i0, i0 + row_of[h]);
    if (fpa && active[h]) q_prefix[h] = fq.prefix[row_of[h]].value;  // P_I(i), off the diagonal
  }
  const A lse_log2[2] = {lse_r[0] * kLog2e, lse_r[1] * kLog2e};  // exp_shifted's shifts
  float dqa[D / 8][4];
  FPA_UNROLL
  for (int dt = 0; dt < D / 8; ++dt)
    FPA_UNROLL
    for (int e = 0; e < 4; ++e) dqa[dt][e] = 0.0f;
  A row_all[2] = {A(0), A(0)}, row_part[2] = {A(0), A(0)};

  auto fetch = [&](int tj, int b) {  // K, V (and FPA's field, or FoX's F) of key tile tj
    load_tiles_async<T, D>(k + bh * n * D, v + bh * n * D, n, tj, sk_buf(b), sv_buf(b));
    if (fpa) load_field_async(fh, tj, &fk_buf[b]);
    if (fox) load_values_async(F, n, tj, fox_f[b]);
  };
  const double F_i0 = fox ? F[i0] : 0.0;
  fetch(ti, 0);
  cp_async_commit();
  for (int tj = ti, it = 0; tj >= 0; --tj, ++it) {
    const int64_t j0 = int64_t(tj) * kTile;
    const int cols = int(min(int64_t(kTile), n - j0));
    const bool diagonal = tj == ti;
    const T* sk = sk_buf(it % 2);
    const T* sv = sv_buf(it % 2);
    const FieldTile<A>& fk = fk_buf[it % 2];
    const t::Between<A> between = fpa ? parts.whole(fq.inv_tau) : t::empty_between<A>();
    if (tj > 0) fetch(tj - 1, (it + 1) % 2);  // the other buffer, free since the last barrier
    cp_async_commit();
    cp_async_wait<1>();  // this tile's copies
    __syncthreads();
    if (fpa && diagonal && tid < rows) t::fpa_diagonal_row_bias(fk.phi, tid, cols, sb + tid * LB);
    if (fox && !diagonal && tid < cols)
      fox_col[tid] = t::fox_col_part_of<A>(F_i0, fox_f[it % 2][tid]);
    __syncthreads();

    float s[kKeyTiles8][4], dp[kKeyTiles8][4];
    two_products_abt<T, D>(sq, sk, sdo, sv, warp, lane, 0, s, dp);  // S = Q K^T, dP = dO V^T

    A pair_row = A(0);
    if (diagonal) {  // p, g and the row's sums per score, under the causal mask
      FPA_UNROLL
      for (int nt = 0; nt < kKeyTiles8; ++nt)
        FPA_UNROLL
        for (int e = 0; e < 4; ++e) {
          const int h = e / 2, r = row_of[h], c = nt * 8 + 2 * q4 + e % 2;
          A g = A(0);
          if (active[h] && c < cols && c <= r) {
            const A b = diagonal_bias<A>(p.mode, F, i0 + r, j0 + c, sb, LB, r, c);
            g = t::logit_grad(exp_shifted(scale * s[nt][e] + b, lse_log2[h]), A(dp[nt][e]),
                              delta_r[h]);
            row_all[h] += g;
          }
          s[nt][e] = g;
        }
    } else {
      // The tiles before the diagonal (whole, no mask; as in the register forward): per key, once
      // for both of a lane's rows, its parts of the bias and of the exact route (key_parts); per
      // score what is left. The same operations, in the same order, as before the split.
      FPA_UNROLL
      for (int nt = 0; nt < kKeyTiles8; ++nt) {
        KeyParts<A> key[2];
        FPA_UNROLL
        for (int cc = 0; cc < 2; ++cc) {
          const int c = nt * 8 + 2 * q4 + cc;
          key[cc] = key_parts(fk, c, between, fox ? fox_col[c] : A(0));
        }
        FPA_UNROLL
        for (int e = 0; e < 4; ++e) {
          const int h = e / 2, cc = e % 2, c = nt * 8 + 2 * q4 + cc;
          A g = A(0);
          if (active[h]) {
            const A b = off_diagonal_bias(fpa, key[cc], q_prefix[h], fox_row[h]);
            g = t::logit_grad(exp_shifted(scale * s[nt][e] + b, lse_log2[h]), A(dp[nt][e]),
                              delta_r[h]);
            row_all[h] += g;
            if (fpa && soft)
              t::route_score(t::PathPart::QueryTile, true, g, key[cc].suffix, fk.suffix_soft[c],
                             between, q_prefix[h], fq.prefix_soft[row_of[h]], fk.inv_tau,
                             row_part[h], pair_row);
            else if (fpa)
              t::route_exact(t::PathPart::QueryTile, exact_winner(key[cc], q_prefix[h]), g,
                             row_part[h], pair_row);
          }
          s[nt][e] = g;
        }
      }
    }
    if (fpa && !diagonal) parts.end_pair(pair_row, soft, fq, fk, ti, tj, rows, tiles, block_sum);

    FPA_UNROLL
    for (int kk = 0; kk < kTile / 16; ++kk) {  // dQ += dS K
      uint32_t ga[4];
      pack_a<T>(s, kk, ga);
      FPA_UNROLL
      for (int dt = 0; dt < D / 8; dt += 2) {
        uint32_t b0[2], b1[2];
        load_b_cols2(sk, LD, lane, kk * 16, dt * 8, b0, b1);
        mma_m16n8k16<T>(dqa[dt], ga, b0);
        mma_m16n8k16<T>(dqa[dt + 1], ga, b1);
      }
    }
    __syncthreads();  // this tile's readers are done: its buffer is free
  }
  if (fpa) parts.end(block_sum);

  FPA_UNROLL
  for (int h = 0; h < 2; ++h) {
    if (!active[h]) continue;
    T* dst = dq + (bh * n + i0 + row_of[h]) * D + 2 * q4;
    FPA_UNROLL
    for (int dt = 0; dt < D / 8; ++dt) {
      dst[dt * 8] = FromAcc<T>::of(scale * dqa[dt][2 * h]);
      dst[dt * 8 + 1] = FromAcc<T>::of(scale * dqa[dt][2 * h + 1]);
    }
  }
  if (p.mode == Mode::Softmax) return;
  A all_sum[2], part_sum[2];
  FPA_UNROLL
  for (int h = 0; h < 2; ++h) {
    all_sum[h] = quad_sum(row_all[h]);
    part_sum[h] = quad_sum(row_part[h]);
  }
  if (fox) {
    FPA_UNROLL
    for (int h = 0; h < 2; ++h)
      if (active[h] && q4 == 0) gate_q[bh * n + i0 + row_of[h]] = all_sum[h];
    return;
  }
  if (q4 == 0)
    FPA_UNROLL
    for (int h = 0; h < 2; ++h) {
      s_row_part[row_of[h]] = part_sum[h];
      s_gate[row_of[h]] = A(0);
    }
  write_query_tile_gate(p, fq, i0, rows, tid, s_row_part, s_gate, gate_q + bh * n);
}

template <class T, int D>
__global__ void __launch_bounds__(kMmaThreads)
    dkdv_mma_kernel(Problem p, const T* __restrict__ q, const T* __restrict__ k,
                    const T* __restrict__ v, const FieldTile<float>* __restrict__ fields,
                    const double* __restrict__ prefix, const float* __restrict__ lse,
                    const float* __restrict__ delta, const T* __restrict__ dout,
                    T* __restrict__ dk, T* __restrict__ dv, float* __restrict__ gate_kv,
                    t::BetweenSlot<float>* __restrict__ slots) {
  using A = float;
  constexpr int LD = D + 8, LB = kTile + 4;
  const int64_t n = p.n, bh = blockIdx.y;
  const int tj = blockIdx.x, tid = threadIdx.x, warp = tid / 32, lane = tid % 32, q4 = lane % 4;
  const int tiles = int(tiles_of(p));
  const int64_t j0 = int64_t(tj) * kTile;
  const int cols = int(min(int64_t(kTile), n - j0));
  const bool fpa = is_fpa(p.mode), fox = p.mode == Mode::Fox;
  const bool soft = p.mode == Mode::FpaStraightThrough;
  const A scale = A(p.scale);
  const int key_of[2] = {warp * 16 + lane / 4, warp * 16 + lane / 4 + 8};  // this lane's keys
  const bool active[2] = {key_of[0] < cols, key_of[1] < cols};

  FPA_DYNAMIC_SMEM(smem);
  T* sk = reinterpret_cast<T*>(smem);  // kTile x LD each: K, V, then Q and dO double-buffered
  T* sv = sk + kTile * LD;
  auto sq_buf = [&](int b) { return sk + (2 + b) * kTile * LD; };
  auto sdo_buf = [&](int b) { return sk + (4 + b) * kTile * LD; };
  float* sb = reinterpret_cast<float*>(sk + 6 * kTile * LD);  // kTile x LB: diagonal bias, then e
  float* sg = sb + kTile * LB;                             // kTile x LB: the diagonal's g
  __shared__ A fox_row[kTile], s_col_all[kTile], s_col_part[kTile], s_gate[kTile],
      s_level_warp[kMmaWarps];
  // Double-buffered as Q and dO: the query tiles' fields (FPA), log-sum-exps, deltas, F (FoX).
  __shared__ FieldTile<A> fq_buf[2], fk;
  __shared__ A lse_buf[2][kTile], delta_buf[2][kTile];
  __shared__ double fox_f[2][kTile], fox_fk[kTile];  // FoX: F of the query tiles, of the keys

  const FieldTile<A>* fh = fields ? fields + bh * tiles_of(p) : nullptr;
  const double* F = prefix ? prefix + bh * n : nullptr;
  BetweenParts<A, t::BetweenSide::Earlier> parts(
      slots_of(slots, bh, t::BetweenSide::Earlier, tj, tiles), tiles);  // C = tj + 1 .. ti - 1
  const WarpOrderSum block_sum{s_level_warp};
  load_tile_16b<T, D>(k + bh * n * D, j0, cols, sk);
  load_tile_16b<T, D>(v + bh * n * D, j0, cols, sv);
  if (fpa) load_field(fh, tj, fk);
  float dka[D / 8][4], dva[D / 8][4];
  FPA_UNROLL
  for (int dt = 0; dt < D / 8; ++dt)
    FPA_UNROLL
    for (int e = 0; e < 4; ++e) dka[dt][e] = dva[dt][e] = 0.0f;
  A col_all[2] = {A(0), A(0)}, col_part[2] = {A(0), A(0)}, diag = A(0);  // diag: key tid's

  auto fetch = [&](int ti, int b) {  // Q, dO, lse, delta (FPA's field, FoX's F) of query tile ti
    load_tiles_async<T, D>(q + bh * n * D, dout + bh * n * D, n, ti, sq_buf(b), sdo_buf(b));
    load_values_async(lse + bh * n, n, ti, lse_buf[b]);
    load_values_async(delta + bh * n, n, ti, delta_buf[b]);
    if (fpa) load_field_async(fh, ti, &fq_buf[b]);
    if (fox) load_values_async(F, n, ti, fox_f[b]);
  };
  if (fox && tid < cols) fox_fk[tid] = F[j0 + tid];  // read after the loop's first barrier
  fetch(tj, 0);
  cp_async_commit();
  for (int ti = tj, it = 0; ti < tiles; ++ti, ++it) {
    const int64_t i0 = int64_t(ti) * kTile;
    const int rows = int(min(int64_t(kTile), n - i0));
    const bool diagonal = ti == tj;
    const T* sq = sq_buf(it % 2);
    const T* sdo = sdo_buf(it % 2);
    const FieldTile<A>& fq = fq_buf[it % 2];
    const A* s_lse = lse_buf[it % 2];
    const A* s_delta = delta_buf[it % 2];
    const t::Between<A> between = fpa ? parts.whole(fk.inv_tau) : t::empty_between<A>();
    A pair_col = A(0);  // this lane's part of what C wins in this pair
    if (ti + 1 < tiles) fetch(ti + 1, (it + 1) % 2);  // the other buffer, free since the barrier
    cp_async_commit();
    cp_async_wait<1>();  // this tile's copies
    __syncthreads();
    const double* f_rows = fox_f[it % 2];  // F[i0 ..]
    if (fox && !diagonal && tid < rows)
      fox_row[tid] = t::fox_row_part_of<A>(f_rows[tid], f_rows[0]);
    if (fpa && diagonal && tid < rows) t::fpa_diagonal_row_bias(fk.phi, tid, cols, sb + tid * LB);
    __syncthreads();
    A fox_col[2] = {A(0), A(0)};
    if (fox && !diagonal)
      FPA_UNROLL
      for (int h = 0; h < 2; ++h)
        if (active[h]) fox_col[h] = t::fox_col_part_of<A>(f_rows[0], fox_fk[key_of[h]]);
    // Off the diagonal, per key of this lane, once per query tile: its parts of the bias and of
    // the exact route.
    KeyParts<A> key[2];
    FPA_UNROLL
    for (int h = 0; h < 2; ++h)
      key[h] = key_parts(fk, key_of[h], between, fox_col[h]);

    // S^T = K Q^T and dP^T = V dO^T: rows are this warp's keys, columns the tile's queries, taken
    // 32 queries at a time (halving the logits' registers, which at D = 128 made it spill).
#if defined(__CUDACC__)
#pragma unroll 1
#endif
    for (int half = 0; half < 2; ++half) {
      constexpr int kHalf = kKeyTiles8 / 2;
      float st[kHalf][4], dpt[kHalf][4];
      two_products_abt<T, D>(sk, sq, sv, sdo, warp, lane, half * kHalf * 8, st, dpt);

      // Per score: p, g and the key's gate sums; compiled once for the diagonal tile and once
      // for the others (no causal mask; the last query tile, off the diagonal, can be short).
      auto score_grads = [&](auto on_diagonal) {
        constexpr bool kDiagonal = decltype(on_diagonal)::value;
        FPA_UNROLL
        for (int nt = 0; nt < kHalf; ++nt)
          FPA_UNROLL
          for (int e = 0; e < 4; ++e) {
            const int h = e / 2, c = key_of[h], r = (half * kHalf + nt) * 8 + 2 * q4 + e % 2;
            A pr = A(0), g = A(0);
            if (active[h] && r < rows && (!kDiagonal || c <= r)) {
              const A q_prefix = fpa ? fq.prefix[r].value : A(0);
              const A b = kDiagonal
                              ? diagonal_bias<A>(p.mode, F, i0 + r, j0 + c, sb, LB, r, c)
                              : off_diagonal_bias(fpa, key[h], q_prefix, fox ? fox_row[r] : A(0));
              pr = exp_fast(scale * st[nt][e] + b - s_lse[r]);
              g = t::logit_grad(pr, A(dpt[nt][e]), s_delta[r]);
              col_all[h] += g;
              if (fpa && !kDiagonal && soft)
                t::route_score(t::PathPart::KeyTile, true, g, key[h].suffix, fk.suffix_soft[c],
                               between, q_prefix, fq.prefix_soft[r], fk.inv_tau, col_part[h],
                               pair_col);
              else if (fpa && !kDiagonal)
                t::route_exact(t::PathPart::KeyTile, exact_winner(key[h], q_prefix), g,
                               col_part[h], pair_col);
            }
            if (fpa && kDiagonal) sg[r * LB + c] = g;
            st[nt][e] = pr;
            dpt[nt][e] = g;
          }
      };
      if (diagonal)
        score_grads(std::true_type{});
      else
        score_grads(std::false_type{});

      // dV += P^T dO, dK += dS^T Q over this half's 32 queries.
      FPA_UNROLL
      for (int kh = 0; kh < kHalf / 2; ++kh) {
        uint32_t pa[4], ga[4];
        pack_a<T>(st, kh, pa);
        pack_a<T>(dpt, kh, ga);
        const int q0 = (half * kHalf / 2 + kh) * 16;
        FPA_UNROLL
        for (int dt = 0; dt < D / 8; dt += 2) {
          uint32_t b0[2], b1[2];
          load_b_cols2(sdo, LD, lane, q0, dt * 8, b0, b1);
          mma_m16n8k16<T>(dva[dt], pa, b0);
          mma_m16n8k16<T>(dva[dt + 1], pa, b1);
          load_b_cols2(sq, LD, lane, q0, dt * 8, b0, b1);
          mma_m16n8k16<T>(dka[dt], ga, b0);
          mma_m16n8k16<T>(dka[dt + 1], ga, b1);
        }
      }
    }
    if (fpa && diagonal) {  // one query row per thread, then key sums; the bias's rows become e
      __syncthreads();
      diag += diagonal_key_sum(fk, soft, tid, rows, cols, sg, LB, sb, LB);
    }
    if (fpa && !diagonal) parts.end_pair(pair_col, soft, fq, fk, ti, tj, rows, tiles, block_sum);
    __syncthreads();  // this tile's readers are done: its buffer is free
  }
  if (fpa) parts.end(block_sum);

  FPA_UNROLL
  for (int h = 0; h < 2; ++h) {
    if (!active[h]) continue;
    const int64_t j = bh * n + j0 + key_of[h];
    FPA_UNROLL
    for (int dt = 0; dt < D / 8; ++dt) {
      const int e = dt * 8 + 2 * q4;
      dk[j * D + e] = FromAcc<T>::of(scale * dka[dt][2 * h]);
      dk[j * D + e + 1] = FromAcc<T>::of(scale * dka[dt][2 * h + 1]);
      dv[j * D + e] = FromAcc<T>::of(dva[dt][2 * h]);
      dv[j * D + e + 1] = FromAcc<T>::of(dva[dt][2 * h + 1]);
    }
  }
  if (p.mode == Mode::Softmax) return;
  A all_sum[2], part_sum[2];
  FPA_UNROLL
  for (int h = 0; h < 2; ++h) {
    all_sum[h] = quad_sum(col_all[h]);
    part_sum[h] = quad_sum(col_part[h]);
  }
  if (q4 == 0)
    FPA_UNROLL
    for (int h = 0; h < 2; ++h) {
      s_col_all[key_of[h]] = all_sum[h];
      s_col_part[key_of[h]] = part_sum[h];
    }
  __syncthreads();
  if (tid < cols) s_gate[tid] = diag - s_col_all[tid];
  write_key_tile_gate(p, fk, j0, cols, tid, s_col_part, s_gate, gate_kv + bh * n);
}

// launch_backward<T, MmaPasses>: the register passes for bf16 / fp16 at D = Dv in {64, 128}
// (mma_shape) with 16-byte aligned inputs; otherwise, or where the device cannot give a pass's
// shared memory, the WMMA passes (which fall back to the scalar ones in turn).
struct MmaPasses {
  // Six kTile x D tiles each (two of them double-buffered) and the diagonal's fp32 tiles.
  template <class T> static size_t dkdv_smem(const Problem& p) {
    return sizeof(T) * kTile * 6 * ld16(p.d) + sizeof(float) * kTile * 2 * ld32(kTile);
  }
  template <class T> static size_t dq_smem(const Problem& p) {
    return sizeof(T) * kTile * 6 * ld16(p.d) + sizeof(float) * kTile * ld32(kTile);
  }

  template <class T, int D>
  static int run_at(const Problem& p, const T* q, const T* k, const T* v,
                    const FieldTile<float>* fields, const double* prefix, const float* lse,
                    const float* delta, const T* dout, T* dq, T* dk, T* dv, float* gate_kv,
                    float* gate_q, t::BetweenSlot<float>* slots, cudaStream_t s) {
    const dim3 grid(unsigned(tiles_of(p)), unsigned(p.batch * p.heads));
    auto dkdv = dkdv_mma_kernel<T, D>;
    auto dqk = dq_mma_kernel<T, D>;
    const size_t smem_kv = dkdv_smem<T>(p), smem_q = dq_smem<T>(p);
    if (int e = FPA_ALLOW_SMEM(dkdv, smem_kv)) return e;
    FPA_LAUNCH(dkdv, grid, kMmaThreads, smem_kv, s, p, q, k, v, fields, prefix, lse, delta, dout,
               dk, dv, gate_kv, slots);
    if (int e = FPA_LAST_STATUS()) return e;
    if (int e = FPA_ALLOW_SMEM(dqk, smem_q)) return e;
    FPA_LAUNCH(dqk, grid, kMmaThreads, smem_q, s, p, q, k, v, fields, prefix, lse, delta, dout, dq,
               gate_q, slots);
    return FPA_LAST_STATUS();
  }

  template <class T>
  static int run(const Problem& p, const T* q, const T* k, const T* v,
                 const FieldTile<float>* fields, const double* prefix, const float* lse,
                 const float* delta, const T* dout, T* dq, T* dk, T* dv, float* gate_kv,
                 float* gate_q, t::BetweenSlot<float>* slots, cudaStream_t s) {
    const size_t max_smem = FPA_MAX_DYNAMIC_SMEM();
    const bool fits = dkdv_smem<T>(p) + kMmaStaticSmem <= max_smem &&
                      dq_smem<T>(p) + kMmaStaticSmem <= max_smem;
    if constexpr (std::is_same<T, __nv_bfloat16>::value || std::is_same<T, __half>::value) {
      if (mma_shape<T>(p) && fits && aligned_16b(q, k, v, dout))
        return p.d == 64 ? run_at<T, 64>(p, q, k, v, fields, prefix, lse, delta, dout, dq, dk, dv,
                                         gate_kv, gate_q, slots, s)
                         : run_at<T, 128>(p, q, k, v, fields, prefix, lse, delta, dout, dq, dk, dv,
                                          gate_kv, gate_q, slots, s);
    }
    return WmmaPasses::run<T>(p, q, k, v, fields, prefix, lse, delta, dout, dq, dk, dv, gate_kv,
                              gate_q, slots, s);
  }
};

}  // namespace fpa::cuda::tiled::detail
