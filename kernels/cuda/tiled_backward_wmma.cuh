// The backward's two tile passes on tensor cores (fp32 accumulation; bf16 / fp16 inputs on WMMA
// 16 x 16 x 16, fp32 inputs on TF32 WMMA 16 x 16 x 8 with every fragment element rounded to TF32
// when loaded: tiled_forward_wmma.cuh's Mma), in place of tiled_backward.cuh's scalar
// dkdv_kernel and dq_kernel; the same
// blocks, tile order and tile functions. Per tile pair, 4 warps compute S = Q K^T and
// dP = dO V^T (16 query rows each) into shared memory (fp32); then threads apply, element by
// element in the scalar kernels' order, the bias, p_ij = exp(s_ij - lse_i) and
// g_ij = p_ij (dp_ij - delta_i), with every gate reduction of the scalar kernels (fp32 g); p and g
// rounded to the input type feed the products dV += P^T dO, dK += dS^T Q (dK/dV pass: 16 keys
// per warp) and dQ += dS K (dQ pass: 16 queries per warp), whose accumulators stay in shared
// memory. With TF32, g stays fp32 over the logits tile (kProbsOverLogits) and p in its own fp32
// tile, both rounded to TF32 by the fragment loads. Layout and alignment as tiled_forward_wmma.cuh.
#pragma once

#include "kernels/cuda/tiled_backward.cuh"
#include "kernels/cuda/tiled_forward_wmma.cuh"

#include <type_traits>

