// Pure CUDA attention kernels for softmax, FoX and FPA on raw device pointers (no LibTorch), so
// they compile wherever nvcc exists. Layouts as the CPU kernels (fused_kernels.h): q, k
// (B, H, N, D), v, out (B, H, N, Dv), gate and lse (B, H, N), all contiguous, float or double.
//
// Algorithm: one thread per query row, keys visited from the query backwards (j = i, i-1, ...,
// 0) through shared-memory tiles of K and V. Going backwards makes FPA's path minimum a running
// minimum per thread, min over [j, i] = min(phi_j, min over [j+1, i]), and the first strictly
// smaller value seen is the LATEST position attaining it (the reference's tie rule). The
// forward keeps an online softmax (running max, normaliser, output accumulator) and stores the
// row log-sum-exp; the backward recomputes probabilities from it, keeps dQ in registers and
// adds dK, dV and the gate's gradient with atomics.
//
// Limits: head dimensions up to 256 (kMaxHeadDim); FPA's straight-through backward is not
// implemented on the GPU (the launcher returns an error; use the CPU fused kernels).
#pragma once

#include <cstdint>

namespace fpa::cuda {

constexpr int kMaxHeadDim = 256;

enum class KernelVariant : int { Softmax = 0, Fox = 1, Fpa = 2 };

struct KernelProblem {
  int64_t batch = 0, heads = 0, n = 0, d = 0, dv = 0;
  KernelVariant variant = KernelVariant::Softmax;
  double scale = 1.0;
};

// All pointers are device pointers. `prefix` is scratch of B*H*N doubles (FoX only; may be
// null otherwise). Return 0 on success, otherwise a CUDA error code or -1 for bad arguments.
template <class T>
int forward(const KernelProblem& p, const T* q, const T* k, const T* v, const T* gate,
            double* prefix, T* out, T* lse, void* stream);

// dq, dk, dv: zeroed by the caller (accumulated with atomics). dgate: B*H*N doubles, zeroed by
// the caller; for FoX it receives dLoss/dF (the caller applies the reverse cumulative sum).
template <class T>
int backward(const KernelProblem& p, const T* q, const T* k, const T* v, const T* gate,
             const double* prefix, const T* out, const T* lse, const T* dout, T* dq, T* dk,
             T* dv, double* dgate, void* stream);

}  // namespace fpa::cuda
