// attention-bench: forward and forward+backward time and peak extra memory of every attention
// implementation (reference, fused, cuda when built) for softmax, FoX and FPA, next to the
// matrix-multiply rate LibTorch reaches in the same run. Pass `decode` times one step of the
// cached operator (kernels/cpu/kv_cache.h): one new token against a cache of n keys per head. Writes results/bench/attention.csv
// (SPEC section 7 columns first) with a provenance sidecar.
#include "alloc_meter.h"
#include "experiments/cli.h"
#include "experiments/csv_writer.h"
#include "experiments/progress.h"
#include "experiments/torch_runtime.h"
#include "kernels/attention.h"
#include "kernels/cpu/fused_cpu.h"
#include "kernels/cpu/fused_gemm.h"
#include "kernels/cpu/kv_cache.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <ctime>
#include <chrono>
#include <functional>
#include <iostream>
#include <vector>

namespace fpa {
namespace {

using Clock = std::chrono::steady_clock;

struct Timing {
  double median_ms = 0;      // wall clock
  double median_cpu_ms = 0;  // CPU time of the whole process (all threads)
  int64_t peak_extra_bytes = 0;
};

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Process CPU time: on a shared machine the wall clock includes time spent waiting for a core;
// with one thread, CPU time is close to the wall time the pass would take on an idle machine.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const size_t m = x.size();
  return m % 2 ? x[m / 2] : 0.5 * (x[m / 2 - 1] + x[m / 2]);
}

// Runs `pass` warmup + repeats times; returns the median time and the largest peak extra memory.
Timing measure(const std::function<void()>& pass, int warmup, int repeats) {
  for (int r = 0; r < warmup; ++r) pass();
  std::vector<double> ms, cpu;
  int64_t peak = 0;
  for (int r = 0; r < repeats; ++r) {
    const int64_t before = bench::live_bytes();
    bench::reset_peak();
    const double c0 = cpu_ms();
    const auto t0 = Clock::now();
    pass();
    ms.push_back(ms_since(t0));
    cpu.push_back(cpu_ms() - c0);
    peak = std::max(peak, bench::peak_bytes() - before);
  }
  return {median(ms), median(cpu), peak};
}

// Nominal useful FLOPs of causal attention, the same for every implementation: QK^T and PV on
// the n(n+1)/2 causal pairs (2 flops per multiply-add); the backward counts 2.5x the forward
// (five products instead of two), FlashAttention's convention.
double attention_flops(int64_t batch, int64_t heads, int64_t n, int64_t d, bool backward) {
  const double pairs = double(n) * double(n + 1) / 2;
  const double fwd = 4.0 * pairs * double(d) * double(batch * heads);
  return backward ? 3.5 * fwd : fwd;
}

// GFLOP/s of one LibTorch matmul of (m x k) by (k x n), median of a few, same threads:
// {by wall time, by CPU time}.
std::pair<double, double> matmul_gflops(int64_t m, int64_t k, int64_t n, at::ScalarType dtype) {
  auto a = at::randn({m, k}, at::TensorOptions().dtype(dtype));
  auto b = at::randn({k, n}, at::TensorOptions().dtype(dtype));
  const Timing t = measure([&] { (void)at::matmul(a, b); }, 1, 7);
  const double flops = 2.0 * double(m * k * n);
  return {flops / (t.median_ms * 1e-3) / 1e9, flops / (t.median_cpu_ms * 1e-3) / 1e9};
}

// GFLOP/s of the fused kernels' tile product (t x t x d, through fused_gemm).
double tile_gemm_gflops(int64_t t, int64_t d) {
  const int64_t reps = 2000 * 64 * 64 / (t * t);
  std::vector<float> a(t * d, 0.5f), b(t * d, 0.25f), c(t * t);
  const auto t0 = Clock::now();
  for (int64_t r = 0; r < reps; ++r)
    fused::gemm_nt<float>(t, t, d, 1.0f, a.data(), d, b.data(), d, 0.0f, c.data(), t);
  return 2.0 * double(t * t * d * reps) / (ms_since(t0) * 1e-3) / 1e9;
}

// Useful FLOPs of one decoding step: q.k and p.v over n cached keys per head.
double decode_flops(int64_t batch, int64_t heads, int64_t n, int64_t d) {
  return 4.0 * double(n) * double(d) * double(batch * heads);
}

// Bytes one decoding step reads from the cache: every key and value row of every head.
double decode_bytes(int64_t batch, int64_t heads, int64_t n, int64_t d, int64_t elem) {
  return 2.0 * double(n) * double(d) * double(batch * heads) * double(elem);
}

// GB/s of reading `bytes` once (a sum over a buffer of that size, median of a few passes after
// one warm-up, as a step re-reads a cache it read a moment ago): the rate a step whose time is
// all memory traffic would reach, for the decode rows' cache_gbps to be read against.
double read_gbps(double bytes) {
  std::vector<float> buf(static_cast<size_t>(bytes / sizeof(float)), 1.0f);
  volatile float sink = 0;  // the sum is stored, so the reads cannot be optimised away
  const Timing t = measure([&] {
    float acc[8] = {};
    const size_t m = buf.size() / 8 * 8;
    for (size_t i = 0; i < m; i += 8)
      for (int l = 0; l < 8; ++l) acc[l] += buf[i + size_t(l)];
    float total = 0;
    for (float a : acc) total += a;
    sink = total;
  }, 1, 9);
  return bytes / (t.median_cpu_ms * 1e-3) / 1e9;
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

}  // namespace
}  // namespace fpa

