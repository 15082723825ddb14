// Runs CUDA kernel source on the CPU, for a machine without a GPU: include this first, then the
// kernels' headers (kernels/cuda/tiled_forward.cuh, tiled_backward.cuh), all compiled by g++.
//
// The execution model emulated: a launch runs its blocks one after another; a block runs its
// threads as fibers (ucontext, one OS thread). Between two __syncthreads the block's warps run one
// after another, each as far as it goes (to the barrier or its end), and within a warp the lanes
// one after another up to the warp's next collective (shuffle, ldmatrix, mma, a wmma load or
// store), which every lane of that warp must reach before any goes on. So a thread reads what
// the others wrote before a barrier, or, within its warp, before a collective, as on the GPU.
// __shared__ variables are static (one copy, used by one block at a time, so a block starts with
// the previous block's values, which the schedule's block order changes); dynamic shared memory
// is a fresh buffer per block of all-ones bytes (NaN in every floating type: undefined on a GPU,
// so a kernel that reads it before writing it shows). Memory is host memory: the "device
// pointers" the launchers take are ordinary pointers.
//
// The order of blocks, warps and lanes is `fpa_emu::schedule`: ascending (the default) or
// descending. A kernel that reads another thread's shared-memory write without a barrier (or,
// within a warp, a collective) between them reads the value before the write in one order and
// after it in the other, so running a kernel in both orders and comparing the bits finds such a
// race, on the inputs given (tests/test_tiled_emulated.cpp does, for every tiled kernel).
// cp.async copies (kernels/cuda/mma_fragments.cuh) land when their thread waits for their group:
// until then the destination holds all-ones bytes (a NaN in every floating type), so a read
// before the wait, or a copy issued into a buffer that another thread still reads, shows.
//
// What it checks: indexing, the tile order, the barriers (a block whose threads do not all reach
// the same barriers is reported and aborts, where a GPU would hang or misbehave), races as above,
// and the arithmetic of the kernel source itself. What it cannot: timing, the hardware's own
// orders (a race on values that happen to be equal goes unseen), and nvcc's code generation (FMA
// contraction).
#pragma once

#define FPA_CUDA_EMULATION 1

// Before the CUDA headers, which define these as nothing for a host compiler unless defined.
#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __launch_bounds__(...)

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>  // dim3, uint3, cudaStream_t (types only; nothing of it is called)
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

using std::max;  // CUDA's device min/max overloads
using std::min;

