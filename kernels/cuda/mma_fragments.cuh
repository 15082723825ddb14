// One warp's tensor-core product on registers, mma.sync.aligned.m16n8k16 (sm_80+), bf16 or fp16
// inputs with fp32 accumulation, and the register packing and quad reductions around it. The
// fragment layout is PTX's (tests/cuda_emulation.h repeats it and emulates the instruction): with
// g = lane / 4 and q = lane % 4,
//   A 16 x 16 row-major: a[0] = (row g, cols 2q, 2q+1), a[1] = row g+8, a[2] = row g, cols +8,
//                        a[3] = row g+8, cols +8;
//   B 16 x 8 ("col"):    b[0] = (rows 2q, 2q+1, col g), b[1] = rows +8;
//   C, D 16 x 8 fp32:    c[0], c[1] = (row g, cols 2q, 2q+1), c[2], c[3] = row g+8.
// So a C tile's rows are spread over a quad of lanes (quad_max, quad_sum), and two C tiles side by
// side are, once packed to 16 bits, exactly an A fragment (FlashAttention-2's register reuse of
// P for the second product).
#pragma once

#include "kernels/cuda/tiled_device.cuh"

#include <stdint.h>
#include <string.h>

#include <type_traits>

// Loops over register arrays must be unrolled, or their arrays go to local memory (an index the
// compiler cannot resolve). nvcc honours the pragma; g++ (the emulation) needs none.
#if defined(__CUDACC__)
#define FPA_UNROLL _Pragma("unroll")
#else
#define FPA_UNROLL
#endif

namespace fpa::cuda::tiled::detail {

// c += a b on the warp's registers.
template <class T>
__device__ inline void mma_m16n8k16(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  static_assert(std::is_same<T, __nv_bfloat16>::value || std::is_same<T, __half>::value,
                "m16n8k16 takes bf16 or fp16");
#if defined(FPA_CUDA_EMULATION)
  ::fpa_emu::mma_m16n8k16<T>(c, a, b);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same<T, __nv_bfloat16>::value) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#endif
}

