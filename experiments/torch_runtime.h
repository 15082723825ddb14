// LibTorch-side set-up shared by the executables: deterministic seeding, thread count and the
// allocator.
#pragma once

#include <cstdint>
#include <random>

namespace fpa {

// Seeds LibTorch's generators and returns a standard-library engine derived from the same seed.
// Same seed, same machine, same thread count: same results.
std::mt19937_64 seed_everything(uint64_t seed);
// Intra-op threads of LibTorch and, when it is OpenBLAS, of the BLAS LibTorch calls.
void set_threads(int threads);
// glibc's allocator set to keep the memory LibTorch frees for its next allocations instead of
// returning it to the kernel (the .cpp says why). Changes no number, only time.
void keep_freed_memory();
// What every tool that computes does first: set_threads, then keep_freed_memory.
void set_up_cpu(int threads);

}  // namespace fpa