namespace fpa_emu {

inline uint3 thread_idx{0, 0, 0};
inline uint3 block_idx{0, 0, 0};
inline dim3 block_dim{1, 1, 1};
// A block's dynamic shared memory: exactly the bytes the launch asked for, 128-byte aligned
// (posix_memalign), so that under AddressSanitizer (scripts/sanitize-emulated.sh) a kernel that
// reads or writes past what its launcher asked for is reported.
struct SmemBuffer {
  unsigned char* data = nullptr;
  SmemBuffer() = default;
  SmemBuffer(const SmemBuffer&) = delete;
  SmemBuffer& operator=(const SmemBuffer&) = delete;
  ~SmemBuffer() { std::free(data); }
  void assign(size_t size, unsigned char byte) {
    std::free(data);
    void* p = nullptr;
    if (posix_memalign(&p, 128, size > 0 ? size : 1) != 0) std::abort();
    data = static_cast<unsigned char*>(p);
    std::memset(data, byte, size);
  }
};
inline SmemBuffer* dynamic_smem = nullptr;
inline size_t max_dynamic_smem = 227 * 1024;  // sm_90's; a test may lower it (sm_80: 163 KB)

// The order in which a launch's blocks, a block's warps and a warp's lanes run (see the top).
enum class Schedule { Ascending, Descending };
inline Schedule schedule = Schedule::Ascending;

// A cp.async copy in flight: its destination, the 8 or 16 bytes it will write (the source as it
// was when the copy was issued, or zeros), and its group (-1 until committed).
struct AsyncCopy {
  unsigned char* dst;
  unsigned char bytes[16];
  int size;
  long group;
};

// The fibers of one block and their scheduler.
struct Block {
  enum State { Running, AtBarrier, AtWarpSync, Done };
  ucontext_t scheduler;
  std::vector<ucontext_t> fibers;
  std::vector<State> state;
  std::vector<std::vector<AsyncCopy>> copies;  // per thread, in order of issue
  std::vector<long> groups;                    // per thread: groups committed so far
  int current = 0;
};

// Fiber stacks, allocated once and reused by every block (allocating and touching 64 fresh
// stacks per block made the test spend most of its time in the kernel, faulting pages in).
constexpr size_t kFiberStack = 256 * 1024;
inline char* fiber_stack(unsigned t) {
  static std::vector<std::unique_ptr<char[]>> stacks;
  while (stacks.size() <= t) stacks.emplace_back(new char[kFiberStack]);
  return stacks[t].get();
}
inline Block* block = nullptr;

// __syncthreads: back to the scheduler until every thread of the block is here.
inline void sync_threads() {
  block->state[block->current] = Block::AtBarrier;
  swapcontext(&block->fibers[block->current], &block->scheduler);
}
// A warp collective's meeting point: back to the scheduler until every lane of the warp is here.
inline void warp_sync() {
  block->state[block->current] = Block::AtWarpSync;
  swapcontext(&block->fibers[block->current], &block->scheduler);
}

// cp.async (16 bytes: cp.async.cg.shared.global; 8: .ca; `copy` false zero-fills),
// commit_group and wait_group: the bytes land at the wait that covers their group (the newest
// `pending` committed groups stay in flight; uncommitted copies too, as in PTX); until then the
// destination holds all-ones bytes. Both addresses must be aligned to the size, as PTX requires.
inline void cp_async(void* dst, const void* src, int size, bool copy) {
  const auto misaligned = [&](const void* x) { return reinterpret_cast<uintptr_t>(x) % size; };
  if (misaligned(dst) || (copy && misaligned(src))) {
    std::fprintf(stderr, "cuda emulation: cp.async of %d bytes from %p to %p, not aligned\n",
                 size, src, dst);
    std::abort();
  }
  AsyncCopy c{static_cast<unsigned char*>(dst), {}, size, -1};
  if (copy) std::memcpy(c.bytes, src, size_t(size));
  std::memset(dst, 0xff, size_t(size));
  block->copies[block->current].push_back(c);
}
inline void cp_async_commit() {
  const long g = block->groups[block->current]++;
  for (AsyncCopy& c : block->copies[block->current])
    if (c.group < 0) c.group = g;
}
inline void cp_async_wait(int pending) {
  auto& mine = block->copies[block->current];
  const long landed = block->groups[block->current] - pending;  // groups [0, landed) complete
  std::vector<AsyncCopy> in_flight;
  for (const AsyncCopy& c : mine) {
    if (c.group >= 0 && c.group < landed) std::memcpy(c.dst, c.bytes, size_t(c.size));
    else in_flight.push_back(c);
  }
  mine.swap(in_flight);
}

inline std::function<void()>* fiber_body = nullptr;
inline void fiber_entry() {
  (*fiber_body)();
  block->state[block->current] = Block::Done;  // uc_link returns to the scheduler
}

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "cuda emulation: block (%u,%u): %s\n", block_idx.x, block_idx.y, what);
  std::abort();
}

// Runs warp w's lanes (in the schedule's order) until each is at the block barrier or done,
// meeting at every warp collective on the way.
inline void run_warp(Block& b, unsigned w, unsigned threads) {
  const unsigned first = 32 * w, lanes = std::min(32u, threads - first);
  for (;;) {
    for (unsigned i = 0; i < lanes; ++i) {
      const unsigned t = first + (schedule == Schedule::Ascending ? i : lanes - 1 - i);
      if (b.state[t] != Block::Running) continue;
      b.current = int(t);
      thread_idx = uint3{t % block_dim.x, (t / block_dim.x) % block_dim.y,
                         t / (block_dim.x * block_dim.y)};
      swapcontext(&b.scheduler, &b.fibers[t]);
    }
    const auto begin = b.state.begin() + first, end = begin + lanes;
    const auto at_collective = std::count(begin, end, Block::AtWarpSync);
    if (at_collective == 0) return;
    if (at_collective != long(lanes))
      fail("some lanes of a warp at a warp collective, the others at a barrier or returned");
    std::fill(begin, end, Block::Running);
  }
}