// Four 8 x 8 matrices of 16-bit elements from shared memory in one instruction
// (ldmatrix.sync.aligned.m8n8.x4, sm_75+): lane l gives the address of row l % 8 of matrix l / 8
// (16 contiguous, 16-byte aligned bytes); register i of lane t receives matrix i's (row t / 4,
// columns 2 (t % 4), + 1), or with Trans its (rows 2 (t % 4), + 1, column t / 4): the layout of
// an A or C fragment's register, and with Trans a B fragment's read from a row-major k x n tile.
template <bool Trans> __device__ inline void ldmatrix_x4(uint32_t (&r)[4], const void* row_address) {
#if defined(FPA_CUDA_EMULATION)
  ::fpa_emu::ldmatrix_x4(r, row_address, Trans);
#elif defined(__CUDA_ARCH__)
  const unsigned a = unsigned(__cvta_generic_to_shared(row_address));
  if constexpr (Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
#endif
}

// Two 16-bit elements in one register, `lo` in the low half (the lower index).
template <class T> __device__ inline uint32_t pack2(T lo, T hi) {
  uint16_t l, h;
  memcpy(&l, &lo, sizeof l);
  memcpy(&h, &hi, sizeof h);
  return uint32_t(l) | (uint32_t(h) << 16);
}
// Two floats rounded to nearest into one register: one conversion of the pair (cvt.rn.bf16x2.f32
// or .f16x2 on sm_80+) where two conversions, a shift and an or did the same; the same bits.
template <class T> __device__ inline uint32_t pack2_of(float lo, float hi) {
  uint32_t r;
  if constexpr (std::is_same<T, __nv_bfloat16>::value) {
    const __nv_bfloat162 two = __floats2bfloat162_rn(lo, hi);  // .x = lo, the low half
    memcpy(&r, &two, sizeof r);
  } else {
    static_assert(std::is_same<T, __half>::value, "pack2_of takes bf16 or fp16");
    const __half2 two = __floats2half2_rn(lo, hi);
    memcpy(&r, &two, sizeof r);
  }
  return r;
}
// Elements e and e + 1 of a tile in shared memory (e even, the tile 4-byte aligned).
template <class T> __device__ inline uint32_t load_pair(const T* tile, int e) {
  uint32_t r;
  memcpy(&r, tile + e, sizeof r);
  return r;
}

// The cp.async copy (sm_80+) of 16 bytes a thread, without passing through registers; `copy`
// false zero-fills (source size 0). The copies land when the thread waits for their group
// (cp_async_wait) and the block meets at a barrier after it: until then the destination must
// not be read. The emulation lands them at the wait, the destination all-ones bytes (NaN) until
// then, so a missing wait or barrier shows on the CPU (tests/cuda_emulation.h).
__device__ inline void cp_async_16(void* dst, const void* src, bool copy) {
#if defined(FPA_CUDA_EMULATION)
  ::fpa_emu::cp_async(dst, src, 16, copy);
#elif defined(__CUDA_ARCH__)
  const unsigned d = unsigned(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
               "r"(copy ? 16 : 0));
#endif
}
// The same for 4 or 8 bytes (a float or a double; .ca, as PTX allows .cg for 16 bytes only).
template <int bytes> __device__ inline void cp_async_small(void* dst, const void* src, bool copy) {
  static_assert(bytes == 4 || bytes == 8, "cp.async copies 4, 8 or 16 bytes");
#if defined(FPA_CUDA_EMULATION)
  ::fpa_emu::cp_async(dst, src, bytes, copy);
#elif defined(__CUDA_ARCH__)
  const unsigned d = unsigned(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src), "n"(bytes),
               "r"(copy ? bytes : 0));
#endif
}
// Closes the group of copies issued since the last commit.
__device__ inline void cp_async_commit() {
#if defined(FPA_CUDA_EMULATION)
  ::fpa_emu::cp_async_commit();
#elif defined(__CUDA_ARCH__)
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
// Waits until at most `pending` of this thread's committed groups are still in flight.
template <int pending> __device__ inline void cp_async_wait() {
#if defined(FPA_CUDA_EMULATION)
  ::fpa_emu::cp_async_wait(pending);
#elif defined(__CUDA_ARCH__)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
#endif
}

// Rows [l0, l0 + len) of a (N, D) head into a kTile-row tile with leading dimension D + 8, rows
// past len zero, in 16-byte chunks (8 elements; D a multiple of 8, so every row of the head and
// of the tile starts 16-byte aligned), asynchronously (cp.async: commit, wait, then a barrier
// before reading).
template <class T, int D>
__device__ inline void load_tile_async(const T* src, int64_t l0, int len, T* dst) {
  static_assert(sizeof(T) == 2 && D % 8 == 0, "16-bit elements, rows of whole chunks");
  constexpr int kChunks = D / 8, kLd = D + 8;
  for (int e = threadIdx.x; e < kTile * kChunks; e += blockDim.x) {
    const int r = e / kChunks, c = (e % kChunks) * 8;
    cp_async_16(dst + r * kLd + c, src + (r < len ? (l0 + r) * D + c : 0), r < len);
  }
}
// The same rows of two (N, D) heads (K and V, or Q and dO) of tile `tile`, asynchronously.
template <class T, int D>
__device__ inline void load_tiles_async(const T* a, const T* b, int64_t n, int tile, T* dst_a,
                                        T* dst_b) {
  const int64_t l0 = int64_t(tile) * kTile;
  const int len = int(min(int64_t(kTile), n - l0));
  load_tile_async<T, D>(a, l0, len, dst_a);
  load_tile_async<T, D>(b, l0, len, dst_b);
}
// FPA's field tile `tile` (fields: the head's, scanned by field_tiles_kernel) into dst,
// asynchronously: issued with the K and V (or Q and dO) copies of the same tile, it lands with
// them, and the pass reads it after the same wait and barrier.
template <class A>
__device__ inline void load_field_async(const FieldTile<A>* fields, int tile, FieldTile<A>* dst) {
  static_assert(sizeof(FieldTile<A>) % 16 == 0, "a copy in 16-byte chunks");
  const auto* from = reinterpret_cast<const unsigned char*>(fields + tile);
  auto* to = reinterpret_cast<unsigned char*>(dst);
  for (int c = threadIdx.x; c < int(sizeof(FieldTile<A>) / 16); c += blockDim.x)
    cp_async_16(to + 16 * c, from + 16 * c, true);
}
// A per-position array's values at tile `tile` (src: the head's; FoX's F, the log-sum-exp,
// delta) into dst[0 .. kTile), asynchronously, zeros past n: issued with the tile's copies, they
// land with them.
template <class X>
__device__ inline void load_values_async(const X* src, int64_t n, int tile, X* dst) {
  const int64_t l0 = int64_t(tile) * kTile;
  for (int c = threadIdx.x; c < kTile; c += blockDim.x)
    cp_async_small<int(sizeof(X))>(dst + c, src + (l0 + c < n ? l0 + c : 0), l0 + c < n);
}
// The copy done before returning (a barrier is still needed before another thread reads it).
template <class T, int D>
__device__ inline void load_tile_16b(const T* src, int64_t l0, int len, T* dst) {
  load_tile_async<T, D>(src, l0, len, dst);
  cp_async_commit();
  cp_async_wait<0>();
}

// A 16 x 16 A fragment of rows [16 w, 16 w + 16) (w the warp) and columns [c0, c0 + 16) of a
// row-major tile with leading dimension ld: one ldmatrix, lane l giving row l % 16 at column
// c0 + 8 (l / 16).
template <class T>
__device__ inline void load_a(const T* tile, int ld, int warp, int lane, int c0, uint32_t (&a)[4]) {
  ldmatrix_x4<false>(a, tile + (warp * 16 + lane % 16) * ld + c0 + (lane / 16) * 8);
}
// The B fragments (16 x 8) of y^T for y row-major, columns [k0, k0 + 16), rows [n0, n0 + 8) into
// b0 and [n0 + 8, n0 + 16) into b1 (the second factor of Q K^T, K's rows as they are).
template <class T>
__device__ inline void load_b_rows2(const T* y, int ld, int lane, int n0, int k0,
                                    uint32_t (&b0)[2], uint32_t (&b1)[2]) {
  uint32_t r[4];
  ldmatrix_x4<false>(r, y + (n0 + (lane / 16) * 8 + lane % 8) * ld + k0 + ((lane / 8) % 2) * 8);
  b0[0] = r[0];
  b0[1] = r[1];
  b1[0] = r[2];
  b1[1] = r[3];
}
// The B fragments (16 x 8) of y itself, rows [k0, k0 + 16), columns [n0, n0 + 8) into b0 and
// [n0 + 8, n0 + 16) into b1 (the second factor of P V): ldmatrix with its transpose.
template <class T>
__device__ inline void load_b_cols2(const T* y, int ld, int lane, int k0, int n0,
                                    uint32_t (&b0)[2], uint32_t (&b1)[2]) {
  uint32_t r[4];
  ldmatrix_x4<true>(r, y + (k0 + lane % 16) * ld + n0 + (lane / 16) * 8);
  b0[0] = r[0];
  b0[1] = r[1];
  b1[0] = r[2];
  b1[1] = r[3];
}
// The A fragment of columns [16 kk, 16 kk + 16) from a lane's C registers (tiles 2 kk, 2 kk + 1),
// packed to 16 bits.
template <class T, int N>
__device__ inline void pack_a(const float (&x)[N][4], int kk, uint32_t (&a)[4]) {
  a[0] = pack2_of<T>(x[2 * kk][0], x[2 * kk][1]);
  a[1] = pack2_of<T>(x[2 * kk][2], x[2 * kk][3]);
  a[2] = pack2_of<T>(x[2 * kk + 1][0], x[2 * kk + 1][1]);
  a[3] = pack2_of<T>(x[2 * kk + 1][2], x[2 * kk + 1][3]);
}

// exp(x - shift) for the register kernels' weights p_ij, as 2^(x log2(e) - shift_log2) with
// shift_log2 = shift log2(e) worked out once per row: one FFMA and one MUFU.EX2
// (ex2.approx.ftz), where the accurate expf takes about nine instructions. Per score these
// kernels do as much work outside the tensor cores as on them (at D = 64 the MUFU unit alone
// needs about as long per score as the score's two products), so the instructions around the
// products set the speed; FlashAttention computes its softmax the same way. Error: ex2.approx's
// 2 ulp plus the argument's rounding, about (|x| + |shift|) 2^-24 relative: far below the
// 2^-8 (bf16) or 2^-11 (fp16) to which p is rounded for the product. A result below 2^-126 is
// flushed to zero (a weight no row sum notices); x = -inf gives 0. The emulation computes exp2f
// of the same argument, so the CPU tests check the formula, the GPU the instruction.
constexpr float kLog2e = 1.44269504088896341f;
__device__ inline float exp_shifted(float x, float shift_log2) {
  const float y = x * kLog2e - shift_log2;  // one FFMA (nvcc contracts it)
#if defined(FPA_CUDA_EMULATION) || !defined(__CUDA_ARCH__)
  return exp2f(y);
#else
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(y));
  return r;
#endif
}
__device__ inline float exp_fast(float x) { return exp_shifted(x, 0.0f); }

// Reductions over the quad of lanes that share a row of a C fragment. Every lane of the warp
// must call them (warp-uniform code, as __shfl_xor_sync's full mask says; the emulation checks).
__device__ inline float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ inline float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}
// The sum over the warp's 32 lanes (a butterfly: every lane gets the same bits).
__device__ inline float warp_sum(float x) {
  FPA_UNROLL
  for (int m = 1; m < 32; m *= 2) x += __shfl_xor_sync(0xffffffffu, x, m);
  return x;
}

}  // namespace fpa::cuda::tiled::detail
