#include "kernels/cpu/fused_gemm.h"

#include <ATen/ATen.h>

// Fortran BLAS is column-major: a row-major (r x c) matrix is its column-major transpose, so a
// row-major C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T.
#ifdef FPA_HAVE_BLAS
extern "C" {
void sgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k,
            const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
            const float* beta, float* c, const int* ldc);
void dgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k,
            const double* alpha, const double* a, const int* lda, const double* b,
            const int* ldb, const double* beta, double* c, const int* ldc);
void sgemv_(const char* t, const int* m, const int* n, const float* alpha, const float* a,
            const int* lda, const float* x, const int* incx, const float* beta, float* y,
            const int* incy);
void dgemv_(const char* t, const int* m, const int* n, const double* alpha, const double* a,
            const int* lda, const double* x, const int* incx, const double* beta, double* y,
            const int* incy);
}
#endif

namespace fpa::fused {
namespace {

#ifdef FPA_HAVE_BLAS
void blas(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const int M = int(m), N = int(n), K = int(k), LA = int(lda), LB = int(ldb), LC = int(ldc);
  sgemm_(&ta, &tb, &M, &N, &K, &alpha, a, &LA, b, &LB, &beta, c, &LC);
}
void blas(char ta, char tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  const int M = int(m), N = int(n), K = int(k), LA = int(lda), LB = int(ldb), LC = int(ldc);
  dgemm_(&ta, &tb, &M, &N, &K, &alpha, a, &LA, b, &LB, &beta, c, &LC);
}
void blas_gemv(char t, int64_t m, int64_t n, float alpha, const float* a, int64_t lda,
               const float* x, float beta, float* y) {
  const int M = int(m), N = int(n), LA = int(lda), one = 1;
  sgemv_(&t, &M, &N, &alpha, a, &LA, x, &one, &beta, y, &one);
}
void blas_gemv(char t, int64_t m, int64_t n, double alpha, const double* a, int64_t lda,
               const double* x, double beta, double* y) {
  const int M = int(m), N = int(n), LA = int(lda), one = 1;
  dgemv_(&t, &M, &N, &alpha, a, &LA, x, &one, &beta, y, &one);
}
#else
template <class T>
at::Tensor view(const T* p, int64_t rows, int64_t cols, int64_t ld) {
  return at::from_blob(const_cast<T*>(p), {rows, cols}, {ld, 1},
                       at::TensorOptions().dtype(c10::CppTypeToScalarType<T>::value));
}
template <class T>
void aten(const at::Tensor& a, const at::Tensor& b, T alpha, T beta, T* c, int64_t m, int64_t n,
          int64_t ldc) {
  auto out = view(c, m, n, ldc);
  if (beta == T(0)) out.zero_();
  else if (beta != T(1)) out.mul_(beta);
  out.add_(at::mm(a, b), alpha);
}
#endif

}  // namespace

template <class T>
void gemm_nt(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
             int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
#ifdef FPA_HAVE_BLAS
  blas('T', 'N', n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
#else
  aten(view(a, m, k, lda), view(b, n, k, ldb).t(), alpha, beta, c, m, n, ldc);
#endif
}

template <class T>
void gemm_nn(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
             int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
#ifdef FPA_HAVE_BLAS
  blas('N', 'N', n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
#else
  aten(view(a, m, k, lda), view(b, k, n, ldb), alpha, beta, c, m, n, ldc);
#endif
}

template <class T>
void gemm_tn(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
             int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
#ifdef FPA_HAVE_BLAS
  blas('N', 'T', n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
#else
  aten(view(a, k, m, lda).t(), view(b, k, n, ldb), alpha, beta, c, m, n, ldc);
#endif
}

// A row-major (m x n) matrix is the column-major (n x m) A^T: A x is gemv 'T' of it, A^T x 'N'.
// gemv reads the matrix once where a gemm with one column would pack (copy) it first.
template <class T>
void gemv_n(int64_t m, int64_t n, T alpha, const T* a, int64_t lda, const T* x, T* y) {
  if (m == 0) return;
#ifdef FPA_HAVE_BLAS
  blas_gemv('T', n, m, alpha, a, lda, x, T(0), y);
#else
  for (int64_t i = 0; i < m; ++i) {
    T s = 0;
    for (int64_t c = 0; c < n; ++c) s += a[i * lda + c] * x[c];
    y[i] = alpha * s;
  }
#endif
}

const char* gemm_backend() {
#ifdef FPA_HAVE_BLAS
  return "blas";
#else
  return "aten";
#endif
}

#define FPA_GEMM_INSTANTIATE(T)                                                              \
  template void gemm_nt<T>(int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, \
                           T, T*, int64_t);                                                   \
  template void gemm_nn<T>(int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, \
                           T, T*, int64_t);                                                   \
  template void gemm_tn<T>(int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, \
                           T, T*, int64_t);                                                   \
  template void gemv_n<T>(int64_t, int64_t, T, const T*, int64_t, const T*, T*);
FPA_GEMM_INSTANTIATE(float)
FPA_GEMM_INSTANTIATE(double)

}  // namespace fpa::fused
