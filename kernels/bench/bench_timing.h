// How attention-bench measures: the median wall and CPU time of a pass repeated, its peak extra
// memory (alloc_meter.h), and the machine's own rates in the same run (a LibTorch matmul, the
// fused kernels' tile product, a plain read of memory) for the pass's rates to be read against.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <utility>

namespace fpa::bench {

struct Timing {
  double median_ms = 0;      // wall clock
  double median_cpu_ms = 0;  // CPU time of the whole process (all threads)
  int64_t peak_extra_bytes = 0;
};

// Runs `pass` warmup + repeats times; returns the median time and the largest peak extra memory.
Timing measure(const std::function<void()>& pass, int warmup, int repeats);

// GFLOP/s of one LibTorch matmul of (m x k) by (k x n) on `device`, median of a few, same
// threads: {by wall time, by CPU time} (on a GPU each product waits for the device).
std::pair<double, double> matmul_gflops(int64_t m, int64_t k, int64_t n, at::ScalarType dtype,
                                        const at::Device& device = at::kCPU);

// GFLOP/s of the fused kernels' tile product (t x t x d, through fused_gemm).
double tile_gemm_gflops(int64_t t, int64_t d);

// GB/s of reading `bytes` once (a sum over a buffer of that size, median of a few passes after
// one warm-up, as a step re-reads a cache it read a moment ago): the rate a step whose time is
// all memory traffic would reach, for the decode rows' cache_gbps to be read against.
double read_gbps(double bytes);

}  // namespace fpa::bench
