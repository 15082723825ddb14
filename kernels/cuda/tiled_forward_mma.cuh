// The tiled forward pass on registers (FlashAttention-2's layout), bf16 / fp16 inputs at head
// dimensions 64 and 128 (D = Dv, a template parameter so that every fragment array has a size
// the compiler knows and stays in registers): mma.sync m16n8k16 (mma_fragments.cuh), fp32
// accumulation. The same tiles, tile order and tile functions as tiled_forward.cuh and
// tiled_forward_wmma.cuh; what changes is where the numbers live:
//   4 warps, warp w owning query rows [16w, 16w + 16) of the 64-row query tile; its Q fragments
//   are loaded into registers once. Per key tile (64 keys, K and V in shared memory):
//   S = Q K^T   8 m16n8 accumulator tiles per warp, in registers; each lane holds 16 logits of
//               two rows (g and g + 8);
//   bias        per logit, in registers: the scale, then FoX's or FPA's bias from per-row parts
//               (registers), per-key parts (shared memory: the field tile's scans, FoX's column
//               part) and the block-uniform between-minimum C; the diagonal tile's FPA bias is
//               the one quadratic piece (a running minimum per row), written once per query tile
//               into shared memory by one thread per row with tile_bias.h's function;
//   softmax     online, per row: the row maximum over the quad of lanes sharing it (two
//               shuffles); each lane keeps its own partial sum of exp(s - max), rescaled with
//               the others', summed over the quad at the end;
//   O += P V    P packed to the input type straight from the S registers into A fragments (no
//               shared memory round trip), V's fragments from shared memory; O (D / 8 tiles of
//               4 floats per lane) stays in registers, rescaled per row.
// The field, the gates, the running minima and the log-sum-exps stay fp32, as in the other
// kernels; p_ij is rounded to the input type for the product while the normaliser sums fp32 p_ij
// (FlashAttention's choice). Fragments come from shared memory by ldmatrix (V's transposed);
// K and V are double-buffered: the next key tile's copy (cp.async) runs under this one's products,
// FPA's field tile (field_tiles_kernel's scans) with them. Left for tuning on a GPU: wider query
// tiles.
#pragma once

#include "kernels/cuda/mma_fragments.cuh"
#include "kernels/cuda/tiled_forward_wmma.cuh"  // ld16, load_tile, the fallback

