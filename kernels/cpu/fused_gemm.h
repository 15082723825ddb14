// Small dense row-major matrix products for the fused kernels' tiles.
//
// The tiles are tiny (64 x 64 x D), so a tensor op per tile would spend more time in LibTorch's
// dispatcher than in arithmetic. When CMake found a BLAS (the one LibTorch itself uses on Debian),
// these call it directly; otherwise they fall back to at::mm on borrowed memory.
#pragma once

#include <cstdint>

namespace fpa::fused {

// C (m x n) = alpha * A (m x k) * B^T, with B stored (n x k)      + beta * C
template <class T>
void gemm_nt(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
             int64_t ldb, T beta, T* c, int64_t ldc);
// C (m x n) = alpha * A (m x k) * B, with B stored (k x n)        + beta * C
template <class T>
void gemm_nn(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
             int64_t ldb, T beta, T* c, int64_t ldc);
// C (m x n) = alpha * A^T * B, with A stored (k x m), B (k x n)   + beta * C
template <class T>
void gemm_tn(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
             int64_t ldb, T beta, T* c, int64_t ldc);

// y (m) = alpha * A x, A (m x n) row-major. For one query against a cache
// (kernels/cpu/attention_step.cpp).
template <class T>
void gemv_n(int64_t m, int64_t n, T alpha, const T* a, int64_t lda, const T* x, T* y);

// "blas" or "aten": which path this build uses (printed by the benchmark).
const char* gemm_backend();

}  // namespace fpa::fused
