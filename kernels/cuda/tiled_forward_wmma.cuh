// The tiled forward pass on tensor cores (WMMA, 16 x 16 x 16, bf16 / fp16 inputs, fp32
// accumulation; sm_80+). The same tiles, order and tile functions as tiled_forward.cuh; only the
// two products change hands:
//   S = Q K^T   4 warps, warp w computing rows [16w, 16w + 16) of the 64 x 64 logits tile into
//               shared memory (fp32);
//   row phase   one thread per query row, as the scalar kernel: scale, the bias (tile_bias.h),
//               the online softmax (tile_softmax.h); writes p_ij rounded to the input type for
//               the second product (FlashAttention's choice; the normaliser sums the fp32 p_ij)
//               and rescales the row's output accumulator;
//   O += P V    warp w again on its 16 rows, the accumulator kept in shared memory (fp32), since
//               the row phase rescales it by rows and WMMA does not say which element is which row.
// Shared memory layout: 16-bit tiles with rows padded by 8 elements, fp32 tiles by 4, so every
// fragment starts 32-byte aligned with a leading dimension a multiple of 16 bytes (WMMA's rules).
// Rows past the sequence are zero (the fragments read whole tiles).
#pragma once

#include "kernels/cuda/tiled_device.cuh"

#if !defined(FPA_CUDA_EMULATION)
#include <mma.h>
#endif

