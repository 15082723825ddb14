#include "torch_runtime.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

namespace fpa {

std::mt19937_64 seed_everything(uint64_t seed) {
  at::manual_seed(seed);
  std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), 0x46504121u};
  return std::mt19937_64(seq);
}

void set_threads(int threads) {
  at::set_num_threads(threads);
}

}  // namespace fpa
