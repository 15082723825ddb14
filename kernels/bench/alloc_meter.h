// Peak memory of LibTorch CPU allocations, for the benchmark's peak_extra_bytes column.
//
// install() replaces LibTorch's CPU allocator with one that forwards to malloc and counts the
// bytes live. A measurement is "peak live bytes during the pass minus live bytes before it":
// every tensor a pass creates (outputs, saved tensors, gradients, the reference's n x n
// matrices, the fused kernels' O(n) buffers). Memory obtained outside LibTorch's allocator
// (std::vector scratch inside the fused kernels, BLAS's own buffers) is not seen; the fused
// kernels report their scratch separately (fused_extra_bytes).
#pragma once

#include <cstdint>

namespace fpa::bench {

void install_alloc_meter();
int64_t live_bytes();
void reset_peak();      // peak := live
int64_t peak_bytes();

}  // namespace fpa::bench
