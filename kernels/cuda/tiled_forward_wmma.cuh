// The tiled forward pass on tensor cores (sm_80+), fp32 accumulation: bf16 / fp16 inputs on WMMA
// 16 x 16 x 16 fragments; fp32 inputs on TF32 tensor cores, WMMA 16 x 16 x 8 fragments of
// wmma::precision::tf32, every element rounded to TF32 (wmma::__float_to_tf32: round to nearest,
// ties away from zero, to a 10-bit mantissa) when a fragment is loaded. The same tiles, order and
// tile functions as tiled_forward.cuh; only the two products change hands:
//   S = Q K^T   4 warps, warp w computing rows [16w, 16w + 16) of the 64 x 64 logits tile into
//               shared memory (fp32);
//   row phase   one thread per query row, as the scalar kernel: scale, the bias (tile_bias.h),
//               the online softmax (tile_softmax.h); writes p_ij rounded to the input type for
//               the second product (FlashAttention's choice; the normaliser sums the fp32 p_ij;
//               with TF32, p_ij stays fp32 in shared memory, over its own logit, and is rounded
//               to TF32 by the fragment load) and rescales the row's output accumulator;
//   O += P V    warp w again on its 16 rows, the accumulator kept in shared memory (fp32), since
//               the row phase rescales it by rows and WMMA does not say which element is which row.
// The field, the gates, the running minima and the log-sum-exps stay fp32 (exact fp32 products:
// the scalar kernel, Problem::tensor_cores false).
// Shared memory layout: 16-bit tiles with rows padded by 8 elements, fp32 tiles by 4, so every
// fragment starts 32-byte aligned with a leading dimension a multiple of 16 bytes (WMMA's rules).
// Rows past the sequence are zero (the fragments read whole tiles).
#pragma once

#include "kernels/cuda/tiled_device.cuh"
#include "kernels/cuda/tiled_forward.cuh"  // the scalar kernel: the fallback

#include <type_traits>

#if !defined(FPA_CUDA_EMULATION)
#include <mma.h>
#endif