int main(int argc, char** argv) {
  using namespace fpa;
  Cli cli("attention-bench",
          "time and memory of the attention implementations (reference, fused, cuda)",
          "results/bench/attention.csv");
  cli.add()
      ("quick", po::bool_switch(),
       "small profile: n in {256,512,1024}, 3 repeats, the reference timed once (< 1 minute)")
      ("lengths", po::value<std::string>(),
       "sequence lengths (default 256,512,1024,2048,4096,8192; with --quick 256,512,1024)")
      ("impls", po::value<std::string>()->default_value("reference,fused,cuda"),
       "implementations (those not in this build are skipped with a note)")
      ("variants", po::value<std::string>()->default_value("softmax,fox,fpa"), "variants")
      ("passes", po::value<std::string>()->default_value("fwd,fwd_bwd"), "fwd, fwd_bwd and/or decode (one cached step after n tokens; CPU impls)")
      ("fpa-backward", po::value<std::string>()->default_value("exact,straight-through"),
       "FPA backward modes to time in fwd_bwd (exact, straight-through)")
      ("head-dim", po::value<int>()->default_value(64), "head dimension")
      ("heads", po::value<int>()->default_value(4), "heads")
      ("batch", po::value<int>()->default_value(1), "batch size")
      ("dtype", po::value<std::string>()->default_value("float32"), "float32 or float64")
      ("repeats", po::value<int>()->default_value(5), "timed repeats (median reported)")
      ("warmup", po::value<int>()->default_value(1), "untimed repeats first")
      ("reference-repeats", po::value<int>()->default_value(0),
       "timed repeats of the reference (0: as --repeats); it is slow and only a baseline")
      ("reference-warmup", po::value<int>()->default_value(-1),
       "untimed reference repeats first (-1: as --warmup)")
      ("reference-fpa-backward", po::value<std::string>(),
       "FPA backward modes for the reference (default: as --fpa-backward)")
      ("tile", po::value<int>()->default_value(int(kFusedTile)),
       "query block / key tile size of the fused kernels")
      ("max-reference-n", po::value<int>()->default_value(4096),
       "largest n for the reference (its n x n matrices need ~2.5 GB at n=4096, 4 heads)");
  cli.int_list_range("lengths", 1, 1 << 20);
  cli.range("head-dim", 1, 4096);
  cli.range("heads", 1, 1024);
  cli.range("batch", 1, 1024);
  cli.range("repeats", 1, 1000);
  cli.range("warmup", 0, 1000);
  cli.range("max-reference-n", 0, 1 << 20);
  cli.range("tile", 1, 256);
  cli.range("reference-repeats", 0, 1000);
  cli.range("reference-warmup", -1, 1000);
  cli.require([](const po::variables_map& vm) {
    const auto s = vm["dtype"].as<std::string>();
    return s == "float32" || s == "float64";
  }, "--dtype must be float32 or float64");
  cli.parse(argc, argv);

  const Provenance provenance = Provenance::from(cli);
  const bool quick = cli.flag("quick");
  const std::string n_list = cli.has("lengths") ? cli.get<std::string>("lengths")
                             : quick            ? "256,512,1024"
                                                : "256,512,1024,2048,4096,8192";
  const std::vector<int> ns = split_int_list(n_list, "lengths");  // checked by int_list_range
  std::vector<Impl> impls;
  std::vector<Variant> variants;
  std::vector<FpaBackward> fpa_modes, reference_fpa_modes;
  std::vector<std::string> passes;
  try {
    for (const auto& s : split_list(cli.get<std::string>("impls"), "impls"))
      impls.push_back(parse_impl(s));
    for (const auto& s : split_list(cli.get<std::string>("variants"), "variants"))
      variants.push_back(parse_variant(s));
    for (const auto& s : split_list(cli.get<std::string>("fpa-backward"), "fpa-backward"))
      fpa_modes.push_back(parse_fpa_backward(s));
    reference_fpa_modes = fpa_modes;
    if (cli.has("reference-fpa-backward")) {
      reference_fpa_modes.clear();
      for (const auto& s :
           split_list(cli.get<std::string>("reference-fpa-backward"), "reference-fpa-backward"))
        reference_fpa_modes.push_back(parse_fpa_backward(s));
    }
    passes = split_unique_list(cli.get<std::string>("passes"), "passes");
    for (const char* list : {"impls", "variants", "fpa-backward"})
      require_unique(split_list(cli.get<std::string>(list), list), list);
    for (const auto& s : passes)
      if (s != "fwd" && s != "fwd_bwd" && s != "decode")
        throw std::invalid_argument("--passes: fwd, fwd_bwd, decode");
  } catch (const std::invalid_argument& e) {
    fail_usage(e.what());
  }
  const int64_t d = cli.get<int>("head-dim"), heads = cli.get<int>("heads"),
                batch = cli.get<int>("batch");
  const int repeats = quick ? std::min(3, cli.get<int>("repeats")) : cli.get<int>("repeats");
  const int warmup = cli.get<int>("warmup");
  // The reference is the slow baseline: --quick times it once, without warm-up.
  const int ref_repeats = cli.get<int>("reference-repeats") > 0 ? cli.get<int>("reference-repeats")
                          : quick                               ? 1
                                                                : repeats;
  const int ref_warmup = cli.get<int>("reference-warmup") >= 0 ? cli.get<int>("reference-warmup")
                         : quick                               ? 0
                                                               : warmup;
  const int max_ref_n = cli.get<int>("max-reference-n");
  const int64_t tile = cli.get<int>("tile");
  // Every implementation through the one entry point; the fused one with the chosen tile.
  auto run_attention = [tile](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const at::Tensor& gate, const AttentionOptions& o) {
    return o.impl == Impl::Fused ? fused_attention_cpu(q, k, v, gate, o, tile)
                                 : attention(q, k, v, gate, o);
  };
  const auto dtype = cli.get<std::string>("dtype") == "float64" ? at::kDouble : at::kFloat;
  const int64_t elem = dtype == at::kDouble ? 8 : 4;
  {  // The largest n: q, k, v, dout and their gradients; the reference's n x n matrices.
    const double n = *std::max_element(ns.begin(), ns.end()), bh = double(batch * heads);
    const double n_ref = std::min(n, double(max_ref_n));
    const double linear = 10 * bh * n * double(d) * double(elem);
    const double square = 8 * bh * n_ref * n_ref * double(elem);
    require_memory(linear + square, fmt::format("attention-bench at n = {}", int64_t(n)),
                   fmt::format("inputs and gradients {}", human_bytes(linear)) +
                       (n_ref > 0 ? fmt::format(", the reference's n x n matrices at n = {} {}",
                                                int64_t(n_ref), human_bytes(square))
                                  : std::string()));
  }

  seed_everything(cli.seed());
  set_threads(cli.threads());  // LibTorch's threads and OpenBLAS's
  bench::install_alloc_meter();

  // The machine's matmul rate through LibTorch, in this run and with these threads: a square
  // product (compute-bound) and the fused kernels' own tile product.
  const auto [mm_rate, mm_cpu_rate] = matmul_gflops(1024, 1024, 1024, dtype);
  const double tile_rate = tile_gemm_gflops(tile, d);
  std::cout << fmt::format(
      "attention-bench: threads {}, tile products via {}, LibTorch matmul 1024^3 {:.1f} GFLOP/s ({:.1f} by CPU time), "
      "fused tile gemm {}x{}x{} {:.1f} GFLOP/s (float32)\n",
      cli.threads(), fused_gemm_backend(), mm_rate, mm_cpu_rate, tile, tile, d, tile_rate);

  std::vector<Impl> runnable;
  for (Impl i : impls) {
    if (impl_available(i)) runnable.push_back(i);
    else std::cout << "attention-bench: skipping impl '" << to_string(i) << "' (not in this build)\n";
  }

  CsvWriter csv(cli.out(), {"variant", "impl", "n", "head_dim", "heads", "batch", "pass",
                            "median_ms", "peak_extra_bytes", "gflops", "fpa_backward", "dtype",
                            "threads", "repeats", "matmul_gflops", "tile_gemm_gflops",
                            "scratch_bytes", "median_cpu_ms", "cpu_gflops",
                            "matmul_cpu_gflops", "tile", "cache_gbps", "read_gbps"});
  struct Job {
    Variant variant;
    Impl impl;
    int64_t n;
    std::string pass;
    FpaBackward fpa_backward;
  };
  std::vector<Job> jobs;
  for (int n : ns)
    for (Variant v : variants)
      for (Impl i : runnable) {
        if (i == Impl::Reference && n > max_ref_n) continue;
        for (const auto& pass : passes) {
          if (pass == "decode" && i == Impl::Cuda) continue;  // no CUDA step yet
          if (v == Variant::Fpa && pass == "fwd_bwd") {
            for (FpaBackward g : i == Impl::Reference ? reference_fpa_modes : fpa_modes)
              // the GPU kernels have no straight-through backward
              if (!(i == Impl::Cuda && g == FpaBackward::StraightThrough))
                jobs.push_back({v, i, n, pass, g});
          } else {
            jobs.push_back({v, i, n, pass, FpaBackward::Exact});
          }
        }
      }
  for (int n : ns)
    if (n > max_ref_n)
      std::cout << "attention-bench: reference skipped at n=" << n
                << " (> --max-reference-n " << max_ref_n << ")\n";

  Progress progress("attention-bench", int64_t(jobs.size()), "case");
  int64_t done = 0;
  for (const Job& job : jobs) {
    const at::Device device = job.impl == Impl::Cuda ? at::Device(at::kCUDA) : at::Device(at::kCPU);
    Problem p = make_problem(job.variant, batch, heads, job.n, d, dtype, device);
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
    Timing t = measure(pass, ref && !decode ? ref_warmup : warmup,
                       ref && !decode ? ref_repeats : repeats);
    if (job.impl == Impl::Cuda) t.peak_extra_bytes = -1;  // device memory: not measured here
    const double flops = decode ? decode_flops(batch, heads, job.n, d)
                                : attention_flops(batch, heads, job.n, d, backward);
    const double gflops = flops / (t.median_ms * 1e-3) / 1e9;
    const double cache_bytes = decode ? decode_bytes(batch, heads, job.n, d, elem) : 0.0;
    const int64_t scratch =
        job.impl == Impl::Fused && !decode
            ? fused_extra_bytes(batch, heads, job.n, d, opts, elem, backward, cli.threads(),
                                tile) -
                  batch * heads * job.n * elem  // lse is a tensor: already in the measurement
            : 0;
    csv.row(to_string(job.variant), to_string(job.impl), job.n, d, heads, batch, job.pass,
            fmt::format("{:.3f}", t.median_ms), t.peak_extra_bytes, fmt::format("{:.2f}", gflops),
            job.variant == Variant::Fpa ? to_string(job.fpa_backward) : std::string("-"),
            cli.get<std::string>("dtype"), cli.threads(), ref && !decode ? ref_repeats : repeats,
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
  csv.commit(provenance);
  std::cout << "attention-bench: wrote " << cli.out() << " (" << csv.rows() << " rows)\n";
  return 0;
}
