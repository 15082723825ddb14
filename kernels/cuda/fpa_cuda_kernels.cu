#include "fpa_cuda_kernels.h"

#include <cuda_runtime.h>

#include <cmath>

namespace fpa::cuda {
namespace {

constexpr int kThreads = 64;  // queries per block
// Keys per shared-memory tile: 32 in double, so that D = Dv = 256 (~131 KB) fits sm_80's 163 KB
// (64 asked 263 KB and failed at launch). The tile only chunks the loads: every thread still
// visits its keys one by one in the same order, so the results do not depend on it.
template <class T> constexpr int kKeyTile = sizeof(T) == 8 ? 32 : 64;

// FoX: F = cumsum(log f) per head, in double. One thread per head (O(N) each).
template <class T>
__global__ void prefix_kernel(const T* gate, double* prefix, int64_t heads_total, int64_t n) {
  const int64_t bh = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (bh >= heads_total) return;
  double s = 0;
  for (int64_t l = 0; l < n; ++l) prefix[bh * n + l] = s += double(gate[bh * n + l]);
}

// Loads keys [j0, j0 + tile) of one head into shared memory (rows past n are skipped). `tile` is
// the kernel's kKeyTile (the prefix is double in float kernels too).
template <class U>
__device__ void load_tile(const U* src, U* dst, int64_t j0, int64_t n, int64_t width,
                          int64_t tile) {
  const int64_t rows = min(tile, n - j0);
  for (int64_t e = threadIdx.x; e < rows * width; e += blockDim.x) dst[e] = src[j0 * width + e];
}

// Shared-memory layout of one key tile: K (kKeyTile x d), V (kKeyTile x dv), gate (kKeyTile),
// prefix (kKeyTile doubles, FoX).
template <class T>
struct TileSmem {
  T *k, *v, *gate;
  double* prefix;
  __device__ TileSmem(unsigned char* raw, int64_t d, int64_t dv) {
    prefix = reinterpret_cast<double*>(raw);
    k = reinterpret_cast<T*>(prefix + kKeyTile<T>);
    v = k + kKeyTile<T> * d;
    gate = v + kKeyTile<T> * dv;
  }
};

template <class T>
size_t tile_smem_bytes(int64_t d, int64_t dv) {
  return kKeyTile<T> * sizeof(double) + (kKeyTile<T> * (d + dv + 1)) * sizeof(T);
}

template <class T>
__global__ void forward_kernel(KernelProblem p, const T* __restrict__ q, const T* __restrict__ k,
                               const T* __restrict__ v, const T* __restrict__ gate,
                               const double* __restrict__ prefix, T* __restrict__ out,
                               T* __restrict__ lse) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  TileSmem<T> tile(smem_raw, p.d, p.dv);
  const int64_t bh = blockIdx.y, n = p.n, d = p.d, dv = p.dv;
  const int64_t i0 = int64_t(blockIdx.x) * kThreads, i = i0 + threadIdx.x;
  const bool active = i < n;
  const T* kh = k + bh * n * d;
  const T* vh = v + bh * n * dv;
  const T* gh = gate ? gate + bh * n : nullptr;
  const double* fh = prefix ? prefix + bh * n : nullptr;

  T qi[kMaxHeadDim], acc[kMaxHeadDim];
  if (active)
    for (int64_t e = 0; e < d; ++e) qi[e] = q[(bh * n + i) * d + e];
  for (int64_t e = 0; e < dv; ++e) acc[e] = T(0);
  T run_max = -INFINITY, run_sum = 0;
  T path_min = INFINITY;               // FPA: min of phi over [j, i]
  const double fi = (active && fh) ? fh[i] : 0.0;

