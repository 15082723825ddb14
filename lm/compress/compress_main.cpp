// lm-compress: a language model's perplexity on held-out text decoded with a compressed KV cache,
// under the online cache policies of lm/cache (issue 29, item 5), one row per (policy, kept
// fraction) with the achieved occupancy beside the full cache's perplexity on the same windows.
#include "experiments/cli.h"
#include "experiments/csv_writer.h"
#include "experiments/progress.h"
#include "experiments/torch_runtime.h"
#include "lm/cache/cli_options.h"
#include "lm/checkpoint.h"
#include "lm/compress/compressed_loss.h"
#include "lm/corpus.h"
#include "lm/evaluate.h"
#include "lm/memory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <iostream>
#include <optional>

using namespace fpa;
using namespace fpa::lm;

namespace {

// Every online, query-agnostic policy: snapkv (query-aware) and duo-calibrated (passkey
// calibration) have no meaning on running text.
const char* kDefaultPolicies =
    "full,fpa-certified,fox-acp,budget,budget-per-head,window,h2o,tova,knorm,random,duo-certified";

}  // namespace

int main(int argc, char** argv) {
  Cli cli("lm-compress",
          "perplexity of an lm-train model decoded with a compressed KV cache, per cache policy "
          "and kept fraction (lm/compress/README.md)",
          "results/lm/compress/run.csv");
  cli.add()
      ("checkpoint", po::value<std::string>(), "weights file, run directory or checkpoint file (required)")
      ("corpus", po::value<std::string>()->default_value("data/brown/text"), "directory of plain-text documents (the one the model was trained on)")
      ("split", po::value<std::string>()->default_value("test"), "split to score: test or validation")
      ("evict-every", po::value<int64_t>()->default_value(1), "tokens between evictions (each leaves room for the tokens before the next)")
      ("max-windows", po::value<int64_t>()->default_value(0), "score at most this many of the split's windows, spread evenly (0: all)");
  cli.range("evict-every", 1, 1e6);
  cli.range("max-windows", 0, 1e9);
  cli.require([](const po::variables_map& vm) { return vm.count("checkpoint") > 0; }, "--checkpoint is required");
  cli.require([](const po::variables_map& vm) {
    const auto s = vm["split"].as<std::string>();
    return s == "test" || s == "validation";
  }, "--split must be test or validation");
  cache::PolicyOptionDefaults policy_defaults;
  policy_defaults.policies = kDefaultPolicies;
  policy_defaults.budgets = "0.1,0.25,0.5";
  policy_defaults.duo_window = 12;  // 12 + 4 sinks = 1/8 of context 128, as 60 + 4 of passkey's L = 512
  policy_defaults.query_aware = false;  // running text has no question
  cache::add_policy_options(cli, policy_defaults);
  cli.input("checkpoint", PathKind::Any);
  cli.input("corpus", PathKind::Dir);
  cli.parse(argc, argv);
  const auto budgets = cache::budgets_from(cli);

  try {
    set_threads(cli.threads());
    seed_everything(cli.seed());
    auto loaded = load_model(cli.get<std::string>("checkpoint"));
    const auto& mc = loaded.config;
    require_decoding_memory(mc, mc.context + 1, "lm-compress");
    const auto corpus = load_corpus(cli.get<std::string>("corpus"));
    const auto split = cli.get<std::string>("split");
    const auto windows = document_windows(split == "test" ? corpus.test : corpus.validation, mc.context);
    if (windows.empty()) throw UsageError(fmt::format("--corpus: the {} split has no text", split));
    const auto chosen = spread_indices(int64_t(windows.size()), cli.get<int64_t>("max-windows"));
    std::cerr << fmt::format("lm-compress: {} of the {} split's {} windows (context {})\n",
                             chosen.size(), split, windows.size(), mc.context);

    std::vector<std::string> skipped;
    const auto policies = cache::make_policies(cache::policy_names_from(cli), budgets,
                                               cache::settings_from(cli), has_gate(mc.kind), &skipped);
    if (!skipped.empty())
      std::cerr << fmt::format("lm-compress: {} skipped (a softmax model has no bias to rank by)\n",
                               fmt::join(skipped, ", "));

    const auto variant = to_string(mc.kind);
    const auto run = run_name(cli.get<std::string>("checkpoint"));
    const int64_t evict_every = cli.get<int64_t>("evict-every");
    IncrementalDecoder decoder(loaded.model);
    Progress bar("lm-compress " + run, int64_t(policies.size() * chosen.size()), "window");
    int64_t done = 0;
    std::vector<CompressedLoss> results;
    std::optional<double> full_ppl;
    for (const auto& p : policies) {
      CompressedLoss total;
      for (int64_t i : chosen) {
        total.add(score_window(decoder, windows[size_t(i)], *p, evict_every));
        bar.update(++done, fmt::format("{} {}", p->csv_name(), p->budgeted() ? fmt::format("{}", p->settings().budget) : ""));
      }
      if (!std::isfinite(total.nll))
        throw std::runtime_error(fmt::format("the loss under {} is {}", p->name(), total.nll));
      if (p->keeps_everything()) full_ppl = total.perplexity();
      results.push_back(total);
    }
    bar.finish();

    CsvWriter out(cli.out(), {"variant", "run", "split", "policy", "budget", "epsilon", "per_head",
                              "occupancy", "nll_per_token", "ppl", "bpb", "ppl_increase",
                              "windows", "tokens", "decode_cpu_ms_per_token", "evict_every", "step"});
    for (size_t k = 0; k < policies.size(); ++k) {
      const auto& p = *policies[k];
      const auto& r = results[k];
      const auto budget = p.keeps_everything() ? std::string("1")
                          : p.budgeted()       ? fmt::format("{}", p.settings().budget)
                                               : std::string();
      const auto eps = p.reads_epsilon() ? fmt::format("{}", p.settings().epsilon) : std::string();
      const double rise = full_ppl ? r.perplexity() / *full_ppl - 1 : NAN;
      const auto increase = full_ppl ? fmt::format("{}", rise) : std::string();
      out.row(variant, run, split, p.csv_name(), budget, eps, int(p.per_head()), r.occupancy(),
              r.nll_per_token(), r.perplexity(), r.nll_per_token() / std::log(2.0), increase,
              chosen.size(), r.tokens, r.decode_cpu_ms / double(r.tokens), evict_every, loaded.step);
      std::cerr << fmt::format("{} {} {}: ppl {:.4f}{}, occupancy {:.3f}\n", run, p.name(), budget,
                               r.perplexity(), full_ppl ? fmt::format(" ({:+.3f}%)", 100 * rise) : "",
                               r.occupancy());
    }
    auto prov = Provenance::from(cli);
    const auto trained = training_record(cli.get<std::string>("checkpoint"));
    prov.config["train-seed"] = trained.seed;
    prov.config["train-config"] = trained.config;
    out.commit(prov);
  } catch (const UsageError& e) {
    fail_usage(e.what());
  } catch (const std::exception& e) {
    std::cerr << "error: " << one_line(e.what()) << "\n";
    return 1;
  }
  return 0;
}
