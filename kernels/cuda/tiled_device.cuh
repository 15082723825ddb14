// What the tiled forward and backward kernels share: the platform macros, input conversions,
// the field tile in shared memory (the same scans as tests/tile_simulation.h's load_field, once
// per tile before the passes), FoX's prefix sums (tile_head_scan.h by blocks), the workspace
// layout and the argument check.
//
// Platform: compiled by nvcc, the kernels run on the GPU. Compiled by g++ with
// FPA_CUDA_EMULATION defined (tests/cuda_emulation.h, included first), the same kernel source
// runs on the CPU, every block's threads as fibers meeting at __syncthreads: that is how
// test_tiled_emulated runs these kernels on a machine without a GPU. The kernels use only
// threadIdx, blockIdx, blockDim, __syncthreads, __shared__ (static in the emulation, where
// blocks run one at a time), FPA_DYNAMIC_SMEM, FPA_NOINLINE, WMMA, and (the register kernels)
// __shfl_xor_sync and mma.sync through mma_fragments.cuh; in the launchers, FPA_LAUNCH,
// FPA_ALLOW_SMEM and FPA_LAST_STATUS.
#pragma once

#include "kernels/cuda/tile_algorithm.h"
#include "kernels/cuda/tiled_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#if !defined(FPA_CUDA_EMULATION)
// 128-byte aligned: the tensor-core kernel's fragments need 32-byte aligned tiles.
#define FPA_DYNAMIC_SMEM(name) extern __shared__ __align__(128) unsigned char name[]
#define FPA_LAUNCH(kernel, grid, block, smem, stream, ...) \
  kernel<<<grid, block, smem, stream>>>(__VA_ARGS__)
// Shared memory above 48 KB must be requested per kernel.
#define FPA_ALLOW_SMEM(kernel, bytes)                                                        \
  ((bytes) <= 48 * 1024 ? 0                                                                 \
                        : int(cudaFuncSetAttribute(kernel,                                  \
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, \
                                                   int(bytes))))
#define FPA_LAST_STATUS() int(cudaGetLastError())
// The most dynamic shared memory a block of the current device may ask for.
inline size_t fpa_max_dynamic_smem() {
  int device = 0, bytes = 48 * 1024;
  if (cudaGetDevice(&device) == cudaSuccess)
    cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  return size_t(bytes);
}
#define FPA_MAX_DYNAMIC_SMEM() fpa_max_dynamic_smem()
// A device function kept out of line (its own register allocation); nothing in the emulation.
#define FPA_NOINLINE __noinline__
#else
#define FPA_NOINLINE
#endif

