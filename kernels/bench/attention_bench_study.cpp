#include "attention_bench_study.h"

#include "alloc_meter.h"
#include "bench_timing.h"
#include "experiments/progress.h"
#include "experiments/torch_runtime.h"
#include "kernels/cpu/fused_cpu.h"
#include "kernels/cpu/fused_gemm.h"
#include "kernels/cpu/kv_cache.h"
#include "kernels/impl_choice.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>  // at::NoGradGuard (not through ATen.h in every LibTorch 2.x)
#include <fmt/format.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <utility>

namespace fpa::bench {
namespace {

// Nominal useful FLOPs of causal attention, the same for every implementation: QK^T and PV on
// the n(n+1)/2 causal pairs (2 flops per multiply-add); the backward counts 2.5x the forward
// (five products instead of two), FlashAttention's convention.
double attention_flops(int64_t batch, int64_t heads, int64_t n, int64_t d, bool backward) {
  const double pairs = double(n) * double(n + 1) / 2;
  const double fwd = 4.0 * pairs * double(d) * double(batch * heads);
  return backward ? 3.5 * fwd : fwd;
}

// Useful FLOPs of one decoding step: q.k and p.v over n cached keys per head.
double decode_flops(int64_t batch, int64_t heads, int64_t n, int64_t d) {
  return 4.0 * double(n) * double(d) * double(batch * heads);
}

// Bytes one decoding step reads from the cache: every key and value row of every head.
double decode_bytes(int64_t batch, int64_t heads, int64_t n, int64_t d, int64_t elem) {
  return 2.0 * double(n) * double(d) * double(batch * heads) * double(elem);
}

struct Problem {
  at::Tensor q, k, v, gate, dout;
};

Problem make_problem(Variant variant, int64_t batch, int64_t heads, int64_t n, int64_t d,
                     at::ScalarType dtype, const at::Device& device) {
  const auto o = at::TensorOptions().dtype(dtype).device(device);
  Problem p;
  p.q = at::randn({batch, heads, n, d}, o);
  p.k = at::randn({batch, heads, n, d}, o);
  p.v = at::randn({batch, heads, n, d}, o);
  p.dout = at::randn({batch, heads, n, d}, o);
  if (variant == Variant::Fox) p.gate = at::log_sigmoid(at::randn({batch, heads, n}, o) + 3.0);
  // A random walk: keys die and stay alive in realistic proportions.
  if (variant == Variant::Fpa) p.gate = at::cumsum(at::randn({batch, heads, n}, o), -1);
  return p;
}

void sync(const at::Tensor& t) {
  if (!t.is_cpu()) (void)t.flatten()[0].item<double>();  // waits for the device
}

struct Job {
  Variant variant;
  Impl impl;
  int64_t n;
  std::string pass;
  FpaBackward fpa_backward;
};

// Every case to time, in the table's order; notes the skipped ones on stdout.
std::vector<Job> jobs_of(const AttentionBenchSettings& s) {
  std::vector<Impl> runnable;
  const bool gpu = s.device.is_cuda();
  for (Impl i : s.impls) {
    if (!impl_available(i))
      std::cout << "attention-bench: skipping impl '" << to_string(i) << "' (not in this build)\n";
    else if (!runs_on(i, s.device.type()))
      std::cout << "attention-bench: skipping impl '" << to_string(i) << "' (runs on "
                << (gpu ? "the CPU" : "a GPU") << "; --device is " << s.device.str() << ")\n";
    else
      runnable.push_back(i);
  }
  if (gpu && std::count(s.passes.begin(), s.passes.end(), "decode") > 0)
    std::cout << "attention-bench: skipping pass 'decode' (the cached step is timed on the CPU)\n";
  std::vector<Job> jobs;
  for (int n : s.lengths)
    for (Variant v : s.variants)
      for (Impl i : runnable) {
        if (i == Impl::Reference && n > s.max_reference_n) continue;
        for (const auto& pass : s.passes) {
          if (pass == "decode" && gpu) continue;
          if (v == Variant::Fpa && pass == "fwd_bwd") {
            for (FpaBackward g : i == Impl::Reference ? s.reference_fpa_modes : s.fpa_modes)
              jobs.push_back({v, i, n, pass, g});
          } else {
            jobs.push_back({v, i, n, pass, FpaBackward::Exact});
          }
        }
      }
  for (int n : s.lengths)
    if (n > s.max_reference_n)
      std::cout << "attention-bench: reference skipped at n=" << n
                << " (> --max-reference-n " << s.max_reference_n << ")\n";
  return jobs;
}

}  // namespace

AttentionBenchResult run_attention_bench(const AttentionBenchSettings& s) {
  seed_everything(s.seed);
  set_threads(s.threads);  // LibTorch's threads and OpenBLAS's
  install_alloc_meter();
  const int64_t d = s.head_dim, heads = s.heads, batch = s.batch, tile = s.tile;
  const auto dtype = s.dtype == "float64" ? at::kDouble : at::kFloat;
  const int64_t elem = dtype == at::kDouble ? 8 : 4;
  // Every implementation through the one entry point; the fused one with the chosen tile.
  auto run_attention = [tile](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const at::Tensor& gate, const AttentionOptions& o) {
    return o.impl == Impl::Fused ? fused_attention_cpu(q, k, v, gate, o, tile)
                                 : attention(q, k, v, gate, o);
  };

  // The machine's matmul rate through LibTorch, in this run and with these threads: a square
  // product (compute-bound) and the fused kernels' own tile product.
  const auto [mm_rate, mm_cpu_rate] = matmul_gflops(1024, 1024, 1024, dtype, s.device);
  const double tile_rate = tile_gemm_gflops(tile, d);
  std::cout << fmt::format(
      "attention-bench: threads {}, tile products via {}, LibTorch matmul 1024^3 {:.1f} GFLOP/s ({:.1f} by CPU time), "
      "fused tile gemm {}x{}x{} {:.1f} GFLOP/s (float32)\n",
      s.threads, fused_gemm_backend(), mm_rate, mm_cpu_rate, tile, tile, d, tile_rate);

  const auto jobs = jobs_of(s);
  CsvWriter csv(s.out, {"variant", "impl", "n", "head_dim", "heads", "batch", "pass",
                        "median_ms", "peak_extra_bytes", "gflops", "fpa_backward", "dtype",
                        "threads", "repeats", "matmul_gflops", "tile_gemm_gflops",
                        "scratch_bytes", "median_cpu_ms", "cpu_gflops",
                        "matmul_cpu_gflops", "tile", "cache_gbps", "read_gbps"});
  Progress progress("attention-bench", int64_t(jobs.size()), "case");
  int64_t done = 0;
  for (const Job& job : jobs) {
    Problem p = make_problem(job.variant, batch, heads, job.n, d, dtype, s.device);
    AttentionOptions opts;
    opts.variant = job.variant;
    opts.impl = job.impl;
    opts.fpa_backward = job.fpa_backward;
    const bool backward = job.pass == "fwd_bwd", decode = job.pass == "decode";
    std::function<void()> pass;
    std::vector<KvCache> caches;  // decode: one per sequence, filled with the n tokens
    if (decode) {
      at::NoGradGuard no_grad;
      AttentionOptions fill = opts;
      fill.impl = Impl::Fused;
      for (int64_t b = 0; b < batch; ++b) {
        caches.emplace_back(job.variant, heads, d, d, dtype);
        const auto g = p.gate.defined() ? p.gate[b] : at::Tensor();
        (void)attention_step(p.q[b], p.k[b], p.v[b], g, caches.back(), fill);
      }
      // Each timed step appends one token (the cache grows by warmup + repeats, << n).
      const auto q1 = p.q.narrow(2, 0, 1), k1 = p.k.narrow(2, 0, 1), v1 = p.v.narrow(2, 0, 1);
      const auto g1 = p.gate.defined() ? p.gate.narrow(2, job.n - 1, 1) : at::Tensor();
      pass = [&, q1, k1, v1, g1] {
        at::NoGradGuard no_grad;
        for (int64_t b = 0; b < batch; ++b)
          (void)attention_step(q1[b], k1[b], v1[b], g1.defined() ? g1[b] : at::Tensor(),
                               caches[size_t(b)], opts);
      };
    } else if (!backward) {
      pass = [&] {
        at::NoGradGuard no_grad;
        sync(run_attention(p.q, p.k, p.v, p.gate, opts));
      };
    } else {
      auto q = p.q.clone().requires_grad_(true), k = p.k.clone().requires_grad_(true),
           v = p.v.clone().requires_grad_(true);
      auto gate = p.gate.defined() ? p.gate.clone().requires_grad_(true) : at::Tensor();
      pass = [&, q, k, v, gate] {
        std::vector<at::Tensor> inputs{q, k, v};
        if (gate.defined()) inputs.push_back(gate);
        auto out = run_attention(q, k, v, gate, opts);
        auto grads = torch::autograd::grad({out}, inputs, {p.dout});
        sync(grads[0]);
      };
    }
    const bool ref = job.impl == Impl::Reference;
    // The reference's repeat count is for its n x n passes; a decode step is cheap for both.
    const int repeats = ref && !decode ? s.reference_repeats : s.repeats;
    Timing t = measure(pass, ref && !decode ? s.reference_warmup : s.warmup, repeats);
    if (s.device.is_cuda()) t.peak_extra_bytes = -1;  // the meter sees host allocations only
    const double flops = decode ? decode_flops(batch, heads, job.n, d)
                                : attention_flops(batch, heads, job.n, d, backward);
    const double gflops = flops / (t.median_ms * 1e-3) / 1e9;
    const double cache_bytes = decode ? decode_bytes(batch, heads, job.n, d, elem) : 0.0;
    const int64_t scratch =
        job.impl == Impl::Fused && !decode
            ? fused_extra_bytes(batch, heads, job.n, d, opts, elem, backward, s.threads, tile) -
                  batch * heads * job.n * elem  // lse is a tensor: already in the measurement
            : 0;
    csv.row(to_string(job.variant), to_string(job.impl), job.n, d, heads, batch, job.pass,
            fmt::format("{:.3f}", t.median_ms), t.peak_extra_bytes, fmt::format("{:.2f}", gflops),
            job.variant == Variant::Fpa ? to_string(job.fpa_backward) : std::string("-"),
            s.dtype, s.threads, repeats,
            fmt::format("{:.2f}", mm_rate), fmt::format("{:.2f}", tile_rate), scratch,
            fmt::format("{:.3f}", t.median_cpu_ms),
            fmt::format("{:.2f}", gflops * t.median_ms / t.median_cpu_ms),
            fmt::format("{:.2f}", mm_cpu_rate), job.impl == Impl::Fused ? tile : 0,
            decode ? fmt::format("{:.2f}", cache_bytes / (t.median_cpu_ms * 1e-3) / 1e9) : "",
            decode ? fmt::format("{:.2f}", read_gbps(cache_bytes)) : "");
    progress.update(++done, fmt::format("{} {} n={} {} {:.1f} ms", to_string(job.variant),
                                        to_string(job.impl), job.n, job.pass, t.median_ms));
  }
  progress.finish();
  return {std::move(csv), mm_rate, mm_cpu_rate, tile_rate};
}

}  // namespace fpa::bench