namespace fpa::cuda::tiled::detail {

constexpr int kMmaWarps = kTile / 16;
constexpr int kMmaThreads = 32 * kMmaWarps;
constexpr int kKeyTiles8 = kTile / 8;  // m16n8 tiles across a key tile
// Static shared memory of the register kernels, with a margin (the largest is the dK/dV pass's:
// three field tiles, and per query tile double-buffered log-sum-exps, deltas and FoX's F; ptxas's
// figure per kernel: smem_static_bytes in results/bench/cuda_kernel_resources.csv).
constexpr size_t kMmaStaticSmem = 12 * 1024;

// The register kernel's shapes: bf16 / fp16, D = Dv in {64, 128}.
template <class T> bool mma_shape(const Problem& p) {
  const bool half = std::is_same<T, __nv_bfloat16>::value || std::is_same<T, __half>::value;
  return half && p.d == p.dv && (p.d == 64 || p.d == 128);
}

// The register kernels read q, k, v and dO in 16-byte chunks (load_tile_16b): a tensor that
// starts elsewhere (a view at an odd offset) takes the WMMA kernels instead.
inline bool aligned_16b(const void* a, const void* b, const void* c, const void* d = nullptr) {
  auto off = [](const void* x) { return reinterpret_cast<uintptr_t>(x) % 16; };
  return off(a) == 0 && off(b) == 0 && off(c) == 0 && off(d) == 0;
}

// Q, two buffers each of K and V (the next key tile lands while this one is used), the diagonal
// tile's FPA bias.
template <class T> size_t forward_mma_smem(const Problem& p) {
  return sizeof(T) * kTile * 5 * ld16(p.d) + sizeof(float) * kTile * ld32(kTile);
}

// b_ij of a score on the diagonal tile in the register kernels (forward and both backward
// passes): FoX's F_i - F_j from the doubles, FPA's from the diagonal bias tile (diag_bias: row r,
// leading dimension ld); 0 for softmax.
template <class A>
__device__ inline A diagonal_bias(Mode mode, const double* F, int64_t i, int64_t j,
                                  const float* diag_bias, int ld, int r, int c) {
  if (mode == Mode::Fox) return t::fox_diagonal_bias<A>(F, i, j);
  return is_fpa(mode) ? diag_bias[r * ld + c] : A(0);
}

template <class T, int D>
__global__ void __launch_bounds__(kMmaThreads)
    forward_mma_kernel(Problem p, const T* __restrict__ q, const T* __restrict__ k,
                       const T* __restrict__ v, const FieldTile<float>* __restrict__ fields,
                       const double* __restrict__ prefix, T* __restrict__ out,
                       float* __restrict__ lse) {
  using A = float;
  constexpr int LD = D + 8;  // ld16(D)
  const int64_t n = p.n, bh = blockIdx.y;
  const int ti = query_tile_of_block(p), tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, q4 = lane % 4;
  const int64_t i0 = int64_t(ti) * kTile;
  const int rows = int(min(int64_t(kTile), n - i0));
  const bool fpa = is_fpa(p.mode), fox = p.mode == Mode::Fox;
  const A inf = t::t_inf(A()), scale = A(p.scale);
  const int row_of[2] = {warp * 16 + g, warp * 16 + g + 8};  // this lane's two rows
  const bool active[2] = {row_of[0] < rows, row_of[1] < rows};

  FPA_DYNAMIC_SMEM(smem);
  T* sq = reinterpret_cast<T*>(smem);  // kTile x LD
  // Buffer b of K at sq + (1 + b) kTile LD, of V at sq + (3 + b) kTile LD (kTile x LD each;
  // arithmetic, not an array of pointers, which would sit in local memory).
  auto sk_buf = [&](int b) { return sq + (1 + b) * kTile * LD; };
  auto sv_buf = [&](int b) { return sq + (3 + b) * kTile * LD; };
  float* sb = reinterpret_cast<float*>(sq + 5 * kTile * LD);  // kTile x ld32(kTile): diagonal bias
  __shared__ FieldTile<A> fq, fk_buf[2];  // the key tiles' fields double-buffered as K and V
  __shared__ A fox_col[kTile];
  __shared__ double fox_f[2][kTile];  // FoX: the key tiles' F, double-buffered as K and V

  const FieldTile<A>* fh = fields ? fields + bh * tiles_of(p) : nullptr;
  const double* F = prefix ? prefix + bh * n : nullptr;
  load_tile_16b<T, D>(q + bh * n * D, i0, rows, sq);
  if (fpa) load_field(fh, ti, fq);  // synchronises
  __syncthreads();

  uint32_t qa[D / 16][4];
  FPA_UNROLL
  for (int kk = 0; kk < D / 16; ++kk) load_a(sq, LD, warp, lane, kk * 16, qa[kk]);
  // The rows' parts of the bias off the diagonal: FoX's, and FPA's prefix min P_I(i).
  A fox_row[2] = {A(0), A(0)}, q_prefix[2] = {A(0), A(0)};
  FPA_UNROLL
  for (int h = 0; h < 2; ++h) {
    if (fox && active[h]) fox_row[h] = t::fox_row_part<A>(F, i0, i0 + row_of[h]);
    if (fpa && active[h]) q_prefix[h] = fq.prefix[row_of[h]].value;
  }

  float o[D / 8][4];
  FPA_UNROLL
  for (int vt = 0; vt < D / 8; ++vt)
    FPA_UNROLL
    for (int e = 0; e < 4; ++e) o[vt][e] = 0.0f;
  t::OnlineSoftmaxRow<A> row[2];  // sum: this lane's share of the row's
  t::Between<A> between = t::empty_between<A>();

  // K and V (and FPA's field, or FoX's F) of key tile tj, asynchronously into buffer b
  // (cp.async, mma_fragments.cuh).
  auto fetch = [&](int tj, int b) {
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
    // The next tile's copies into the other buffer, which every thread finished reading at the
    // barrier that closed the previous iteration; then wait for this tile's (all groups but the
    // newest: a group is committed every iteration, empty on the last).
    if (tj > 0) fetch(tj - 1, (it + 1) % 2);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    if (fpa && diagonal && tid < rows)
      t::fpa_diagonal_row_bias(fk.phi, tid, cols, sb + tid * ld32(kTile));
    if (fox && !diagonal && tid < cols)
      fox_col[tid] = t::fox_col_part_of<A>(F_i0, fox_f[it % 2][tid]);
    __syncthreads();

    // S = Q K^T: B = K^T, K's rows as they are (ldmatrix), two n-tiles a load.
    float s[kKeyTiles8][4];
    FPA_UNROLL
    for (int nt = 0; nt < kKeyTiles8; ++nt)
      FPA_UNROLL
      for (int e = 0; e < 4; ++e) s[nt][e] = 0.0f;
    FPA_UNROLL
    for (int kk = 0; kk < D / 16; ++kk)
      FPA_UNROLL
      for (int nt = 0; nt < kKeyTiles8; nt += 2) {
        uint32_t b0[2], b1[2];
        load_b_rows2(sk, LD, lane, nt * 8, kk * 16, b0, b1);
        mma_m16n8k16<T>(s[nt], qa[kk], b0);
        mma_m16n8k16<T>(s[nt + 1], qa[kk], b1);
      }

    // Scale, bias and mask; then the online softmax of this lane's two rows.
    A tile_max[2] = {-inf, -inf};
    if (diagonal) {
      FPA_UNROLL
      for (int nt = 0; nt < kKeyTiles8; ++nt)
        FPA_UNROLL
        for (int e = 0; e < 4; ++e) {
          const int h = e / 2, r = row_of[h], c = nt * 8 + 2 * q4 + e % 2;
          A x;
          if (!active[h]) {
            x = A(0);  // a row past the sequence: finite, never written
          } else if (c >= cols || c > r) {
            x = -inf;
          } else {
            x = scale * s[nt][e] +
                diagonal_bias<A>(p.mode, F, i0 + r, j0 + c, sb, ld32(kTile), r, c);
          }
          s[nt][e] = x;
          tile_max[h] = fmaxf(tile_max[h], x);  // no NaN here: t_max's value, one instruction
        }
    } else {
      // The tiles before the diagonal, where nearly all the scores are: no mask (such a tile is
      // whole, since only the last key tile can be short and only the last query tile reaches it,
      // as its diagonal; and its keys precede every query of this tile) and no branch. Per key,
      // its parts of the bias (FPA: the key side, min(S_J(j), C), and phi_j; FoX: its column
      // part), then per row the row's part (in registers since the tile began). Written out
      // rather than through the backward's key_parts, which nvcc compiles here into a branch
      // per key (PTX: 424 branches against 344).
      FPA_UNROLL
      for (int nt = 0; nt < kKeyTiles8; ++nt)
        FPA_UNROLL
        for (int cc = 0; cc < 2; ++cc) {
          const int c = nt * 8 + 2 * q4 + cc;
          const A key_side = fpa ? t::fpa_key_side(fk.suffix[c].value, between.min.value) : A(0);
          const A phi_c = fpa ? fk.phi[c] : A(0), col = fox ? fox_col[c] : A(0);
          FPA_UNROLL
          for (int h = 0; h < 2; ++h) {
            const int e = 2 * h + cc;
            const A b = fpa ? t::fpa_bias_of_key_side(key_side, q_prefix[h], phi_c)
                            : fox_row[h] + col;  // (0 for softmax)
            const A x = active[h] ? scale * s[nt][e] + b : A(0);  // (a row past the sequence)
            s[nt][e] = x;
            tile_max[h] = fmaxf(tile_max[h], x);
          }
        }
    }
    A factor[2];
    FPA_UNROLL
    for (int h = 0; h < 2; ++h) factor[h] = row[h].rescale(quad_max(tile_max[h]));
    FPA_UNROLL
    for (int vt = 0; vt < D / 8; ++vt)
      FPA_UNROLL
      for (int e = 0; e < 4; ++e) o[vt][e] *= factor[e / 2];
    A tile_sum[2] = {A(0), A(0)};
    const A max_log2[2] = {row[0].max * kLog2e, row[1].max * kLog2e};
    FPA_UNROLL
    for (int nt = 0; nt < kKeyTiles8; ++nt)
      FPA_UNROLL
      for (int e = 0; e < 4; ++e) {
        const A pe = exp_shifted(s[nt][e], max_log2[e / 2]);  // row[e / 2].prob, in 2 instructions
        tile_sum[e / 2] += pe;
        s[nt][e] = pe;
      }
    row[0].sum += tile_sum[0];
    row[1].sum += tile_sum[1];

    // O += P V: the A fragment of keys [16 kk, 16 kk + 16) is S tiles 2 kk and 2 kk + 1 packed;
    // V's B fragments by ldmatrix with its transpose, two n-tiles a load.
    FPA_UNROLL
    for (int kk = 0; kk < kTile / 16; ++kk) {
      uint32_t pa[4];
      pack_a<T>(s, kk, pa);
      FPA_UNROLL
      for (int vt = 0; vt < D / 8; vt += 2) {
        uint32_t b0[2], b1[2];
        load_b_cols2(sv, LD, lane, kk * 16, vt * 8, b0, b1);
        mma_m16n8k16<T>(o[vt], pa, b0);
        mma_m16n8k16<T>(o[vt + 1], pa, b1);
      }
    }
    // C for the next key tile (tj - 1) covers tiles tj .. ti - 1.
    if (fpa && !diagonal)
      between = t::extend_earlier(between, fk.suffix[0], fk.suffix_soft[0], fk.inv_tau);
    __syncthreads();  // this tile's K, V (and field) readers are done: the buffer is free
  }

  FPA_UNROLL
  for (int h = 0; h < 2; ++h) {
    const A sum = quad_sum(row[h].sum);
    if (!active[h]) continue;
    const int64_t i = bh * n + i0 + row_of[h];
    FPA_UNROLL
    for (int vt = 0; vt < D / 8; ++vt) {
      T* dst = out + i * D + vt * 8 + 2 * q4;
      dst[0] = FromAcc<T>::of(o[vt][2 * h] / sum);
      dst[1] = FromAcc<T>::of(o[vt][2 * h + 1] / sum);
    }
    if (q4 == 0) lse[i] = row[h].max + t::t_log(sum);
  }
}

template <class T, int D>
int launch_forward_mma_at(const Problem& p, const T* q, const T* k, const T* v,
                          const FieldTile<float>* fields, const double* prefix, T* out,
                          float* lse, size_t smem, cudaStream_t s) {
  auto kernel = forward_mma_kernel<T, D>;
  if (int e = FPA_ALLOW_SMEM(kernel, smem)) return e;
  const dim3 grid(unsigned(tiles_of(p)), unsigned(p.batch * p.heads));
  FPA_LAUNCH(kernel, grid, kMmaThreads, smem, s, p, q, k, v, fields, prefix, out, lse);
  return FPA_LAST_STATUS();
}

// bf16 / fp16 at D = Dv in {64, 128} (mma_shape) with 16-byte aligned inputs; otherwise, or
// where the device cannot give the shared memory, the WMMA kernel.
template <class T>
int launch_forward_mma(const Problem& p, const T* q, const T* k, const T* v, const float* gate,
                       T* out, float* lse, void* workspace, cudaStream_t s) {
  const size_t smem = forward_mma_smem<T>(p);
  if (!mma_shape<T>(p) || !aligned_16b(q, k, v) || smem + kMmaStaticSmem > FPA_MAX_DYNAMIC_SMEM())
    return launch_forward_wmma<T>(p, q, k, v, gate, out, lse, workspace, s);
  GateInput<float> g;
  if (int e = prepare_gate(p, gate, workspace, s, g)) return e;
  return p.d == 64
             ? launch_forward_mma_at<T, 64>(p, q, k, v, g.fields, g.prefix, out, lse, smem, s)
             : launch_forward_mma_at<T, 128>(p, q, k, v, g.fields, g.prefix, out, lse, smem, s);
}

}  // namespace fpa::cuda::tiled::detail
