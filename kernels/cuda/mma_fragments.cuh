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

// Two 16-bit elements in one register, `lo` in the low half (the lower index).
template <class T> __device__ inline uint32_t pack2(T lo, T hi) {
  uint16_t l, h;
  memcpy(&l, &lo, sizeof l);
  memcpy(&h, &hi, sizeof h);
  return uint32_t(l) | (uint32_t(h) << 16);
}
template <class T> __device__ inline uint32_t pack2_of(float lo, float hi) {
  return pack2<T>(FromAcc<T>::of(lo), FromAcc<T>::of(hi));
}
// Elements e and e + 1 of a tile in shared memory (e even, the tile 4-byte aligned).
template <class T> __device__ inline uint32_t load_pair(const T* tile, int e) {
  uint32_t r;
  memcpy(&r, tile + e, sizeof r);
  return r;
}

// Rows [l0, l0 + len) of a (N, D) head into a kTile-row tile with leading dimension D + 8, rows
// past len zero, in 16-byte chunks (8 elements; D a multiple of 8, so every row of the head and
// of the tile starts 16-byte aligned): a quarter of the element-wise copy's instructions and no
// division by a run-time width.
template <class T, int D>
__device__ inline void load_tile_16b(const T* src, int64_t l0, int len, T* dst) {
  static_assert(sizeof(T) == 2 && D % 8 == 0, "16-bit elements, rows of whole chunks");
  constexpr int kChunks = D / 8, kLd = D + 8;
  for (int e = threadIdx.x; e < kTile * kChunks; e += blockDim.x) {
    const int r = e / kChunks, c = (e % kChunks) * 8;
    uint4 chunk = make_uint4(0u, 0u, 0u, 0u);
    if (r < len) chunk = *reinterpret_cast<const uint4*>(src + (l0 + r) * D + c);
    *reinterpret_cast<uint4*>(dst + r * kLd + c) = chunk;
  }
}

// Reductions over the quad of lanes that share a row of a C fragment. Every lane of the block
// must call them (warp-uniform code; the emulation needs the whole block).
__device__ inline float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ inline float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

}  // namespace fpa::cuda::tiled::detail
