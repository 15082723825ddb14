// attention-bench: forward and forward+backward time and peak extra memory of every attention
// implementation (reference, fused, cuda when built) for softmax, FoX and FPA, next to the
// matrix-multiply rate LibTorch reaches in the same run, on --device (the CPU by default: the
// reference and fused; a GPU: the reference and cuda, timed with a synchronisation per pass). Pass `decode` times one step of the
// cached operator (kernels/cpu/kv_cache.h): one new token against a cache of n keys per head. Writes results/bench/attention.csv
// (SPEC section 7 columns first) with a provenance sidecar. The study itself is
// run_attention_bench (attention_bench_study.h); this file parses and checks the flags.
#include "attention_bench_study.h"
#include "experiments/cli.h"
#include "experiments/execution.h"
#include "kernels/cpu/fused_cpu.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <stdexcept>

using namespace fpa;
using bench::AttentionBenchSettings;

namespace {

void declare_options(Cli& cli) {
  cli.add()
      ("quick", po::bool_switch(),
       "small profile: n in {256,512,1024}, 3 repeats, the reference timed once (< 1 minute)")
      ("lengths", po::value<std::string>(),
       "sequence lengths (default 256,512,1024,2048,4096,8192; with --quick 256,512,1024)")
      ("impls", po::value<std::string>()->default_value("reference,fused,cuda"),
       "implementations (those not in this build are skipped with a note)")
      ("variants", po::value<std::string>()->default_value("softmax,fox,fpa"), "variants")
      ("passes", po::value<std::string>()->default_value("fwd,fwd_bwd"), "fwd, fwd_bwd and/or decode (one cached step after n tokens; on the CPU only)")
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
}

// The settings of the parsed flags (--quick's defaults applied); exit 2 on a bad list.
AttentionBenchSettings settings_from(const Cli& cli) {
  AttentionBenchSettings s;
  const bool quick = cli.flag("quick");
  const std::string n_list = cli.has("lengths") ? cli.get<std::string>("lengths")
                             : quick            ? "256,512,1024"
                                                : "256,512,1024,2048,4096,8192";
  s.lengths = split_int_list(n_list, "lengths");  // checked by int_list_range
  s.impls.clear(), s.variants.clear(), s.fpa_modes.clear();
  try {
    for (const auto& x : split_list(cli.get<std::string>("impls"), "impls"))
      s.impls.push_back(parse_impl(x));
    for (const auto& x : split_list(cli.get<std::string>("variants"), "variants"))
      s.variants.push_back(parse_variant(x));
    for (const auto& x : split_list(cli.get<std::string>("fpa-backward"), "fpa-backward"))
      s.fpa_modes.push_back(parse_fpa_backward(x));
    s.reference_fpa_modes = s.fpa_modes;
    if (cli.has("reference-fpa-backward")) {
      s.reference_fpa_modes.clear();
      for (const auto& x :
           split_list(cli.get<std::string>("reference-fpa-backward"), "reference-fpa-backward"))
        s.reference_fpa_modes.push_back(parse_fpa_backward(x));
    }
    s.passes = split_unique_list(cli.get<std::string>("passes"), "passes");
    for (const char* list : {"impls", "variants", "fpa-backward"})
      require_unique(split_list(cli.get<std::string>(list), list), list);
    for (const auto& x : s.passes)
      if (x != "fwd" && x != "fwd_bwd" && x != "decode")
        throw std::invalid_argument("--passes: fwd, fwd_bwd, decode");
  } catch (const std::invalid_argument& e) {
    fail_usage(e.what());
  }
  s.head_dim = cli.get<int>("head-dim");
  s.heads = cli.get<int>("heads");
  s.batch = cli.get<int>("batch");
  s.repeats = quick ? std::min(3, cli.get<int>("repeats")) : cli.get<int>("repeats");
  s.warmup = cli.get<int>("warmup");
  // The reference is the slow baseline: --quick times it once, without warm-up.
  s.reference_repeats = cli.get<int>("reference-repeats") > 0 ? cli.get<int>("reference-repeats")
                        : quick                               ? 1
                                                              : s.repeats;
  s.reference_warmup = cli.get<int>("reference-warmup") >= 0 ? cli.get<int>("reference-warmup")
                       : quick                               ? 0
                                                             : s.warmup;
  s.max_reference_n = cli.get<int>("max-reference-n");
  s.tile = cli.get<int>("tile");
  s.dtype = cli.get<std::string>("dtype");
  s.threads = cli.threads();
  s.seed = cli.seed();
  s.out = cli.out();
  return s;
}

// Exit 2 when the largest n cannot fit: q, k, v, dout and their gradients; the reference's
// n x n matrices.
void require_bench_memory(const AttentionBenchSettings& s) {
  const double elem = s.dtype == "float64" ? 8 : 4;
  const double n = *std::max_element(s.lengths.begin(), s.lengths.end()),
               bh = double(s.batch * s.heads);
  const double n_ref = std::min(n, double(s.max_reference_n));
  const double linear = 10 * bh * n * double(s.head_dim) * elem;
  const double square = 8 * bh * n_ref * n_ref * elem;
  require_memory(linear + square, fmt::format("attention-bench at n = {}", int64_t(n)),
                 fmt::format("inputs and gradients {}", human_bytes(linear)) +
                     (n_ref > 0 ? fmt::format(", the reference's n x n matrices at n = {} {}",
                                              int64_t(n_ref), human_bytes(square))
                                : std::string()));
}

}  // namespace

int main(int argc, char** argv) {
  Cli cli("attention-bench",
          "time and memory of the attention implementations (reference, fused, cuda)",
          "results/bench/attention.csv");
  declare_options(cli);
  declare_execution_options(cli, "cpu");  // the published table is the CPU's
  cli.parse(argc, argv);
  Execution execution;
  try {
    execution = fp32_execution_of(cli, "the benchmark's dtype is --dtype (autocast is the "
                                       "trainers'); bf16 kernels: kernels/bench/attention_gpu_bench.py");
  } catch (const UsageError& e) {
    fail_usage(e.what());
  }
  const Provenance provenance = Provenance::from(cli);
  auto settings = settings_from(cli);
  settings.device = execution.device;
  require_bench_memory(settings);
  auto result = bench::run_attention_bench(settings);
  result.table.commit(provenance);
  std::cout << "attention-bench: wrote " << cli.out() << " (" << result.table.rows() << " rows)\n";
  return 0;
}
