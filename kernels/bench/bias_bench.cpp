// bias-bench: Google Benchmark micro-benchmark of the attention bias alone, FPA's path minimum
// against FoX's cumulative sum, on one head of length n.
//   fused/<variant>/<request>: the fused kernels' tile bias (fused_bias.h, what the forward and
//     backward compute per (query block, key tile)), every causal tile of the head; requests
//     `value` (forward), `argmin` (FPA's exact backward), `logz` (its straight-through backward).
//   reference/<variant>: the reference's n x n bias matrix (fpa::fox_bias, fpa::fpa_bias).
// items_per_second counts causal (query, key) pairs, n(n+1)/2 per head. Not run by the tests.
#include "experiments/cli.h"
#include "experiments/csv_writer.h"
#include "experiments/torch_runtime.h"
#include "kernels/attention.h"
#include "kernels/cpu/fused_bias.h"

#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <unistd.h>

using namespace fpa;

namespace {

// The kernel benchmark's fields: FPA a standard-normal random walk, FoX log sigmoid(N(3, 1)).
std::vector<float> make_gate(Variant v, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> gauss(0.f, 1.f);
  std::vector<float> g(size_t(n), 0.f);
  float walk = 0.f;
  for (auto& x : g) {
    const float z = gauss(rng);
    x = v == Variant::Fpa ? (walk += z) : -std::log1p(std::exp(-(3.f + z)));
  }
  return g;
}

void fused_bias(benchmark::State& state, Variant v, fused::BiasRequest request, int64_t n,
                int64_t tile, uint64_t seed) {
  const auto gate = make_gate(v, n, seed);
  std::vector<float> bias(size_t(tile * tile)), logz(size_t(tile * tile));
  std::vector<int32_t> arg(size_t(tile * tile));
  for (auto _ : state) {
    for (int64_t i0 = 0; i0 < n; i0 += tile) {
      fused::BlockBias<float> block(v, gate.data(), i0, std::min(n, i0 + tile), tile, 1.0, request);
      for (int64_t t = 0; t <= i0 / tile; ++t) {
        block.tile(t, bias.data(), arg.data(), logz.data(), tile);
        benchmark::DoNotOptimize(bias.data());
        benchmark::ClobberMemory();
      }
    }
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * n * (n + 1) / 2);
}

void reference_bias(benchmark::State& state, Variant v, int64_t n, uint64_t seed) {
  const auto g = make_gate(v, n, seed);
  const auto gate = at::from_blob(const_cast<float*>(g.data()), {1, 1, n}, at::kFloat).clone();
  for (auto _ : state) {
    auto b = v == Variant::Fpa ? fpa::fpa_bias(gate) : fpa::fox_bias(gate);
    benchmark::DoNotOptimize(b.data_ptr<float>());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * n * (n + 1) / 2);
}

struct Case {
  std::string impl, variant, request;
  int64_t n = 0;
};

// Prints as Google Benchmark does and keeps each run for the CSV.
class Collector : public benchmark::ConsoleReporter {
 public:
  // Colours only on a terminal (the library decides that only for its own default reporter).
  Collector() : ConsoleReporter(::isatty(1) ? OO_ColorTabular : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) kept.push_back(r);
  }
  std::vector<Run> kept;
};

// Google Benchmark's --benchmark_filter: a regular expression, negated by a leading '-'.
std::string filter_pattern(const std::string& filter) {
  return filter.rfind('-', 0) == 0 ? filter.substr(1) : filter;
}

}  // namespace