  const int64_t last = min(i0 + kThreads, n) - 1;  // the block's last query
  for (int64_t j0 = (last / kKeyTile<T>) * kKeyTile<T>; j0 >= 0; j0 -= kKeyTile<T>) {
    __syncthreads();
    load_tile(kh, tile.k, j0, n, d, kKeyTile<T>);
    load_tile(vh, tile.v, j0, n, dv, kKeyTile<T>);
    if (gh) load_tile(gh, tile.gate, j0, n, int64_t(1), kKeyTile<T>);
    if (fh) load_tile(fh, tile.prefix, j0, n, int64_t(1), kKeyTile<T>);
    __syncthreads();
    if (!active) continue;
    const int64_t top = min(j0 + kKeyTile<T> - 1, i);  // keys j <= i only
    for (int64_t j = top; j >= j0; --j) {
      const int64_t c = j - j0;
      T s = 0;
      for (int64_t e = 0; e < d; ++e) s += qi[e] * tile.k[c * d + e];
      s *= T(p.scale);
      if (p.variant == KernelVariant::Fox) s += T(fi - tile.prefix[c]);
      if (p.variant == KernelVariant::Fpa) {
        path_min = min(path_min, tile.gate[c]);
        s += path_min - tile.gate[c];
      }
      const T new_max = max(run_max, s);
      const T rescale = exp(run_max - new_max);
      const T w = exp(s - new_max);
      run_sum = run_sum * rescale + w;
      for (int64_t e = 0; e < dv; ++e) acc[e] = acc[e] * rescale + w * tile.v[c * dv + e];
      run_max = new_max;
    }
  }
  if (!active) return;
  const T inv = T(1) / run_sum;
  for (int64_t e = 0; e < dv; ++e) out[(bh * n + i) * dv + e] = acc[e] * inv;
  lse[bh * n + i] = run_max + log(run_sum);
}

__device__ inline void atomic_add(float* a, float x) { atomicAdd(a, x); }
__device__ inline void atomic_add(double* a, double x) { atomicAdd(a, x); }

template <class T>
__global__ void backward_kernel(KernelProblem p, const T* __restrict__ q,
                                const T* __restrict__ k, const T* __restrict__ v,
                                const T* __restrict__ gate, const double* __restrict__ prefix,
                                const T* __restrict__ out, const T* __restrict__ lse,
                                const T* __restrict__ dout, T* __restrict__ dq,
                                T* __restrict__ dk, T* __restrict__ dv,
                                double* __restrict__ dgate) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  TileSmem<T> tile(smem_raw, p.d, p.dv);
  const int64_t bh = blockIdx.y, n = p.n, d = p.d, dvd = p.dv;
  const int64_t i0 = int64_t(blockIdx.x) * kThreads, i = i0 + threadIdx.x;
  const bool active = i < n;
  const T* kh = k + bh * n * d;
  const T* vh = v + bh * n * dvd;
  const T* gh = gate ? gate + bh * n : nullptr;
  const double* fh = prefix ? prefix + bh * n : nullptr;
  T* dkh = dk + bh * n * d;
  T* dvh = dv + bh * n * dvd;
  double* dgh = dgate ? dgate + bh * n : nullptr;

  T qi[kMaxHeadDim], doi[kMaxHeadDim], dqi[kMaxHeadDim];
  T delta = 0, lse_i = 0;
  if (active) {
    for (int64_t e = 0; e < d; ++e) qi[e] = q[(bh * n + i) * d + e];
    for (int64_t e = 0; e < dvd; ++e) {
      doi[e] = dout[(bh * n + i) * dvd + e];
      delta += doi[e] * out[(bh * n + i) * dvd + e];
    }
    lse_i = lse[bh * n + i];
  }
  for (int64_t e = 0; e < d; ++e) dqi[e] = T(0);
  const double fi = (active && fh) ? fh[i] : 0.0;
  T path_min = INFINITY;
  int64_t argmin = i;       // FPA exact: latest position of the path minimum
  double pending = 0;       // gradient owed to phi[argmin], flushed when the argmin moves
  double row_sum = 0;       // FoX: sum_j g_ij, owed to dF_i

  const int64_t last = min(i0 + kThreads, n) - 1;
  for (int64_t j0 = (last / kKeyTile<T>) * kKeyTile<T>; j0 >= 0; j0 -= kKeyTile<T>) {
    __syncthreads();
    load_tile(kh, tile.k, j0, n, d, kKeyTile<T>);
    load_tile(vh, tile.v, j0, n, dvd, kKeyTile<T>);
    if (gh) load_tile(gh, tile.gate, j0, n, int64_t(1), kKeyTile<T>);
    if (fh) load_tile(fh, tile.prefix, j0, n, int64_t(1), kKeyTile<T>);
    __syncthreads();
    if (!active) continue;
    const int64_t top = min(j0 + kKeyTile<T> - 1, i);
    for (int64_t j = top; j >= j0; --j) {
      const int64_t c = j - j0;
      T s = 0;
      for (int64_t e = 0; e < d; ++e) s += qi[e] * tile.k[c * d + e];
      s *= T(p.scale);
      if (p.variant == KernelVariant::Fox) s += T(fi - tile.prefix[c]);
      if (p.variant == KernelVariant::Fpa) {
        if (tile.gate[c] < path_min) {  // strict: ties keep the later position
          if (dgh && pending != 0) atomic_add(&dgh[argmin], pending);
          pending = 0;
          path_min = tile.gate[c];
          argmin = j;
        }
        s += path_min - tile.gate[c];
      }
      const T prob = exp(s - lse_i);
      T dp = 0;
      for (int64_t e = 0; e < dvd; ++e) dp += doi[e] * tile.v[c * dvd + e];
      const T g = prob * (dp - delta);  // dLoss/ds_ij = dLoss/db_ij
      for (int64_t e = 0; e < d; ++e) {
        dqi[e] += T(p.scale) * g * tile.k[c * d + e];
        atomic_add(&dkh[j * d + e], T(p.scale) * g * qi[e]);
      }
      for (int64_t e = 0; e < dvd; ++e) atomic_add(&dvh[j * dvd + e], prob * doi[e]);
      if (dgh && p.variant != KernelVariant::Softmax) {
        atomic_add(&dgh[j], -double(g));  // -phi_j (FPA) or -F_j (FoX)
        if (p.variant == KernelVariant::Fpa) pending += double(g);
        else row_sum += double(g);
      }
    }
  }
  if (!active) return;
  for (int64_t e = 0; e < d; ++e) dq[(bh * n + i) * d + e] = dqi[e];
  if (dgh && p.variant == KernelVariant::Fpa && pending != 0) atomic_add(&dgh[argmin], pending);
  if (dgh && p.variant == KernelVariant::Fox) atomic_add(&dgh[i], row_sum);
}