namespace fpa::cuda::tiled::detail {

namespace wmma = nvcuda::wmma;
constexpr int kWarps = kTile / 16;  // one per 16 query rows
constexpr int kWmmaThreads = 32 * kWarps;

__host__ __device__ inline int ld16(int64_t width) { return int(width) + 8; }
__host__ __device__ inline int ld32(int64_t width) { return int(width) + 4; }

// Head dimensions the tensor-core kernel takes (multiples of the fragment size).
inline bool wmma_shape(const Problem& p) { return p.d % 16 == 0 && p.dv % 16 == 0; }

template <class T> size_t forward_wmma_smem(const Problem& p) {
  return sizeof(T) * kTile * (2 * ld16(p.d) + ld16(p.dv) + ld16(kTile)) +
         sizeof(float) * kTile * (ld32(kTile) + ld32(p.dv));
}

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
                        const T* __restrict__ v, const float* __restrict__ gate,
                        const double* __restrict__ prefix, T* __restrict__ out,
                        float* __restrict__ lse) {
  using A = float;
  const int64_t n = p.n, d = p.d, dv = p.dv, bh = blockIdx.y;
  const int ti = blockIdx.x, tid = threadIdx.x, warp = tid / 32, r = tid;
  const int64_t i0 = int64_t(ti) * kTile;
  const int rows = int(min(int64_t(kTile), n - i0));
  const bool row_thread = tid < kTile, active = tid < rows, fpa = is_fpa(p.mode);
  const A inf = t::t_inf(A());

  FPA_DYNAMIC_SMEM(smem);
  T* sq = reinterpret_cast<T*>(smem);           // kTile x ld16(d)
  T* sk = sq + kTile * ld16(d);                 // kTile x ld16(d)
  T* sv = sk + kTile * ld16(d);                 // kTile x ld16(dv)
  T* sp = sv + kTile * ld16(dv);                // kTile x ld16(kTile): p_ij in T
  float* ss = reinterpret_cast<float*>(sp + kTile * ld16(kTile));  // kTile x ld32(kTile): logits
  float* so = ss + kTile * ld32(kTile);         // kTile x ld32(dv): the output accumulator
  __shared__ FieldTile<A> fq, fk;

  const A* gh = gate ? gate + bh * n : nullptr;
  const double* F = prefix ? prefix + bh * n : nullptr;
  load_tile(q + bh * n * d, i0, rows, d, ld16(d), sq);
  for (int e = tid; e < kTile * ld32(dv); e += blockDim.x) so[e] = 0.0f;
  if (fpa) load_field(p, gh, ti, fq);

  t::OnlineSoftmaxRow<A> row;
  t::Between<A> between = t::empty_between<A>();
  for (int tj = ti; tj >= 0; --tj) {
    const int64_t j0 = int64_t(tj) * kTile;
    const int cols = int(min(int64_t(kTile), n - j0));
    const bool diagonal = tj == ti;
    __syncthreads();  // the previous tile's readers are done
    load_tile(k + bh * n * d, j0, cols, d, ld16(d), sk);
    load_tile(v + bh * n * dv, j0, cols, dv, ld16(dv), sv);
    if (fpa) load_field(p, gh, tj, fk);  // synchronises
    __syncthreads();

    // S = Q K^T, rows of this warp.
    for (int cb = 0; cb < kTile / 16; ++cb) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
      for (int kk = 0; kk < d / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
        wmma::load_matrix_sync(a, sq + warp * 16 * ld16(d) + kk * 16, ld16(d));
        wmma::load_matrix_sync(b, sk + cb * 16 * ld16(d) + kk * 16, ld16(d));
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(ss + warp * 16 * ld32(kTile) + cb * 16, acc, ld32(kTile),
                              wmma::mem_row_major);
    }
    __syncthreads();

    if (row_thread) {  // one query row per thread
      float* sr = ss + r * ld32(kTile);
      T* pr = sp + r * ld16(kTile);
      if (active) {
        A diag_bias[kTile];
        if (fpa && diagonal) t::fpa_diagonal_row_bias(fk.phi, r, cols, diag_bias);
        for (int c = 0; c < cols; ++c) {
          if (diagonal && c > r) { sr[c] = -inf; continue; }
          A b = A(0);
          if (p.mode == Mode::Fox)
            b = diagonal ? t::fox_diagonal_bias<A>(F, i0 + r, j0 + c)
                         : t::fox_row_part<A>(F, i0, i0 + r) + t::fox_col_part<A>(F, i0, j0 + c);
          else if (fpa)
            b = diagonal ? diag_bias[c]
                         : t::fpa_bias_off_diagonal(fk.suffix[c].value, between.min.value,
                                                    fq.prefix[r].value, fk.phi[c]);
          sr[c] = A(p.scale) * sr[c] + b;
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
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, o, ld32(dv), wmma::mem_row_major);
      for (int kk = 0; kk < kTile / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
        wmma::load_matrix_sync(a, sp + warp * 16 * ld16(kTile) + kk * 16, ld16(kTile));
        wmma::load_matrix_sync(b, sv + kk * 16 * ld16(dv) + vb * 16, ld16(dv));
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

// For bf16 and fp16 inputs whose head dimensions are multiples of 16 (wmma_shape).
template <class T>
int launch_forward_wmma(const Problem& p, const T* q, const T* k, const T* v, const float* gate,
                        T* out, float* lse, void* workspace, cudaStream_t s) {
  double* prefix = nullptr;
  if (p.mode == Mode::Fox) {
    prefix = static_cast<double*>(workspace);
    const int64_t heads = p.batch * p.heads;
    FPA_LAUNCH(fox_prefix_kernel<float>, unsigned((heads + 127) / 128), 128, 0, s, gate, prefix,
               heads, p.n);
    if (int e = FPA_LAST_STATUS()) return e;
  }
  const size_t smem = forward_wmma_smem<T>(p);
  if (int e = FPA_ALLOW_SMEM(forward_wmma_kernel<T>, smem)) return e;
  const dim3 grid(unsigned(tiles_of(p)), unsigned(p.batch * p.heads));
  FPA_LAUNCH(forward_wmma_kernel<T>, grid, kWmmaThreads, smem, s, p, q, k, v, gate, prefix, out,
             lse);
  return FPA_LAST_STATUS();
}

}  // namespace fpa::cuda::tiled::detail
