#include "bench_timing.h"

#include "alloc_meter.h"
#include "kernels/cpu/fused_gemm.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <vector>

namespace fpa::bench {
namespace {

using Clock = std::chrono::steady_clock;

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

}  // namespace

Timing measure(const std::function<void()>& pass, int warmup, int repeats) {
  for (int r = 0; r < warmup; ++r) pass();
  std::vector<double> ms, cpu;
  int64_t peak = 0;
  for (int r = 0; r < repeats; ++r) {
    const int64_t before = live_bytes();
    reset_peak();
    const double c0 = cpu_ms();
    const auto t0 = Clock::now();
    pass();
    ms.push_back(ms_since(t0));
    cpu.push_back(cpu_ms() - c0);
    peak = std::max(peak, peak_bytes() - before);
  }
  return {median(ms), median(cpu), peak};
}

std::pair<double, double> matmul_gflops(int64_t m, int64_t k, int64_t n, at::ScalarType dtype,
                                        const at::Device& device) {
  const auto o = at::TensorOptions().dtype(dtype).device(device);
  auto a = at::randn({m, k}, o), b = at::randn({k, n}, o);
  const Timing t = measure([&] {
    const auto c = at::matmul(a, b);
    if (!c.is_cpu()) (void)c.flatten()[0].item<double>();  // waits for the device
  }, 1, 7);
  const double flops = 2.0 * double(m * k * n);
  return {flops / (t.median_ms * 1e-3) / 1e9, flops / (t.median_cpu_ms * 1e-3) / 1e9};
}

double tile_gemm_gflops(int64_t t, int64_t d) {
  const int64_t reps = 2000 * 64 * 64 / (t * t);
  std::vector<float> a(t * d, 0.5f), b(t * d, 0.25f), c(t * t);
  const auto t0 = Clock::now();
  for (int64_t r = 0; r < reps; ++r)
    fused::gemm_nt<float>(t, t, d, 1.0f, a.data(), d, b.data(), d, 0.0f, c.data(), t);
  return 2.0 * double(t * t * d * reps) / (ms_since(t0) * 1e-3) / 1e9;
}

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

}  // namespace fpa::bench