namespace fpa::cuda::tiled::detail {

// out (16-row block `warp` of a kTile x kTile fp32 tile, leading dimension ld32(kTile)) =
// a (kTile x width, rows of the warp) times b^T (kTile x width): the logits or dP of a tile pair.
template <class T>
__device__ void wmma_abt(const T* a, const T* b, int64_t width, int warp, float* out) {
  using M = Mma<T>;
  constexpr int K = M::K;
  for (int cb = 0; cb < kTile / 16; ++cb) {
    wmma::fragment<wmma::accumulator, 16, 16, K, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int kk = 0; kk < width / K; ++kk) {
      wmma::fragment<wmma::matrix_a, 16, 16, K, typename M::Frag, wmma::row_major> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, K, typename M::Frag, wmma::col_major> fb;
      wmma::load_matrix_sync(fa, a + warp * 16 * M::ld(width) + kk * K, M::ld(width));
      wmma::load_matrix_sync(fb, b + cb * 16 * M::ld(width) + kk * K, M::ld(width));
      M::round(fa);
      M::round(fb);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(out + warp * 16 * ld32(kTile) + cb * 16, acc, ld32(kTile),
                            wmma::mem_row_major);
  }
}

// acc (kTile x width fp32, rows of the warp, leading dimension ld32(width)) +=
// op(x) y with x a kTile x kTile tile (ld(kTile)), op(x) = x^T when transpose, and y
// kTile x width (ld(width)).
template <class T, bool transpose>
__device__ void wmma_accumulate(const T* x, const T* y, int64_t width, int warp, float* acc_tile) {
  using M = Mma<T>;
  constexpr int K = M::K;
  using LayoutA = typename std::conditional<transpose, wmma::col_major, wmma::row_major>::type;
  for (int db = 0; db < width / 16; ++db) {
    float* o = acc_tile + warp * 16 * ld32(width) + db * 16;
    wmma::fragment<wmma::accumulator, 16, 16, K, float> acc;
    wmma::load_matrix_sync(acc, o, ld32(width), wmma::mem_row_major);
    for (int kk = 0; kk < kTile / K; ++kk) {
      wmma::fragment<wmma::matrix_a, 16, 16, K, typename M::Frag, LayoutA> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, K, typename M::Frag, wmma::row_major> fb;
      // x^T's block (warp, kk) is x's block (kk, warp), read column-major.
      const T* xa = transpose ? x + kk * K * M::ld(kTile) + warp * 16
                              : x + warp * 16 * M::ld(kTile) + kk * K;
      wmma::load_matrix_sync(fa, xa, M::ld(kTile));
      wmma::load_matrix_sync(fb, y + kk * K * M::ld(width) + db * 16, M::ld(width));
      M::round(fa);
      M::round(fb);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(o, acc, ld32(width), wmma::mem_row_major);
  }
}

// The logits of a tile pair, in place: ss[r][c] = scale * ss[r][c] + b_ij (row r per thread,
// tile_bias.h), -inf where masked, past the sequence, or past the key tile.
template <class A>
__device__ void logits_in_place(const Problem& p, bool diagonal, const double* F, int64_t i0,
                                int64_t j0, int rows, int cols, const FieldTile<A>& fq,
                                const FieldTile<A>& fk, const t::Between<A>& between, float* ss) {
  const int r = threadIdx.x;
  if (r >= kTile) return;
  float* sr = ss + r * ld32(kTile);
  const A inf = t::t_inf(A());
  A diag_bias[kTile];
  if (is_fpa(p.mode) && diagonal && r < rows) t::fpa_diagonal_row_bias(fk.phi, r, cols, diag_bias);
  for (int c = 0; c < kTile; ++c) {
    if (r >= rows || c >= cols || (diagonal && c > r)) { sr[c] = -inf; continue; }
    sr[c] = A(p.scale) * sr[c] +
            bias_at(p, diagonal, F, i0, j0, r, c, fq, fk, between,
                    is_fpa(p.mode) && diagonal ? diag_bias[c] : A(0));
  }
}

template <class T>
__global__ void __launch_bounds__(kWmmaThreads)
    dkdv_wmma_kernel(Problem p, const T* __restrict__ q, const T* __restrict__ k,
                     const T* __restrict__ v, const FieldTile<float>* __restrict__ fields,
                     const double* __restrict__ prefix, const float* __restrict__ lse,
                     const float* __restrict__ delta, const T* __restrict__ dout,
                     T* __restrict__ dk, T* __restrict__ dv, float* __restrict__ gate_kv,
                     t::BetweenSlot<float>* __restrict__ slots) {
  using A = float;
  const int64_t n = p.n, d = p.d, dvd = p.dv, bh = blockIdx.y;
  const int tj = blockIdx.x, tid = threadIdx.x, warp = tid / 32, c = tid;
  const int tiles = int(tiles_of(p));
  const int64_t j0 = int64_t(tj) * kTile;
  const int cols = int(min(int64_t(kTile), n - j0));
  const bool col_thread = tid < kTile, active = tid < cols, fpa = is_fpa(p.mode);
  const bool soft = p.mode == Mode::FpaStraightThrough;

  using M = Mma<T>;
  const int ldt = M::ld(kTile);
  FPA_DYNAMIC_SMEM(smem);
  T* sk = reinterpret_cast<T*>(smem);     // kTile x ld(d)
  T* sv = sk + kTile * M::ld(d);          // kTile x ld(dv)
  T* sq = sv + kTile * M::ld(dvd);        // kTile x ld(d)
  T* sdo = sq + kTile * M::ld(d);         // kTile x ld(dv)
  T* sp = sdo + kTile * M::ld(dvd);       // kTile x ld(kTile): p in T
  T* sds = sp + kTile * ldt;              // kTile x ld(kTile): g in T (fp32: ss itself)
  float* ss = reinterpret_cast<float*>(sds + (kProbsOverLogits<T> ? 0 : kTile * ldt));
  if (kProbsOverLogits<T>) sds = reinterpret_cast<T*>(ss);  // logits, then g (fp32)
  float* sdp = ss + kTile * ld32(kTile);  // dP, then the diagonal's per-row buffers
  float* sdk = sdp + kTile * ld32(kTile);  // kTile x ld32(d): dK of the key tile
  float* sdv = sdk + kTile * ld32(d);      // kTile x ld32(dv): dV
  __shared__ A s_lse[kTile], s_delta[kTile], s_col_part[kTile], s_gate[kTile], s_level[kTile];
  __shared__ FieldTile<A> fq, fk;

  const FieldTile<A>* fh = fields ? fields + bh * tiles_of(p) : nullptr;
  const double* F = prefix ? prefix + bh * n : nullptr;
  BetweenParts<A, t::BetweenSide::Earlier> parts(
      slots_of(slots, bh, t::BetweenSide::Earlier, tj, tiles), tiles);  // C = tj + 1 .. ti - 1
  const ThreadOrderSum<A> block_sum{s_level, cols};
  load_tile(k + bh * n * d, j0, cols, d, M::ld(d), sk);
  load_tile(v + bh * n * dvd, j0, cols, dvd, M::ld(dvd), sv);
  for (int e = tid; e < kTile * ld32(d); e += blockDim.x) sdk[e] = 0.0f;
  for (int e = tid; e < kTile * ld32(dvd); e += blockDim.x) sdv[e] = 0.0f;
  if (fpa) load_field(fh, tj, fk);
  A col_all = A(0), col_part = A(0), diag = A(0);

  for (int ti = tj; ti < tiles; ++ti) {
    const int64_t i0 = int64_t(ti) * kTile;
    const int rows = int(min(int64_t(kTile), n - i0));
    const bool diagonal = ti == tj;
    const t::Between<A> between = fpa ? parts.whole(fk.inv_tau) : t::empty_between<A>();
    A pair_col = A(0);  // what C wins in this pair
    __syncthreads();
    load_tile(q + bh * n * d, i0, rows, d, M::ld(d), sq);
    load_tile(dout + bh * n * dvd, i0, rows, dvd, M::ld(dvd), sdo);
    if (tid < kTile) {
      s_lse[tid] = tid < rows ? lse[bh * n + i0 + tid] : A(0);
      s_delta[tid] = tid < rows ? delta[bh * n + i0 + tid] : A(0);
    }
    if (fpa) load_field(fh, ti, fq);  // synchronises
    __syncthreads();
    wmma_abt(sq, sk, d, warp, ss);     // S = Q K^T
    wmma_abt(sdo, sv, dvd, warp, sdp);  // dP = dO V^T
    __syncthreads();
    logits_in_place(p, diagonal, F, i0, j0, rows, cols, fq, fk, between, ss);
    __syncthreads();
    if (col_thread) {  // one key per thread, queries in order
      for (int r = 0; r < kTile; ++r) {
        float* src = ss + r * ld32(kTile) + c;
        if (!active || r >= rows) {
          sp[r * ldt + c] = FromAcc<T>::of(0.0f);
          sds[r * ldt + c] = FromAcc<T>::of(0.0f);
          *src = 0.0f;
          continue;
        }
        const A pr = t::t_exp(*src - s_lse[r]);
        const A g = t::logit_grad(pr, A(sdp[r * ld32(kTile) + c]), s_delta[r]);
        sp[r * ldt + c] = FromAcc<T>::of(pr);
        sds[r * ldt + c] = FromAcc<T>::of(g);  // fp32: *src itself
        *src = g;
        col_all += g;
        if (diagonal || !fpa) continue;
        t::route_score(t::PathPart::KeyTile, soft, g, fk.suffix[c].value, fk.suffix_soft[c],
                       between, fq.prefix[r].value, fq.prefix_soft[r], fk.inv_tau, col_part,
                       pair_col);
      }
    }
    __syncthreads();
    if (fpa && diagonal)  // one row per thread into its own buffer (sdp), then column sums
      diag += diagonal_key_sum(fk, soft, tid, rows, cols, ss, ld32(kTile), sdp, ld32(kTile));
    wmma_accumulate<T, true>(sp, sdo, dvd, warp, sdv);  // dV += P^T dO
    wmma_accumulate<T, true>(sds, sq, d, warp, sdk);    // dK += dS^T Q
    if (fpa && !diagonal) parts.end_pair(pair_col, soft, fq, fk, ti, tj, rows, tiles, block_sum);
  }
  if (fpa) parts.end(block_sum);
  __syncthreads();
  if (active) {
    for (int64_t e = 0; e < d; ++e)
      dk[(bh * n + j0 + c) * d + e] = FromAcc<T>::of(A(p.scale) * sdk[c * ld32(d) + e]);
    for (int64_t e = 0; e < dvd; ++e)
      dv[(bh * n + j0 + c) * dvd + e] = FromAcc<T>::of(sdv[c * ld32(dvd) + e]);
    s_gate[c] = diag - col_all;
    s_col_part[c] = col_part;
  }
  if (p.mode == Mode::Softmax) return;
  write_key_tile_gate(p, fk, j0, cols, tid, s_col_part, s_gate, gate_kv + bh * n);
}

template <class T>
__global__ void __launch_bounds__(kWmmaThreads)
    dq_wmma_kernel(Problem p, const T* __restrict__ q, const T* __restrict__ k,
                   const T* __restrict__ v, const FieldTile<float>* __restrict__ fields,
                   const double* __restrict__ prefix, const float* __restrict__ lse,
                   const float* __restrict__ delta, const T* __restrict__ dout,
                   T* __restrict__ dq, float* __restrict__ gate_q,
                   t::BetweenSlot<float>* __restrict__ slots) {
  using A = float;
  const int64_t n = p.n, d = p.d, dvd = p.dv, bh = blockIdx.y;
  const int ti = query_tile_of_block(p), tid = threadIdx.x, warp = tid / 32, r = tid;
  const int tiles = int(tiles_of(p));
  const int64_t i0 = int64_t(ti) * kTile;
  const int rows = int(min(int64_t(kTile), n - i0));
  const bool row_thread = tid < kTile, active = tid < rows, fpa = is_fpa(p.mode);
  const bool soft = p.mode == Mode::FpaStraightThrough;

  using M = Mma<T>;
  const int ldt = M::ld(kTile);
  FPA_DYNAMIC_SMEM(smem);
  T* sq = reinterpret_cast<T*>(smem);     // kTile x ld(d)
  T* sdo = sq + kTile * M::ld(d);         // kTile x ld(dv)
  T* sk = sdo + kTile * M::ld(dvd);       // kTile x ld(d)
  T* sv = sk + kTile * M::ld(d);          // kTile x ld(dv)
  T* sds = sv + kTile * M::ld(dvd);       // kTile x ld(kTile): g in T (fp32: ss itself)
  float* ss = reinterpret_cast<float*>(sds + (kProbsOverLogits<T> ? 0 : kTile * ldt));
  if (kProbsOverLogits<T>) sds = reinterpret_cast<T*>(ss);  // logits (fp32: then g)
  float* sdp = ss + kTile * ld32(kTile);  // dP
  float* sdq = sdp + kTile * ld32(kTile);  // kTile x ld32(d): dQ of the query tile
  __shared__ A s_level[kTile], s_row_part[kTile], s_gate[kTile];
  __shared__ FieldTile<A> fq, fk;

  const FieldTile<A>* fh = fields ? fields + bh * tiles_of(p) : nullptr;
  const double* F = prefix ? prefix + bh * n : nullptr;
  BetweenParts<A, t::BetweenSide::Later> parts(
      slots_of(slots, bh, t::BetweenSide::Later, ti, tiles), tiles);  // C = tj + 1 .. ti - 1
  const ThreadOrderSum<A> block_sum{s_level, rows};
  load_tile(q + bh * n * d, i0, rows, d, M::ld(d), sq);
  load_tile(dout + bh * n * dvd, i0, rows, dvd, M::ld(dvd), sdo);
  for (int e = tid; e < kTile * ld32(d); e += blockDim.x) sdq[e] = 0.0f;
  if (fpa) load_field(fh, ti, fq);
  const A lse_r = active ? lse[bh * n + i0 + r] : A(0);
  const A delta_r = active ? delta[bh * n + i0 + r] : A(0);
  A row_all = A(0), row_part = A(0);

  for (int tj = ti; tj >= 0; --tj) {
    const int64_t j0 = int64_t(tj) * kTile;
    const int cols = int(min(int64_t(kTile), n - j0));
    const bool diagonal = tj == ti;
    const t::Between<A> between = fpa ? parts.whole(fq.inv_tau) : t::empty_between<A>();
    __syncthreads();
    load_tile(k + bh * n * d, j0, cols, d, M::ld(d), sk);
    load_tile(v + bh * n * dvd, j0, cols, dvd, M::ld(dvd), sv);
    if (fpa) load_field(fh, tj, fk);  // synchronises
    __syncthreads();
    wmma_abt(sq, sk, d, warp, ss);     // S = Q K^T
    wmma_abt(sdo, sv, dvd, warp, sdp);  // dP = dO V^T
    __syncthreads();
    logits_in_place(p, diagonal, F, i0, j0, rows, cols, fq, fk, between, ss);
    A pair_row = A(0);
    if (row_thread) {  // one query per thread, keys in order
      for (int c = 0; c < kTile; ++c) {
        if (!active || c >= cols) {
          sds[r * ldt + c] = FromAcc<T>::of(0.0f);
          continue;
        }
        const A pr = t::t_exp(A(ss[r * ld32(kTile) + c]) - lse_r);
        const A g = t::logit_grad(pr, A(sdp[r * ld32(kTile) + c]), delta_r);
        sds[r * ldt + c] = FromAcc<T>::of(g);  // fp32: over the logit just read
        row_all += g;
        if (diagonal || !fpa) continue;
        t::route_score(t::PathPart::QueryTile, soft, g, fk.suffix[c].value, fk.suffix_soft[c],
                       between, fq.prefix[r].value, fq.prefix_soft[r], fk.inv_tau, row_part,
                       pair_row);
      }
    }
    if (fpa && !diagonal) parts.end_pair(pair_row, soft, fq, fk, ti, tj, rows, tiles, block_sum);
    __syncthreads();
    wmma_accumulate<T, false>(sds, sk, d, warp, sdq);  // dQ += dS K
  }
  if (fpa) parts.end(block_sum);
  __syncthreads();
  if (active)
    for (int64_t e = 0; e < d; ++e)
      dq[(bh * n + i0 + r) * d + e] = FromAcc<T>::of(A(p.scale) * sdq[r * ld32(d) + e]);
  if (p.mode == Mode::Softmax) return;
  if (p.mode == Mode::Fox) {
    if (active) gate_q[bh * n + i0 + r] = row_all;
    return;
  }
  if (row_thread) {
    s_row_part[r] = row_part;
    s_gate[r] = A(0);
  }
  write_query_tile_gate(p, fq, i0, rows, tid, s_row_part, s_gate, gate_q + bh * n);
}

// launch_backward<T, WmmaPasses> runs these in place of the scalar passes (bf16 / fp16 inputs,
// and fp32 inputs on TF32; D and Dv multiples of 16). A pass whose shared memory the device
// cannot give (dK/dV at D = 128 on sm_80) runs on the scalar kernel instead: the passes are
// independent.
struct WmmaPasses {
  template <class T> static size_t dkdv_smem(const Problem& p) {
    using M = Mma<T>;
    const int g_tile = kProbsOverLogits<T> ? 0 : M::ld(kTile);
    const size_t tiles_t =
        size_t(kTile) * (2 * M::ld(p.d) + 2 * M::ld(p.dv) + M::ld(kTile) + g_tile);
    return sizeof(T) * tiles_t +
           sizeof(float) * kTile * (2 * ld32(kTile) + ld32(p.d) + ld32(p.dv));
  }
  template <class T> static size_t dq_smem(const Problem& p) {
    using M = Mma<T>;
    const int g_tile = kProbsOverLogits<T> ? 0 : M::ld(kTile);
    return sizeof(T) * size_t(kTile) * (2 * M::ld(p.d) + 2 * M::ld(p.dv) + g_tile) +
           sizeof(float) * kTile * (2 * ld32(kTile) + ld32(p.d));
  }
  // Static shared memory of the kernels (field tiles, per-row arrays), with a margin.
  static constexpr size_t kStaticSmem = kWmmaStaticSmem;

  template <class T>
  static int run(const Problem& p, const T* q, const T* k, const T* v,
                 const FieldTile<float>* fields, const double* prefix, const float* lse,
                 const float* delta, const T* dout, T* dq, T* dk, T* dv, float* gate_kv,
                 float* gate_q, t::BetweenSlot<float>* slots, cudaStream_t s) {
    const unsigned tiles = unsigned(tiles_of(p));
    const dim3 grid(tiles, unsigned(p.batch * p.heads));
    const size_t max_smem = FPA_MAX_DYNAMIC_SMEM();
    const size_t smem_kv = dkdv_smem<T>(p), smem_q = dq_smem<T>(p);
    if (smem_kv + kStaticSmem <= max_smem) {
      if (int e = FPA_ALLOW_SMEM(dkdv_wmma_kernel<T>, smem_kv)) return e;
      FPA_LAUNCH(dkdv_wmma_kernel<T>, grid, kWmmaThreads, smem_kv, s, p, q, k, v, fields, prefix,
                 lse, delta, dout, dk, dv, gate_kv, slots);
    } else {
      const size_t smem = sizeof(float) * kTile * (padded(p.d) + padded(p.dv) + 2 * padded(kTile));
      if (int e = FPA_ALLOW_SMEM(dkdv_kernel<T>, smem)) return e;
      FPA_LAUNCH(dkdv_kernel<T>, grid, kTile, smem, s, p, q, k, v, fields, prefix, lse, delta, dout,
                 dk, dv, gate_kv, slots);
    }
    if (int e = FPA_LAST_STATUS()) return e;
    if (smem_q + kStaticSmem <= max_smem) {
      if (int e = FPA_ALLOW_SMEM(dq_wmma_kernel<T>, smem_q)) return e;
      FPA_LAUNCH(dq_wmma_kernel<T>, grid, kWmmaThreads, smem_q, s, p, q, k, v, fields, prefix, lse,
                 delta, dout, dq, gate_q, slots);
    } else {
      const size_t smem = sizeof(float) * kTile * (padded(p.d) + padded(p.dv));
      if (int e = FPA_ALLOW_SMEM(dq_kernel<T>, smem)) return e;
      FPA_LAUNCH(dq_kernel<T>, grid, kTile, smem, s, p, q, k, v, fields, prefix, lse, delta, dout,
                 dq, gate_q, slots);
    }
    return FPA_LAST_STATUS();
  }
};

}  // namespace fpa::cuda::tiled::detail
