// The study of attention-bench, callable in-process: forward, forward+backward and single-step
// decode time and peak extra memory of every (n, variant, implementation, pass) case, with the
// machine's matmul and memory rates from the same run. attention-bench only parses flags,
// checks memory, commits the returned table and says where it went.
#pragma once

#include "experiments/csv_writer.h"
#include "kernels/attention.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fpa::bench {

struct AttentionBenchSettings {
  std::vector<int> lengths = {256, 512, 1024};
  std::vector<Impl> impls = {Impl::Reference, Impl::Fused, Impl::Cuda};  // unbuilt ones skipped
  at::Device device{at::kCPU};  // where every case runs; impls of another device are skipped
  std::vector<Variant> variants = {Variant::Softmax, Variant::Fox, Variant::Fpa};
  std::vector<std::string> passes = {"fwd", "fwd_bwd"};  // and/or "decode"
  std::vector<FpaBackward> fpa_modes = {FpaBackward::Exact, FpaBackward::StraightThrough};
  std::vector<FpaBackward> reference_fpa_modes = fpa_modes;  // the reference's, in fwd_bwd
  int64_t head_dim = 64, heads = 4, batch = 1;
  std::string dtype = "float32";  // or "float64"
  int repeats = 5, warmup = 1;  // timed and untimed repeats of each case
  int reference_repeats = 5, reference_warmup = 1;  // the reference's (not in decode)
  int max_reference_n = 4096;  // the reference skips longer sequences
  int64_t tile = 64;           // the fused kernels' query block / key tile
  int threads = 1;             // LibTorch's and OpenBLAS's (set by the study)
  uint64_t seed = 0;
  std::string out;             // the path of the returned table
};

struct AttentionBenchResult {
  CsvWriter table;  // uncommitted: the caller commits it with its provenance
  double matmul_gflops = 0, matmul_cpu_gflops = 0;  // LibTorch's 1024^3 product, this run
  double tile_gemm_gflops = 0;                      // the fused kernels' tile product
};

// Seeds, sets the threads and installs the allocation meter (alloc_meter.h), then times every
// case; prints the machine's rates and the skipped cases to stdout, progress to stderr.
AttentionBenchResult run_attention_bench(const AttentionBenchSettings& settings);

}  // namespace fpa::bench
