// Runs CUDA kernel source on the CPU, for a machine without a GPU: include this first, then the
// kernels' headers (kernels/cuda/tiled_forward.cuh, tiled_backward.cuh), all compiled by g++.
//
// The execution model emulated: a launch runs its blocks one after another; a block runs its
// threads as std::threads (the same ones for every block of a launch) that meet at every
// __syncthreads (a barrier), so a thread reads what the others wrote before the barrier, as on
// the GPU. __shared__ variables are static (one copy,
// used by one block at a time); dynamic shared memory is a fresh buffer per block. Memory is
// host memory: the "device pointers" the launchers take are ordinary pointers.
//
// What it checks: indexing, the tile order, the barriers (a thread that leaves before a barrier
// the others wait at hangs the test, as it would hang the GPU) and the arithmetic of the kernel
// source itself. What it cannot: warp-level behaviour, timing, races that happen to resolve the
// same way here, and nvcc's own code generation (FMA contraction, fast math).
#pragma once

#define FPA_CUDA_EMULATION 1

// Before the CUDA headers, which define these as nothing for a host compiler unless defined.
#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __launch_bounds__(...)

#include <cuda_runtime.h>  // dim3, cudaStream_t (types only; nothing of it is called)

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

using std::max;  // CUDA's device min/max overloads
using std::min;

namespace fpa_emu {

class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const unsigned generation = generation_;
    if (++waiting_ == count_) {
      waiting_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation != generation_; });
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_, waiting_ = 0;
  unsigned generation_ = 0;
};

inline thread_local uint3 thread_idx{0, 0, 0};
inline uint3 block_idx{0, 0, 0};
inline dim3 block_dim{1, 1, 1};
inline Barrier* barrier = nullptr;
inline std::vector<unsigned char>* dynamic_smem = nullptr;

inline dim3 as_dim3(dim3 d) { return d; }
inline dim3 as_dim3(unsigned x) { return dim3(x); }
inline dim3 as_dim3(int x) { return dim3(unsigned(x)); }

// One launch: `threads` std::threads, started once, run every block in turn; between blocks
// they meet at the barrier, and thread 0 moves blockIdx and renews the dynamic shared memory.
template <class Kernel, class... Args>
void launch(Kernel kernel, dim3 grid, dim3 block, size_t smem, Args... args) {
  const unsigned threads = block.x * block.y * block.z;
  const unsigned blocks = grid.x * grid.y * grid.z;
  block_dim = block;
  Barrier b{int(threads)};
  barrier = &b;
  std::vector<unsigned char> buffer;
  dynamic_smem = &buffer;
  auto block_at = [&](unsigned i) {
    return uint3{i % grid.x, (i / grid.x) % grid.y, i / (grid.x * grid.y)};
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      thread_idx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
      for (unsigned i = 0; i < blocks; ++i) {
        if (t == 0) {
          block_idx = block_at(i);
          buffer.assign(smem + 16, 0);
        }
        b.wait();  // the block's index and memory are set
        kernel(args...);
        b.wait();  // every thread has left the block
      }
    });
  for (auto& th : pool) th.join();
}

inline unsigned char* aligned_smem() {
  auto p = reinterpret_cast<uintptr_t>(dynamic_smem->data());
  return reinterpret_cast<unsigned char*>((p + 15) / 16 * 16);
}

}  // namespace fpa_emu

#define threadIdx (::fpa_emu::thread_idx)
#define blockIdx (::fpa_emu::block_idx)
#define blockDim (::fpa_emu::block_dim)
#define __syncthreads() (::fpa_emu::barrier->wait())
#define FPA_DYNAMIC_SMEM(name) unsigned char* name = ::fpa_emu::aligned_smem()
#define FPA_LAUNCH(kernel, grid, block, smem, stream, ...)                                   \
  ::fpa_emu::launch(kernel, ::fpa_emu::as_dim3(grid), ::fpa_emu::as_dim3(block), smem,      \
                    __VA_ARGS__)
#define FPA_ALLOW_SMEM(kernel, bytes) 0
#define FPA_LAST_STATUS() 0
