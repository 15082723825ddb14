// LibTorch-side set-up shared by the executables: deterministic seeding and thread count.
#pragma once

#include <cstdint>
#include <random>

namespace fpa {

// Seeds LibTorch's generators and returns a standard-library engine derived from the same seed.
// Same seed, same machine, same thread count: same results.
std::mt19937_64 seed_everything(uint64_t seed);
// Intra-op threads of LibTorch and, when it is OpenBLAS, of the BLAS LibTorch calls.
void set_threads(int threads);

}  // namespace fpa