int main(int argc, char** argv) {
  Cli cli("bias-bench",
          "Google Benchmark micro-benchmark of the attention bias: FPA's path minimum vs FoX's "
          "cumulative sum (fused tiles and reference matrices).",
          "");
  cli.add()
      ("lengths", po::value<std::string>()->default_value("256,1024,4096"), "sequence lengths")
      ("tile", po::value<int>()->default_value(64), "the fused kernels' block size")
      ("max-reference-n", po::value<int>()->default_value(1024),
       "largest n of the reference's n x n matrices")
      ("min-time", po::value<double>()->default_value(0.2), "seconds per benchmark (at least)")
      ("filter", po::value<std::string>()->default_value("."),
       "regular expression selecting benchmarks by name, e.g. 'fused/fpa'");
  cli.range("tile", 1, 4096);
  cli.int_list_range("lengths", 1, 1 << 20);  // a billion keys would run for minutes, not refuse
  cli.range("min-time", 0.001, 3600);
  cli.range("max-reference-n", 0, 1 << 20);
  cli.require(
      [](const po::variables_map& vm) {
        std::regex(filter_pattern(vm["filter"].as<std::string>()));  // throws when malformed
        return true;
      },
      "--filter is not a regular expression");
  cli.parse(argc, argv);
  const auto n_list = split_int_list(cli.get<std::string>("lengths"), "lengths");
  for (int n : n_list)
    if (n < 1) fail_usage(fmt::format("--lengths: {} is not a positive length", n));
  set_threads(cli.threads());

  const int64_t tile = cli.get<int>("tile");
  const uint64_t seed = cli.seed();
  const struct { const char* name; Variant v; fused::BiasRequest r; } fused_cases[] = {
      {"fox/value", Variant::Fox, {}},
      {"fpa/value", Variant::Fpa, {}},
      {"fpa/argmin", Variant::Fpa, {true, false}},
      {"fpa/logz", Variant::Fpa, {false, true}},
  };
  std::map<std::string, Case> cases;  // benchmark name -> what it measures
  for (int n : n_list) {
    for (const auto& c : fused_cases) {
      const auto name = fmt::format("fused/{}/n:{}", c.name, n);
      const std::string label = c.name;
      cases[name] = {"fused", to_string(c.v), label.substr(label.find('/') + 1), n};
      benchmark::RegisterBenchmark(name.c_str(), fused_bias, c.v, c.r, int64_t(n), tile, seed);
    }
    if (n <= cli.get<int>("max-reference-n"))
      for (Variant v : {Variant::Fox, Variant::Fpa}) {
        const auto name = fmt::format("reference/{}/n:{}", to_string(v), n);
        cases[name] = {"reference", to_string(v), "matrix", n};
        benchmark::RegisterBenchmark(name.c_str(), reference_bias, v, int64_t(n), seed);
      }
  }

  // A filter that selects nothing would write a header-only CSV and exit 0.
  const std::regex selected(filter_pattern(cli.get<std::string>("filter")));
  const bool negated = cli.get<std::string>("filter").rfind('-', 0) == 0;
  if (std::none_of(cases.begin(), cases.end(), [&](const auto& c) {
        return std::regex_search(c.first, selected) != negated;
      }))
    fail_usage(fmt::format("--filter '{}' selects no benchmark (names look like '{}')",
                           cli.get<std::string>("filter"), cases.begin()->first));

  std::vector<std::string> flags = {
      "bias-bench", fmt::format("--benchmark_min_time={}", cli.get<double>("min-time")),
      "--benchmark_filter=" + cli.get<std::string>("filter")};
  std::vector<char*> args;
  for (auto& f : flags) args.push_back(f.data());
  int count = int(args.size());
  benchmark::Initialize(&count, args.data());
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  benchmark::Shutdown();

  if (!cli.out().empty()) {
    // Times in ms; pairs_per_s from CPU time (the machine is shared), pairs_per_s_wall from
    // the wall clock. A pair is one causal (query, key) entry, n(n+1)/2 per head.
    CsvWriter csv(cli.out(), {"impl", "variant", "request", "n", "tile", "iterations", "real_ms",
                              "cpu_ms", "pairs_per_s", "pairs_per_s_wall"});
    for (const auto& r : collector.kept) {
      const auto& c = cases.at(r.benchmark_name());
      const double real_s = r.GetAdjustedRealTime() * 1e-9, cpu_s = r.GetAdjustedCPUTime() * 1e-9;
      const double pairs = double(c.n) * double(c.n + 1) / 2;
      auto g = [](double x) { return fmt::format("{:.6g}", x); };
      csv.row(c.impl, c.variant, c.request, c.n, c.impl == "fused" ? tile : 0,
              int64_t(r.iterations), g(real_s * 1e3), g(cpu_s * 1e3), g(pairs / cpu_s),
              g(pairs / real_s));
    }
    csv.commit(Provenance::from(cli));
  }
  return 0;
}
