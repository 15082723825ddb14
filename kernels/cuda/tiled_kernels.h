// Tiled CUDA attention kernels (FlashAttention-2 structure) for softmax, FoX and FPA, both FPA
// backward modes, on raw device pointers (no LibTorch). Every tile step is a function of
// kernels/cuda/tile_algorithm.h, which tests/test_tile_algorithm.cpp runs on the CPU in these
// kernels' order against the float64 reference.
//
// Layouts (B = batch, H = heads, N = sequence, D / Dv = head dims), all contiguous:
//   q, k: (B, H, N, D), v, out, dout: (B, H, N, Dv), in `dtype`;
//   gate: (B, H, N) in the accumulator type (float; double when dtype is Float64): the field
//         (FPA) or the log forget gates (FoX), never bf16/fp16 (a bf16 field makes ties);
//   lse:  (B, H, N) in the accumulator type, written by forward, read by backward;
//   dq, dk, dv in `dtype`; dgate: (B, H, N) doubles, d Loss / d gate (FoX: of the log gates,
//         the reverse cumulative sum already taken).
// Accumulation in fp32 for fp32/bf16/fp16 inputs (double for double): scores, the online
// softmax, the running minima and the log-sum-exps.
//
// Status: compiled by nvcc for sm_80 and sm_90; run on the CPU under an emulation of the CUDA
// execution model (test_tiled_emulated: the same bits as the CPU tile run), never on a GPU yet
// (test_tiled_cuda will); fpa::attention calls them (cuda_dispatch.h). A straightforward
// shared-memory version: one thread per query row (forward, dQ) or key (dK/dV), 64 threads per
// block; for bf16 / fp16 with D, Dv multiples of 16 the products of every pass run on tensor
// cores (WMMA, tiled_forward_wmma.cuh and tiled_backward_wmma.cuh; Problem::tensor_cores), the
// forward and backward at D = Dv = 64 or 128 on registers (mma.sync, tiled_*_mma.cuh),
// untuned; so do fp32's, on TF32 (WMMA 16 x 16 x 8), unless Problem::tensor_cores is false
// (exact fp32). The TF32 dK/dV pass at D = 128 fits no device's shared memory (scalar kernel),
// nor does the TF32 dQ pass at D = 128 on sm_80.
// Limits: D, Dv <= kMaxHeadDim, B * H <= 65535; no pass's shared memory depends on N (the
// between part's per-level slots are in the workspace). Shared memory per block grows with D: at
// D = 128 the fp64 forward (~234 KB) does not fit (the launch returns the error); the
// tensor-core dK/dV pass (~190 KB) fits sm_90's 227 KB, and on sm_80 (163 KB) that pass runs on
// the scalar kernel instead.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fpa::cuda::tiled {

constexpr int kMaxHeadDim = 128;

enum class DType : int { Float32 = 0, Float64 = 1, BFloat16 = 2, Float16 = 3 };
enum class Mode : int { Softmax = 0, Fox = 1, FpaExact = 2, FpaStraightThrough = 3 };

struct Problem {
  int64_t batch = 0, heads = 0, n = 0, d = 0, dv = 0;
  Mode mode = Mode::Softmax;
  DType dtype = DType::Float32;
  double scale = 1.0;
  double tau = 1.0;  // FpaStraightThrough's temperature
  // D and Dv multiples of 16: the products on tensor cores (tiled_*_wmma.cuh): bf16 / fp16 on
  // WMMA 16 x 16 x 16, fp32 on TF32 (WMMA 16 x 16 x 8, inputs rounded to TF32's 10-bit mantissa,
  // fp32 accumulation). false: the scalar kernels, exact fp32 products (AttentionOptions'
  // fp32_matmul "exact"). Ignored for fp64.
  bool tensor_cores = true;
};

// Device scratch the caller provides (uninitialised is fine). The forward's: FoX's prefix sums
// (8 bytes per position) or FPA's field tiles, scanned once per tile (36.25 bytes per position
// in fp32 accumulation, 72.25 in fp64); the backward's: the same, plus its per-position and
// per-level buffers (kernels/README.md, "Extra memory of the tiled kernels").
size_t forward_workspace_bytes(const Problem& p);
size_t backward_workspace_bytes(const Problem& p);

// Return 0 on success, a CUDA error code, or -1 for arguments these kernels do not take.
int forward(const Problem& p, const void* q, const void* k, const void* v, const void* gate,
            void* out, void* lse, void* workspace, void* stream);
int backward(const Problem& p, const void* q, const void* k, const void* v, const void* gate,
             const void* out, const void* lse, const void* dout, void* dq, void* dk, void* dv,
             double* dgate, void* workspace, void* stream);

}  // namespace fpa::cuda::tiled