// Runs one block: each warp to the next barrier, then all of them on, until all are done.
inline void run_block(unsigned threads, std::function<void()>& body) {
  Block b;
  b.fibers.resize(threads);
  b.state.assign(threads, Block::Running);
  b.copies.resize(threads);
  b.groups.assign(threads, 0);
  block = &b;
  fiber_body = &body;
  for (unsigned t = 0; t < threads; ++t) {
    getcontext(&b.fibers[t]);
    b.fibers[t].uc_stack.ss_sp = fiber_stack(t);
    b.fibers[t].uc_stack.ss_size = kFiberStack;
    b.fibers[t].uc_link = &b.scheduler;
    makecontext(&b.fibers[t], fiber_entry, 0);
  }
  const unsigned warps = (threads + 31) / 32;
  for (;;) {
    for (unsigned i = 0; i < warps; ++i)
      run_warp(b, schedule == Schedule::Ascending ? i : warps - 1 - i, threads);
    const auto waiting = std::count(b.state.begin(), b.state.end(), Block::AtBarrier);
    if (waiting == 0) break;  // all done
    if (waiting != int(threads)) fail("some threads at a barrier, the others returned");
    std::fill(b.state.begin(), b.state.end(), Block::Running);
  }
  block = nullptr;
}

inline dim3 as_dim3(dim3 d) { return d; }
inline dim3 as_dim3(unsigned x) { return dim3(x); }
inline dim3 as_dim3(int x) { return dim3(unsigned(x)); }

template <class Kernel, class... Args>
void launch(Kernel kernel, dim3 grid, dim3 block_shape, size_t smem, Args... args) {
  block_dim = block_shape;
  const unsigned threads = block_shape.x * block_shape.y * block_shape.z;
  SmemBuffer buffer;
  dynamic_smem = &buffer;
  std::function<void()> body = [&] { kernel(args...); };
  const unsigned blocks = grid.x * grid.y * grid.z;
  for (unsigned i = 0; i < blocks; ++i) {
    // Blocks in the schedule's order too: a static __shared__ read before it is written holds
    // the previous block's values, and which block that is depends on the order.
    const unsigned b = schedule == Schedule::Ascending ? i : blocks - 1 - i;
    block_idx = uint3{b % grid.x, (b / grid.x) % grid.y, b / (grid.x * grid.y)};
    buffer.assign(smem, 0xff);  // undefined on a GPU: NaN bytes here
    run_block(threads, body);
  }
}

inline unsigned char* aligned_smem() { return dynamic_smem->data; }

}  // namespace fpa_emu


// ---- nvcuda::wmma: 16 x 16 x 16 (bf16 / fp16) and 16 x 16 x 8 (TF32) -------------------------
// A warp's fragment is spread over its 32 threads on a GPU, in a layout the API leaves open; here
// the warp's last thread (lane 31) holds the whole tile (x[row * cols + col]; matrix_a is 16 x K,
// matrix_b K x 16, the accumulator 16 x 16), computes the whole product and does the warp's
// store; the other lanes only check the arguments (their fragments, zeros, mean nothing: the
// kernels never read a fragment's elements, and their element-wise loops, such as the rounding
// to TF32, run on every lane as on the GPU). A load or a store is a warp collective: every lane
// of the warp reaches it before lane 31 reads or writes the tile, so it sees every lane's
// earlier writes; a store's tile is written when lane 31 gets there, so another lane reading it
// without a barrier in between reads it before or after the store depending on the schedule,
// as on a GPU, where each lane stores its own part. The API's preconditions are checked: 32-byte
// aligned pointers, ldm a multiple of 16 bytes.
//
// TF32 (wmma::precision::tf32, K = 8, fp32 in memory and in the fragments): __float_to_tf32 is
// emulated as PTX's cvt.rna.tf32.f32, which the CUDA header's wmma::__float_to_tf32 uses: round
// to nearest, ties away from zero, keeping 10 of fp32's 23 mantissa bits (the low 13 bits
// zero; the exponent range stays fp32's; infinities and NaNs unchanged; a value rounding past
// the largest finite fp32 becomes infinite). The tensor cores read only those 19 bits of each
// element, so the emulated mma_sync aborts on a fragment element that was not rounded: the
// kernels must round every fragment they load (leaving it out would truncate on a GPU). The
// products of rounded values are exact in fp32 and are summed in fp32, in order of k after the
// accumulator's value; a GPU adds them in an order of its own (and with its own rounding inside
// the tensor core), so the emulated and the real TF32 results agree to the TF32 tolerance, not
// bit for bit.
namespace nvcuda::wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32 {};
}  // namespace precision

