// Which CUDA kernel runs a call of fpa::attention with impl 'cuda', decided from the dtype, the
// head dimensions and the mode only: no LibTorch, no CUDA, so the CPU build compiles it and
// tests/test_cuda_dispatch.cpp checks the table without a GPU. cuda_attention.cpp follows it.
//
//   bf16 / fp16, D, Dv <= 128  the tiled kernels (tiled_kernels.h), fp32 accumulation, products
//                              on tensor cores when D and Dv are multiples of 16 (scalar tiles
//                              otherwise); every mode, deterministic backward.
//   fp32, D, Dv <= 128         the tiled kernels; with fp32_matmul Tf32 (the default) and D, Dv
//                              multiples of 16 the products on TF32 tensor cores (WMMA
//                              16 x 16 x 8, fp32 accumulation), otherwise (fp32_matmul Exact, or
//                              other head dimensions) exact fp32 products on scalar tiles; every
//                              mode, deterministic backward.
//   fp64, D, Dv <= 64          the tiled kernels in double (at D = 128 their fp64 forward tile
//                              needs ~234 KB of shared memory: more than sm_80 or sm_90 gives).
//   anything else up to 256    the one-thread-per-row kernels (fpa_cuda_kernels.h): fp32/fp64
//                              (bf16 / fp16 computed in fp32 there and cast back), backward
//                              with atomics (not bitwise repeatable) and without FPA's
//                              straight-through mode.
#pragma once

#include "kernels/cuda/tiled_kernels.h"
#include "kernels/options.h"

#include <cstdint>
#include <string>

namespace fpa::cuda {

constexpr int64_t kMaxCudaHeadDim = 256;  // what impl 'cuda' takes (the row kernels' limit)
constexpr int64_t kMaxTiledDoubleHeadDim = 64;
constexpr int64_t kMaxBatchTimesHeads = 65535;  // the grid's y dimension

enum class CudaKernel { Tiled, RowPerThread };

struct CudaPlan {
  CudaKernel kernel = CudaKernel::Tiled;
  bool tensor_cores = false;    // Tiled: the products on tensor cores (WMMA; fp32: TF32)
  bool compute_in_fp32 = false; // RowPerThread, bf16 / fp16: run in fp32, cast back
  std::string refusal;          // non-empty: the call cannot run; a one-line reason
  std::string backward_refusal; // non-empty: the forward runs, the backward cannot
};

// fp32_matmul matters for float32 only.
CudaPlan plan_cuda_attention(tiled::DType dtype, int64_t batch_heads, int64_t d, int64_t dv,
                             Variant variant, FpaBackward fpa_backward,
                             Fp32Matmul fp32_matmul = Fp32Matmul::Tf32);

std::string to_string(CudaKernel k);  // "tiled", "row-per-thread"

// The one-line error of a straight-through backward on the row kernels.
std::string row_kernels_straight_through_refusal();

}  // namespace fpa::cuda