namespace fpa::cuda::tiled::detail {

namespace wmma = nvcuda::wmma;
constexpr int kWarps = kTile / 16;  // one per 16 query rows
constexpr int kWmmaThreads = 32 * kWarps;

__host__ __device__ inline int ld16(int64_t width) { return int(width) + 8; }
__host__ __device__ inline int ld32(int64_t width) { return int(width) + 4; }

// The fragments of an input type T: the type of its tiles in shared memory (Elem), of the
// fragments (Frag), their depth K and the tiles' leading dimension. bf16 / fp16: 16 x 16 x 16,
// nothing to round. fp32: TF32, 16 x 16 x 8, each element rounded to TF32 after the load (the
// tensor cores would otherwise drop the low 13 bits of the mantissa, truncating).
template <class T> struct Mma {
  using Elem = T;
  using Frag = T;
  static constexpr int K = 16;
  __host__ __device__ static int ld(int64_t width) { return ld16(width); }
  template <class F> __device__ static void round(F&) {}
};
template <> struct Mma<float> {
  using Elem = float;
  using Frag = wmma::precision::tf32;
  static constexpr int K = 8;
  __host__ __device__ static int ld(int64_t width) { return ld32(width); }
  template <class F> __device__ static void round(F& f) {
    for (int i = 0; i < f.num_elements; ++i) f.x[i] = wmma::__float_to_tf32(f.x[i]);
  }
};
// fp32 (TF32): p_ij and g_ij, fp32 like the logits and with the same leading dimension, overwrite
// the logits tile in place (each thread its own row, read before written), saving a 64 x 64 tile.
template <class T> constexpr bool kProbsOverLogits = std::is_same<T, float>::value;

// Head dimensions the tensor-core kernel takes (multiples of the fragment size).
inline bool wmma_shape(const Problem& p) { return p.d % 16 == 0 && p.dv % 16 == 0; }

template <class T> size_t forward_wmma_smem(const Problem& p) {
  const int p_tile = kProbsOverLogits<T> ? 0 : Mma<T>::ld(kTile);
  return sizeof(T) * kTile * (2 * Mma<T>::ld(p.d) + Mma<T>::ld(p.dv) + p_tile) +
         sizeof(float) * kTile * (ld32(kTile) + ld32(p.dv));
}
// Static shared memory of the WMMA kernels (field tiles, per-row arrays), with a margin (ptxas's
// figure per kernel: smem_static_bytes in results/bench/cuda_kernel_resources.csv).
constexpr size_t kWmmaStaticSmem = 8 * 1024;

// Rows [l0, l0 + len) of a (N, width) head into a tile of `rows` rows with leading dimension ld,
// rows past len zero.
template <class T>
__device__ void load_tile(const T* src, int64_t l0, int len, int64_t width, int ld, T* dst) {
  for (int64_t e = threadIdx.x; e < int64_t(kTile) * width; e += blockDim.x) {
    const int64_t r = e / width, c = e % width;
    dst[r * ld + c] = r < len ? src[(l0 + r) * width + c] : FromAcc<T>::of(0.0f);
  }
}

template <class T>
__global__ void __launch_bounds__(kWmmaThreads)
    forward_wmma_kernel(Problem p, const T* __restrict__ q, const T* __restrict__ k,
                        const T* __restrict__ v, const FieldTile<float>* __restrict__ fields,
                        const double* __restrict__ prefix, T* __restrict__ out,
                        float* __restrict__ lse) {
  using A = float;
  const int64_t n = p.n, d = p.d, dv = p.dv, bh = blockIdx.y;
  const int ti = query_tile_of_block(p), tid = threadIdx.x, warp = tid / 32, r = tid;
  const int64_t i0 = int64_t(ti) * kTile;
  const int rows = int(min(int64_t(kTile), n - i0));
  const bool row_thread = tid < kTile, active = tid < rows, fpa = is_fpa(p.mode);
  const A inf = t::t_inf(A());

  using M = Mma<T>;
  constexpr int K = M::K;
  FPA_DYNAMIC_SMEM(smem);
  T* sq = reinterpret_cast<T*>(smem);           // kTile x ld(d)
  T* sk = sq + kTile * M::ld(d);                // kTile x ld(d)
  T* sv = sk + kTile * M::ld(d);                // kTile x ld(dv)
  T* sp = sv + kTile * M::ld(dv);               // kTile x ld(kTile): p_ij in T (fp32: over ss)
  float* ss = reinterpret_cast<float*>(sp + (kProbsOverLogits<T> ? 0 : kTile * M::ld(kTile)));
  if (kProbsOverLogits<T>) sp = reinterpret_cast<T*>(ss);  // kTile x ld32(kTile): logits
  float* so = ss + kTile * ld32(kTile);         // kTile x ld32(dv): the output accumulator
  __shared__ FieldTile<A> fq, fk;

  const FieldTile<A>* fh = fields ? fields + bh * tiles_of(p) : nullptr;
  const double* F = prefix ? prefix + bh * n : nullptr;
  load_tile(q + bh * n * d, i0, rows, d, M::ld(d), sq);
  for (int e = tid; e < kTile * ld32(dv); e += blockDim.x) so[e] = 0.0f;
  if (fpa) load_field(fh, ti, fq);

  t::OnlineSoftmaxRow<A> row;
  t::Between<A> between = t::empty_between<A>();
  for (int tj = ti; tj >= 0; --tj) {
    const int64_t j0 = int64_t(tj) * kTile;
    const int cols = int(min(int64_t(kTile), n - j0));
    const bool diagonal = tj == ti;
    __syncthreads();  // the previous tile's readers are done
    load_tile(k + bh * n * d, j0, cols, d, M::ld(d), sk);
    load_tile(v + bh * n * dv, j0, cols, dv, M::ld(dv), sv);
    if (fpa) load_field(fh, tj, fk);  // synchronises
    __syncthreads();

    // S = Q K^T, rows of this warp.
    for (int cb = 0; cb < kTile / 16; ++cb) {
      wmma::fragment<wmma::accumulator, 16, 16, K, float> acc;
      wmma::fill_fragment(acc, 0.0f);
      for (int kk = 0; kk < d / K; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, K, typename M::Frag, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, K, typename M::Frag, wmma::col_major> b;
        wmma::load_matrix_sync(a, sq + warp * 16 * M::ld(d) + kk * K, M::ld(d));
        wmma::load_matrix_sync(b, sk + cb * 16 * M::ld(d) + kk * K, M::ld(d));
        M::round(a);
        M::round(b);
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(ss + warp * 16 * ld32(kTile) + cb * 16, acc, ld32(kTile),
                              wmma::mem_row_major);
    }
    __syncthreads();

    if (row_thread) {  // one query row per thread
      float* sr = ss + r * ld32(kTile);
      T* pr = sp + r * M::ld(kTile);  // fp32: the same row as sr
      if (active) {
        A diag_bias[kTile];
        if (fpa && diagonal) t::fpa_diagonal_row_bias(fk.phi, r, cols, diag_bias);
        for (int c = 0; c < cols; ++c) {
          if (diagonal && c > r) { sr[c] = -inf; continue; }
          sr[c] = A(p.scale) * sr[c] + bias_at(p, diagonal, F, i0, j0, r, c, fq, fk, between,
                                               fpa && diagonal ? diag_bias[c] : A(0));
        }
        A tile_max = -inf;
        for (int c = 0; c < cols; ++c) tile_max = t::t_max(tile_max, sr[c]);
        const A factor = row.rescale(tile_max);
        for (int64_t e = 0; e < dv; ++e) so[r * ld32(dv) + e] *= factor;
        A tile_sum = A(0);
        for (int c = 0; c < cols; ++c) {
          const A pc = row.prob(sr[c]);
          tile_sum += pc;
          pr[c] = FromAcc<T>::of(pc);
        }
        row.sum += tile_sum;
      }
      for (int c = active ? cols : 0; c < kTile; ++c) pr[c] = FromAcc<T>::of(0.0f);
    }
    __syncthreads();

    // O += P V, rows of this warp.
    for (int vb = 0; vb < dv / 16; ++vb) {
      float* o = so + warp * 16 * ld32(dv) + vb * 16;
      wmma::fragment<wmma::accumulator, 16, 16, K, float> acc;
      wmma::load_matrix_sync(acc, o, ld32(dv), wmma::mem_row_major);
      for (int kk = 0; kk < kTile / K; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, K, typename M::Frag, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, K, typename M::Frag, wmma::row_major> b;
        wmma::load_matrix_sync(a, sp + warp * 16 * M::ld(kTile) + kk * K, M::ld(kTile));
        wmma::load_matrix_sync(b, sv + kk * K * M::ld(dv) + vb * 16, M::ld(dv));
        M::round(a);
        M::round(b);
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(o, acc, ld32(dv), wmma::mem_row_major);
    }
    // C for the next key tile (tj - 1) covers tiles tj .. ti - 1.
    if (fpa && !diagonal)
      between = t::extend_earlier(between, fk.suffix[0], fk.suffix_soft[0], fk.inv_tau);
  }
  __syncthreads();
  if (!active) return;
  T* o = out + (bh * n + i0 + r) * dv;
  for (int64_t e = 0; e < dv; ++e) o[e] = FromAcc<T>::of(so[r * ld32(dv) + e] / row.sum);
  lse[bh * n + i0 + r] = row.lse();
}

// For bf16, fp16 (and fp32 on TF32) inputs whose head dimensions are multiples of 16
// (wmma_shape). Where the device cannot give the shared memory, the scalar kernel runs instead.
template <class T>
int launch_forward_wmma(const Problem& p, const T* q, const T* k, const T* v, const float* gate,
                        T* out, float* lse, void* workspace, cudaStream_t s) {
  const size_t smem = forward_wmma_smem<T>(p);
  if (smem + kWmmaStaticSmem > FPA_MAX_DYNAMIC_SMEM())
    return launch_forward<T>(p, q, k, v, gate, out, lse, workspace, s);
  GateInput<float> g;
  if (int e = prepare_gate(p, gate, workspace, s, g)) return e;
  if (int e = FPA_ALLOW_SMEM(forward_wmma_kernel<T>, smem)) return e;
  const dim3 grid(unsigned(tiles_of(p)), unsigned(p.batch * p.heads));
  FPA_LAUNCH(forward_wmma_kernel<T>, grid, kWmmaThreads, smem, s, p, q, k, v, g.fields, g.prefix,
             out, lse);
  return FPA_LAST_STATUS();
}

}  // namespace fpa::cuda::tiled::detail