template <class T> struct storage_of { using type = T; };
template <> struct storage_of<precision::tf32> { using type = float; };

template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment {
  static_assert(M == 16 && N == 16 && (K == 16 || K == 8),
                "the emulation has 16 x 16 x 16 and 16 x 16 x 8 only");
  static_assert(K == 16 || std::is_same_v<T, precision::tf32> ||
                    (std::is_same_v<Use, accumulator> && std::is_same_v<T, float>),
                "16 x 16 x 8 is TF32's shape");
  using element_type = typename storage_of<T>::type;
  static constexpr int rows = std::is_same_v<Use, matrix_b> ? K : 16;
  static constexpr int cols = std::is_same_v<Use, matrix_a> ? K : 16;
  static constexpr int num_elements = rows * cols;
  element_type x[rows * cols] = {};
};

// wmma::__float_to_tf32 (cvt.rna.tf32.f32): see above.
inline float __float_to_tf32(float in) {
  uint32_t u;
  std::memcpy(&u, &in, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u) return in;  // inf, NaN
  u = (u + 0x1000u) & 0xffffe000u;  // half of the last kept bit added to the magnitude
  float out;
  std::memcpy(&out, &u, sizeof out);
  return out;
}
inline bool is_tf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return (u & 0x1fffu) == 0 || std::isnan(x);
}

// Meets the warp's other lanes and checks the arguments; true on the lane that does the warp's
// work.
template <class T> inline bool check_tile(const T* p, unsigned ldm) {
  ::fpa_emu::warp_sync();
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0 || (ldm * sizeof(T)) % 16 != 0) {
    std::fprintf(stderr, "cuda emulation: wmma tile at %p with ldm %u breaks the alignment rules\n",
                 static_cast<const void*>(p), ldm);
    std::abort();
  }
  return ::fpa_emu::thread_idx.x % 32 == 31;
}
inline bool warp_lane() { return ::fpa_emu::thread_idx.x % 32 == 31; }
inline float as_float(float x) { return x; }
inline float as_float(__half x) { return __half2float(x); }
inline float as_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class F, class V> void fill_fragment(F& f, V v) {
  if (!warp_lane()) return;
  for (auto& e : f.x) e = v;
}
// matrix_a and matrix_b: element (r, c) at p[r * ldm + c] (row_major) or p[c * ldm + r].
template <class Use, int K, class T, class Layout>
void load_matrix_sync(fragment<Use, 16, 16, K, T, Layout>& f,
                      const typename fragment<Use, 16, 16, K, T, Layout>::element_type* p,
                      unsigned ldm) {
  using F = fragment<Use, 16, 16, K, T, Layout>;
  static_assert(std::is_same_v<Layout, row_major> || std::is_same_v<Layout, col_major>);
  if (!check_tile(p, ldm)) return;
  for (int r = 0; r < F::rows; ++r)
    for (int c = 0; c < F::cols; ++c)
      f.x[r * F::cols + c] = std::is_same_v<Layout, row_major> ? p[r * ldm + c] : p[c * ldm + r];
}
template <int K>
void load_matrix_sync(fragment<accumulator, 16, 16, K, float>& f, const float* p, unsigned ldm,
                      layout_t layout) {
  if (!check_tile(p, ldm)) return;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      f.x[i * 16 + j] = layout == mem_row_major ? p[i * ldm + j] : p[j * ldm + i];
}
template <int K>
void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, K, float>& f, unsigned ldm,
                       layout_t layout) {
  if (!check_tile(p, ldm)) return;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      (layout == mem_row_major ? p[i * ldm + j] : p[j * ldm + i]) = f.x[i * 16 + j];
}
template <int K, class T, class LA, class LB>
void mma_sync(fragment<accumulator, 16, 16, K, float>& d,
              const fragment<matrix_a, 16, 16, K, T, LA>& a,
              const fragment<matrix_b, 16, 16, K, T, LB>& b,
              const fragment<accumulator, 16, 16, K, float>& c) {
  if (!warp_lane()) return;
  if constexpr (std::is_same_v<T, precision::tf32>) {
    for (int e = 0; e < 16 * K; ++e)
      if (!is_tf32(a.x[e]) || !is_tf32(b.x[e])) {
        std::fprintf(stderr, "cuda emulation: a TF32 fragment element not rounded to TF32 "
                     "(wmma::__float_to_tf32) before mma_sync\n");
        std::abort();
      }
  }
  float out[256];
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      float s = c.x[i * 16 + j];
      for (int k = 0; k < K; ++k) s += as_float(a.x[i * K + k]) * as_float(b.x[k * 16 + j]);
      out[i * 16 + j] = s;
    }
  for (int e = 0; e < 256; ++e) d.x[e] = out[e];
}
}  // namespace nvcuda::wmma