namespace fpa::cuda::tiled {

namespace t = fpa::tiles;
using t::kTile;

// ---- conversions between the input type and the accumulator type -----------------------------
__device__ inline float to_acc(float x) { return x; }
__device__ inline double to_acc(double x) { return x; }
__device__ inline float to_acc(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float to_acc(__half x) { return __half2float(x); }

template <class T> struct FromAcc;
template <> struct FromAcc<float> { __device__ static float of(float x) { return x; } };
template <> struct FromAcc<double> { __device__ static double of(double x) { return x; } };
template <> struct FromAcc<__nv_bfloat16> {
  __device__ static __nv_bfloat16 of(float x) { return __float2bfloat16(x); }
};
template <> struct FromAcc<__half> {
  __device__ static __half of(float x) { return __float2half(x); }
};

template <class T> using Acc = typename t::AccOf<T>::type;

__host__ __device__ inline bool is_fpa(Mode m) {
  return m == Mode::FpaExact || m == Mode::FpaStraightThrough;
}

// Rows of a tile in shared memory are padded by one element: a thread per row reading column e
// of its own row then hits a different bank than its neighbours.
__host__ __device__ inline int padded(int64_t width) { return int(width) + 1; }

// Copies rows [l0, l0 + len) of a (N, width) head into a padded tile, converting to A.
template <class T, class A>
__device__ void load_rows(const T* src, int64_t l0, int len, int64_t width, A* dst) {
  for (int64_t e = threadIdx.x; e < len * width; e += blockDim.x)
    dst[(e / width) * padded(width) + e % width] = to_acc(src[l0 * width + e]);
}

// The number of tiles of p's sequences (tile_config.h's tile_count).
__host__ __device__ inline int64_t tiles_of(const Problem& p) { return t::tile_count(p.n); }

// The query tile of this block in a query-tile kernel (the forwards and the dQ passes), heaviest
// first. Query tile I visits I + 1 key tiles, and blocks start roughly in the order of their
// index: taking tiles from the last one down leaves light tiles for the last wave, where a heavy
// one would keep the GPU waiting on a few SMs (longest processing time first, as FlashAttention's
// LPT tile scheduler orders causal attention). The key-tile kernels (dK/dV) need no
// change: key tile J visits tiles - J query tiles, heaviest first already. Only the order of
// blocks changes, never what a block computes.
__device__ inline int query_tile_of_block(const Problem& p) {
  return int(tiles_of(p)) - 1 - int(blockIdx.x);
}

// Copies *src to *dst in 4-byte words, by the block's threads (both 4-byte aligned).
template <class X> __device__ void copy_words(const X* src, X* dst) {
  static_assert(sizeof(X) % 4 == 0 && alignof(X) >= 4, "a copy by 4-byte words");
  const auto* from = reinterpret_cast<const uint32_t*>(src);
  auto* to = reinterpret_cast<uint32_t*>(dst);
  for (int w = threadIdx.x; w < int(sizeof(X) / 4); w += blockDim.x) to[w] = from[w];
}

// The field of one tile and its scans (tile_bias.h), as tests/tile_simulation.h's FieldTile;
// 16-byte aligned and sized, for the register kernels' asynchronous copies (load_field_async).
template <class A> struct alignas(16) FieldTile {
  A phi[kTile], inv_tau;
  t::MinAt<A> suffix[kTile], prefix[kTile];
  t::SoftSum<A> suffix_soft[kTile], prefix_soft[kTile];
};

// The scans of one field tile, by the block (field_tiles_kernel). Called by every thread of the
// block (it synchronises). gate: this head's field.
template <class A>
__device__ void scan_field(const Problem& p, const A* gate, int tile, FieldTile<A>& f) {
  const int64_t l0 = int64_t(tile) * kTile;
  const int len = int(min(int64_t(kTile), p.n - l0));
  const bool soft = p.mode == Mode::FpaStraightThrough;
  __syncthreads();  // the previous tile's readers are done
  for (int c = threadIdx.x; c < len; c += blockDim.x) f.phi[c] = gate[l0 + c];
  if (threadIdx.x == 0) f.inv_tau = A(1.0 / p.tau);
  __syncthreads();
  // The minimum scans by every thread (tile_bias.h's two steps). Item x < kTile is key x's
  // suffix, item x >= kTile query x - kTile's prefix; a thread takes items threadIdx.x and
  // threadIdx.x + blockDim.x (blocks of 64 or 128 threads cover the 128 items). Step 1 into the
  // arrays, step 2 into registers, written back after a barrier. The soft sums stay one thread
  // each (floating sums: their order is the CPU's).
  auto step1 = [&](int x) {
    if (x < kTile && x < len) f.suffix[x] = t::key_suffix_min_in_chunk(f.phi, int(l0), len, x);
    if (x >= kTile && x - kTile < len)
      f.prefix[x - kTile] = t::query_prefix_min_in_chunk(f.phi, int(l0), x - kTile);
  };
  auto step2 = [&](int x) {
    if (x < kTile)
      return x < len ? t::key_suffix_min_across_chunks(f.suffix, len, x) : t::empty_min<A>();
    return x - kTile < len ? t::query_prefix_min_across_chunks(f.prefix, x - kTile)
                           : t::empty_min<A>();
  };
  auto store = [&](int x, t::MinAt<A> m) {
    if (x < kTile && x < len) f.suffix[x] = m;
    if (x >= kTile && x - kTile < len) f.prefix[x - kTile] = m;
  };
  const int x0 = int(threadIdx.x), x1 = int(threadIdx.x + blockDim.x);
  step1(x0);
  if (x1 < 2 * kTile) step1(x1);
  __syncthreads();
  const t::MinAt<A> m0 = step2(x0), m1 = x1 < 2 * kTile ? step2(x1) : t::empty_min<A>();
  __syncthreads();
  store(x0, m0);
  if (x1 < 2 * kTile) store(x1, m1);
  if (soft) {
    if (threadIdx.x == 2) t::key_tile_suffix_soft_sum(f.phi, len, f.inv_tau, f.suffix_soft);
    if (threadIdx.x == 3) t::query_tile_prefix_soft_sum(f.phi, len, f.inv_tau, f.prefix_soft);
  } else {
    for (int c = threadIdx.x; c < len; c += blockDim.x)
      f.suffix_soft[c] = f.prefix_soft[c] = t::empty_soft_sum<A>();
  }
  __syncthreads();
}

// A field tile's scans depend on that tile alone, yet every pass visits each tile once per tile
// pair: T^2 / 2 times a head instead of T (and straight-through's weight sums are a chain of 64
// log-add-exps on one thread). So one block per (tile, head) scans each tile once, before the
// passes, into the workspace (fields, per head its tiles in order), and the passes copy them.
template <class A>
__global__ void __launch_bounds__(kTile)
    field_tiles_kernel(Problem p, const A* __restrict__ gate, FieldTile<A>* __restrict__ fields) {
  __shared__ FieldTile<A> f;
  const int64_t bh = blockIdx.y;
  const int tile = blockIdx.x;
  scan_field(p, gate + bh * p.n, tile, f);  // synchronises
  copy_words(&f, &fields[bh * tiles_of(p) + tile]);
}

// A pass's copy of field tile `tile` of its head (fields: the head's first tile). Called by
// every thread of the block (it synchronises).
template <class A>
__device__ void load_field(const FieldTile<A>* fields, int tile, FieldTile<A>& f) {
  __syncthreads();  // the previous tile's readers are done
  copy_words(&fields[tile], &f);
  __syncthreads();
}

// As tests/tile_simulation.h: products summed in index order.
template <class A> __device__ A dot(const A* a, const A* b, int64_t len) {
  A s = A(0);
  for (int64_t e = 0; e < len; ++e) s += a[e] * b[e];
  return s;
}

// The bias of entry (r, c) of tile pair (i0, j0) (tile_bias.h), for the scalar and WMMA kernels:
// off the diagonal from the field tiles and C, on it FoX's from F and FPA's diag_bias (its
// diagonal rows are precomputed by fpa_diagonal_row_bias); 0 for softmax.
template <class A>
__device__ A bias_at(const Problem& p, bool diagonal, const double* F, int64_t i0, int64_t j0,
                     int r, int c, const FieldTile<A>& fq, const FieldTile<A>& fk,
                     const t::Between<A>& between, A diag_bias) {
  if (p.mode == Mode::Fox)
    return diagonal ? t::fox_diagonal_bias<A>(F, i0 + r, j0 + c)
                    : t::fox_row_part<A>(F, i0, i0 + r) + t::fox_col_part<A>(F, i0, j0 + c);
  if (!is_fpa(p.mode)) return A(0);
  return diagonal ? diag_bias
                  : t::fpa_bias_off_diagonal(fk.suffix[c].value, between.min.value,
                                             fq.prefix[r].value, fk.phi[c]);
}

// FoX's scans (tile_head_scan.h): a block of t::kHeadScanThreads threads per head, thread c on
// chunk c; out = the scan of x over the head's n positions; s_offsets, the block's shared array.
template <class X>
__device__ void scan_head(const X* x, int64_t n, t::ScanDirection dir, double* out,
                          double* s_offsets) {
  const int c = int(threadIdx.x);
  const t::HeadChunk ch = t::head_chunk(n, c);
  s_offsets[c] = t::chunk_total(x, ch, dir);
  __syncthreads();
  if (c == 0) t::chunk_offsets(s_offsets, dir);
  __syncthreads();
  t::chunk_scan(x, ch, s_offsets[c], dir, out);
}

// FoX: F = cumsum(log f) per head, in double.
template <class A>
__global__ void __launch_bounds__(t::kHeadScanThreads)
    fox_prefix_kernel(const A* __restrict__ gate, double* __restrict__ prefix, int64_t n) {
  __shared__ double s_offsets[t::kHeadScanThreads];
  const int64_t h = blockIdx.x;
  scan_head(gate + h * n, n, t::ScanDirection::Prefix, prefix + h * n, s_offsets);
}

// ---- workspace -------------------------------------------------------------------------------
inline size_t align_up(size_t b) { return (b + 255) / 256 * 256; }
inline size_t acc_bytes(const Problem& p) {
  return p.dtype == DType::Float64 ? sizeof(double) : sizeof(float);
}

// ---- the gate's pre-pass: what the passes read of the gate -----------------------------------
// FoX: the prefix sums F (n doubles per head); FPA: the field tiles (field_tiles_kernel, T per
// head); softmax: nothing. Both at the start of the workspace, in the forward and the backward.
template <class A> struct GateInput {
  const double* prefix = nullptr;
  const FieldTile<A>* fields = nullptr;
};
inline size_t gate_input_bytes(const Problem& p) {
  const size_t heads = size_t(p.batch * p.heads);
  if (p.mode == Mode::Fox) return align_up(heads * size_t(p.n) * sizeof(double));
  if (!is_fpa(p.mode)) return 0;
  const size_t tile_bytes =
      p.dtype == DType::Float64 ? sizeof(FieldTile<double>) : sizeof(FieldTile<float>);
  return align_up(heads * size_t(tiles_of(p)) * tile_bytes);
}
// The pre-pass of p's mode into the workspace: 0, or the launch's error.
template <class A>
inline int prepare_gate(const Problem& p, const A* gate, void* workspace, cudaStream_t s,
                        GateInput<A>& in) {
  in = GateInput<A>{};
  const unsigned heads = unsigned(p.batch * p.heads);
  if (p.mode == Mode::Softmax) return 0;
  if (p.mode == Mode::Fox) {
    auto* prefix = static_cast<double*>(workspace);
    FPA_LAUNCH(fox_prefix_kernel<A>, heads, t::kHeadScanThreads, 0, s, gate, prefix, p.n);
    in.prefix = prefix;
  } else {
    auto* fields = static_cast<FieldTile<A>*>(workspace);
    FPA_LAUNCH(field_tiles_kernel<A>, dim3(unsigned(tiles_of(p)), heads), kTile, 0, s, p, gate,
               fields);
    in.fields = fields;
  }
  return FPA_LAST_STATUS();
}

// Backward: the gate's input (above), then delta, gate_kv, gate_q (per position) and the slots
// of C's parts (tile_gate_grad.h; per head, the later side's tiles x level_slots, then the
// earlier side's), in the accumulator type.
template <class A> inline size_t slot_bytes() { return sizeof(t::BetweenSlot<A>); }
struct BackwardWorkspace {
  size_t gate_input, delta, gate_kv, gate_q, slots, total;
  explicit BackwardWorkspace(const Problem& p) {
    const size_t positions = size_t(p.batch * p.heads * p.n);
    const int tiles = int(tiles_of(p));
    const size_t slot_count = size_t(p.batch * p.heads) * 2 * tiles * t::level_slots(tiles);
    const size_t per_slot =
        p.dtype == DType::Float64 ? slot_bytes<double>() : slot_bytes<float>();
    gate_input = 0;
    delta = gate_input_bytes(p);
    gate_kv = delta + align_up(positions * acc_bytes(p));
    gate_q = gate_kv + align_up(positions * acc_bytes(p));
    slots = gate_q + align_up(positions * acc_bytes(p));
    total = slots + align_up(slot_count * per_slot);
  }
};

// The slots of one tile and side of head bh (BackwardWorkspace's layout).
template <class A>
__host__ __device__ inline t::BetweenSlot<A>* slots_of(t::BetweenSlot<A>* slots, int64_t bh,
                                                       t::BetweenSide side, int tile, int tiles) {
  const int per_tile = t::level_slots(tiles);
  return slots + ((2 * bh + (side == t::BetweenSide::Earlier)) * tiles + tile) * per_tile;
}

inline bool valid(const Problem& p) {
  return p.n >= 0 && p.d >= 1 && p.d <= kMaxHeadDim && p.dv >= 1 && p.dv <= kMaxHeadDim &&
         p.batch >= 0 && p.heads >= 0 && p.batch * p.heads <= 65535 && p.scale >= 0 &&
         (p.mode != Mode::FpaStraightThrough || p.tau > 0);
}

}  // namespace fpa::cuda::tiled