int status() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : int(e);
}

template <class T>
int launch_prefix(const KernelProblem& p, const T* gate, double* prefix, cudaStream_t s) {
  const int64_t heads = p.batch * p.heads;
  prefix_kernel<T><<<unsigned((heads + 127) / 128), 128, 0, s>>>(gate, prefix, heads, p.n);
  return status();
}

bool valid(const KernelProblem& p) {
  return p.n >= 0 && p.d >= 1 && p.d <= kMaxHeadDim && p.dv >= 1 && p.dv <= kMaxHeadDim &&
         p.batch * p.heads <= 65535;
}

}  // namespace

template <class T>
int forward(const KernelProblem& p, const T* q, const T* k, const T* v, const T* gate,
            double* prefix, T* out, T* lse, void* stream) {
  if (!valid(p)) return -1;
  // No queries: nothing to do (an empty gate has no pointer, and a grid cannot be empty).
  if (p.n == 0 || p.batch * p.heads == 0) return 0;
  if (p.variant != KernelVariant::Softmax && !gate) return -1;
  auto s = static_cast<cudaStream_t>(stream);
  if (p.variant == KernelVariant::Fox) {
    if (!prefix) return -1;
    if (int e = launch_prefix(p, gate, prefix, s)) return e;
  }
  const dim3 grid(unsigned((p.n + kThreads - 1) / kThreads), unsigned(p.batch * p.heads));
  const size_t smem = tile_smem_bytes<T>(p.d, p.dv);
  if (smem > 48 * 1024) {
    if (cudaFuncSetAttribute(forward_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(smem)) != cudaSuccess)
      return status();
  }
  forward_kernel<T><<<grid, kThreads, smem, s>>>(
      p, q, k, v, p.variant == KernelVariant::Softmax ? nullptr : gate,
      p.variant == KernelVariant::Fox ? prefix : nullptr, out, lse);
  return status();
}

template <class T>
int backward(const KernelProblem& p, const T* q, const T* k, const T* v, const T* gate,
             const double* prefix, const T* out, const T* lse, const T* dout, T* dq, T* dk,
             T* dv, double* dgate, void* stream) {
  if (!valid(p)) return -1;
  if (p.n == 0 || p.batch * p.heads == 0) return 0;  // no queries, as in forward
  if (p.variant != KernelVariant::Softmax && !gate) return -1;
  if (p.variant == KernelVariant::Fox && !prefix) return -1;
  auto s = static_cast<cudaStream_t>(stream);
  const dim3 grid(unsigned((p.n + kThreads - 1) / kThreads), unsigned(p.batch * p.heads));
  const size_t smem = tile_smem_bytes<T>(p.d, p.dv);
  if (smem > 48 * 1024) {
    if (cudaFuncSetAttribute(backward_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(smem)) != cudaSuccess)
      return status();
  }
  backward_kernel<T><<<grid, kThreads, smem, s>>>(
      p, q, k, v, p.variant == KernelVariant::Softmax ? nullptr : gate,
      p.variant == KernelVariant::Fox ? prefix : nullptr, out, lse, dout, dq, dk, dv,
      p.variant == KernelVariant::Softmax ? nullptr : dgate);
  return status();
}

template int forward<float>(const KernelProblem&, const float*, const float*, const float*,
                            const float*, double*, float*, float*, void*);
template int forward<double>(const KernelProblem&, const double*, const double*, const double*,
                             const double*, double*, double*, double*, void*);
template int backward<float>(const KernelProblem&, const float*, const float*, const float*,
                             const float*, const double*, const float*, const float*,
                             const float*, float*, float*, float*, double*, void*);
template int backward<double>(const KernelProblem&, const double*, const double*, const double*,
                              const double*, const double*, const double*, const double*,
                              const double*, double*, double*, double*, double*, void*);

}  // namespace fpa::cuda