// ---- warp-level register exchange: __shfl_xor_sync and mma.sync m16n8k16 ---------------------
// On a GPU the 32 lanes of a warp exchange registers in one instruction. Here every lane writes
// its registers into the warp's exchange slots, the warp's lanes meet (warp_sync), each reads
// what it needs, and they meet again before the slots are reused. So a kernel must reach these
// collectives on every lane of a warp, the same number of times (warp-uniform code, as PTX's
// .sync.aligned instructions require); otherwise the scheduler reports the mismatch and aborts.
// The m16n8k16 fragment layout is PTX's (ISA, "Matrix Fragments for mma.m16n8k16"): with
// g = lane / 4 and q = lane % 4, A (16 x 16, row-major) reg0 = rows g, columns 2q, 2q + 1;
// reg1 = row g + 8; reg2 = row g, columns + 8; reg3 = row g + 8, columns + 8. B (16 x 8,
// "col"): reg0 = rows (k) 2q, 2q + 1 of column g; reg1 = rows + 8. C and D (16 x 8, fp32):
// c0, c1 = row g, columns 2q, 2q + 1; c2, c3 = row g + 8. Each 32-bit register holds two 16-bit
// elements, the lower index in the low half. Products summed in fp32 in order of k after C; a
// tensor core adds in an order of its own, so the emulated and the real results agree to fp32
// rounding, not bit for bit.
namespace fpa_emu {
constexpr unsigned kMaxThreads = 1024;
inline float as_float_of(__half x) { return __half2float(x); }
inline float as_float_of(__nv_bfloat16 x) { return __bfloat162float(x); }
inline unsigned linear_thread() { return unsigned(block->current); }
template <class V> V shfl_xor(V v, int lane_mask) {
  static_assert(sizeof(V) <= sizeof(uint64_t));
  static uint64_t slot[kMaxThreads];
  const unsigned t = linear_thread();
  std::memcpy(&slot[t], &v, sizeof v);
  warp_sync();
  V out;
  std::memcpy(&out, &slot[(t & ~31u) | ((t % 32) ^ unsigned(lane_mask))], sizeof out);
  warp_sync();
  return out;
}
template <class T> float half_of(uint32_t reg, int which) {
  const uint16_t bits = uint16_t(which ? reg >> 16 : reg & 0xffffu);
  T x;
  std::memcpy(&x, &bits, sizeof x);
  return as_float_of(x);
}
template <class T>
void mma_m16n8k16(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  struct Regs { uint32_t a[4], b[2]; float c[4]; };
  static Regs slot[kMaxThreads];
  const unsigned t = linear_thread(), warp0 = t & ~31u, lane = t % 32;
  Regs mine;
  std::memcpy(mine.a, a, sizeof mine.a);
  std::memcpy(mine.b, b, sizeof mine.b);
  std::memcpy(mine.c, c, sizeof mine.c);
  slot[t] = mine;
  warp_sync();
  auto a_at = [&](int row, int k) {  // A (row, k) from the lane and register holding it
    const Regs& r = slot[warp0 + (row % 8) * 4 + (k % 8) / 2];
    return half_of<T>(r.a[(row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0)], k % 2);
  };
  auto b_at = [&](int k, int col) {
    const Regs& r = slot[warp0 + col * 4 + (k % 8) / 2];
    return half_of<T>(r.b[k >= 8 ? 1 : 0], k % 2);
  };
  float d[4];
  for (int i = 0; i < 4; ++i) {
    const int row = int(lane / 4) + (i >= 2 ? 8 : 0), col = int(lane % 4) * 2 + (i % 2);
    float s = mine.c[i];
    for (int k = 0; k < 16; ++k) s += a_at(row, k) * b_at(k, col);
    d[i] = s;
  }
  warp_sync();
  std::memcpy(c, d, sizeof d);
}
// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: four 8 x 8 matrices of 16-bit elements,
// lane l giving the address of row l % 8 of matrix l / 8 (16 contiguous bytes, 16-byte
// aligned: checked). Register i of lane t: matrix i's (row t / 4, columns 2 (t % 4), + 1), or
// with trans its (rows 2 (t % 4), + 1, column t / 4); the lower index in the low half.
inline void ldmatrix_x4(uint32_t (&r)[4], const void* row_address, bool trans) {
  static const unsigned char* slot[kMaxThreads];
  const unsigned t = linear_thread(), warp0 = t & ~31u, lane = t % 32;
  if (reinterpret_cast<uintptr_t>(row_address) % 16 != 0) {
    std::fprintf(stderr, "cuda emulation: ldmatrix row address %p not 16-byte aligned\n", row_address);
    std::abort();
  }
  slot[t] = static_cast<const unsigned char*>(row_address);
  warp_sync();
  uint32_t out[4];
  for (int i = 0; i < 4; ++i) {
    uint16_t lo, hi;
    if (!trans) {
      const unsigned char* row = slot[warp0 + 8 * i + lane / 4];
      std::memcpy(&lo, row + 2 * (2 * (lane % 4)), 2);
      std::memcpy(&hi, row + 2 * (2 * (lane % 4) + 1), 2);
    } else {
      std::memcpy(&lo, slot[warp0 + 8 * i + 2 * (lane % 4)] + 2 * (lane / 4), 2);
      std::memcpy(&hi, slot[warp0 + 8 * i + 2 * (lane % 4) + 1] + 2 * (lane / 4), 2);
    }
    out[i] = uint32_t(lo) | (uint32_t(hi) << 16);
  }
  warp_sync();
  std::memcpy(r, out, sizeof out);
}
}  // namespace fpa_emu
template <class T> T __shfl_xor_sync(unsigned, T v, int lane_mask, int = 32) {
  return ::fpa_emu::shfl_xor(v, lane_mask);
}

#define threadIdx (::fpa_emu::thread_idx)
#define blockIdx (::fpa_emu::block_idx)
#define blockDim (::fpa_emu::block_dim)
#define __syncthreads() (::fpa_emu::sync_threads())
#define FPA_DYNAMIC_SMEM(name) unsigned char* name = ::fpa_emu::aligned_smem()
#define FPA_LAUNCH(kernel, grid, block, smem, stream, ...)                                   \
  ::fpa_emu::launch(kernel, ::fpa_emu::as_dim3(grid), ::fpa_emu::as_dim3(block), smem,      \
                    __VA_ARGS__)
#define FPA_ALLOW_SMEM(kernel, bytes) 0
#define FPA_LAST_STATUS() 0
#define FPA_MAX_DYNAMIC_SMEM() (::fpa_emu::max_dynamic_smem)
