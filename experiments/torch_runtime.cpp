#include "torch_runtime.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <dlfcn.h>

namespace fpa {

std::mt19937_64 seed_everything(uint64_t seed) {
  at::manual_seed(seed);
  std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), 0x46504121u};
  return std::mt19937_64(seq);
}

namespace {

// Debian's LibTorch calls the system BLAS, whose thread count at::set_num_threads does not
// reach. OpenBLAS's pthread build otherwise runs a worker per core that spins between calls:
// an lm-train with --threads 1 used about 1.4 cores and ran 18% slower next to another job
// (same losses either way). Looked up at run time, so other BLAS builds (MKL inside a PyTorch
// LibTorch) are left alone.
void set_openblas_threads(int threads) {
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set(threads);
}

}  // namespace

void set_threads(int threads) {
  at::set_num_threads(threads);
  set_openblas_threads(threads);
}

}  // namespace fpa
