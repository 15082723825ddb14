// lm-compress: a language model's perplexity on held-out text decoded with a compressed KV cache,
// under the online cache policies of lm/cache (issue 29, item 5), one row per (policy, kept
// fraction) with the achieved occupancy beside the full cache's perplexity on the same windows.
// A sub-word checkpoint is scored in the ids of its own tokenizer, read from beside --corpus as
// lm-eval reads it. The study itself is run_compress (compress_study.h).
#include "experiments/cli.h"
#include "experiments/execution.h"
#include "lm/checkpoint_option.h"
#include "experiments/torch_runtime.h"
#include "lm/cache/cli_options.h"
#include "lm/checkpoint.h"
#include "lm/corpus_tokenizer.h"
#include "lm/compress/compress_study.h"
#include "lm/compress/compressed_loss.h"
#include "lm/corpus.h"
#include "lm/evaluate.h"
#include "lm/memory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

using namespace fpa;
using namespace fpa::lm;

namespace {

// Every online, query-agnostic policy: snapkv (query-aware) and duo-calibrated (passkey
// calibration) have no meaning on running text.
const char* kDefaultPolicies =
    "full,fpa-certified,fox-acp,budget,budget-per-head,window,h2o,tova,knorm,random,duo-certified";

void declare_options(Cli& cli) {
  cli.add()
      ("checkpoint", po::value<std::string>(), "weights file, run directory or checkpoint file (required)")
      ("corpus", po::value<std::string>()->default_value("data/brown/text"), "directory of plain-text documents (the one the model was trained on; a sub-word model's tokenizer lies beside it)")
      ("split", po::value<std::string>()->default_value("test"), "split to score: test or validation")
      ("evict-every", po::value<int64_t>()->default_value(1), "tokens between evictions (each leaves room for the tokens before the next)")
      ("max-windows", po::value<int64_t>()->default_value(0), "score at most this many of the split's windows, spread evenly (0: all)");
  cli.range("evict-every", 1, 1e6);
  cli.range("max-windows", 0, 1e9);
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
  lm::declare_checkpoint_input(cli);
  cli.input("corpus", PathKind::Dir);
}

// The tokenizer the checkpoint recorded: bytes, or its sub-word model from beside --corpus
// (checked against the recorded SHA-256). A missing or other model: one line, exit 2.
Tokenizer checkpoint_tokenizer_of(const Cli& cli, const std::string& recorded) {
  if (recorded.empty()) return Tokenizer::bytes();  // every published checkpoint
  const auto corpus = cli.get<std::string>("corpus");
  try {
    return recorded_tokenizer(recorded, corpus);
  } catch (const UsageError& e) {  // names the model file and both checksums
    fail_usage(fmt::format("lm-compress: --corpus '{}': {}", corpus, e.what()));
  }
}

// The split's windows the study scores, in the model's tokens: at most --max-windows of them,
// spread evenly over the split; exit 2 (through UsageError) when the split has no text.
std::vector<at::Tensor> scored_windows(const Cli& cli, const ModelConfig& mc,
                                       const Tokenizer& tokenizer) {
  const auto corpus = load_corpus(cli.get<std::string>("corpus"));
  const auto split = cli.get<std::string>("split");
  const auto& docs = split == "test" ? corpus.test : corpus.validation;
  const auto windows = document_windows(docs, mc.context, 0, tokenizer);
  if (windows.empty()) throw UsageError(fmt::format("--corpus: the {} split has no text", split));
  const auto chosen = spread_indices(int64_t(windows.size()), cli.get<int64_t>("max-windows"));
  std::cerr << fmt::format("lm-compress: {} of the {} split's {} windows (context {} tokens)\n",
                           chosen.size(), split, windows.size(), mc.context);
  std::vector<at::Tensor> scored;
  for (int64_t i : chosen) scored.push_back(windows[size_t(i)]);
  return scored;
}

}  // namespace

int main(int argc, char** argv) {
  Cli cli("lm-compress",
          "perplexity of an lm-train model decoded with a compressed KV cache, per cache policy "
          "and kept fraction (lm/compress/README.md)",
          "results/lm/compress/run.csv");
  declare_options(cli);
  declare_execution_options(cli, "cpu");
  cli.parse(argc, argv);
  const auto budgets = cache::budgets_from(cli);

  try {
    set_threads(cli.threads());
    const auto execution = fp32_execution_of(cli, "KV-cache decoding (lm/cache) runs in float32 (bf16 decoding is not built)");
    seed_everything(cli.seed());
    auto loaded = load_model(cli.get<std::string>("checkpoint"));
    const auto tokenizer = checkpoint_tokenizer_of(cli, loaded.progress.tokenizer);
    // On a GPU the weights move there and the KV caches follow them; the CPU is unchanged.
    if (!execution.device.is_cpu()) loaded.model->use_device(execution.device);
    const auto& mc = loaded.config;
    require_decoding_memory(mc, mc.context + 1, "lm-compress");
    const auto scored = scored_windows(cli, mc, tokenizer);

    std::vector<std::string> skipped;
    const auto policies = cache::make_policies(cache::policy_names_from(cli), budgets,
                                               cache::settings_from(cli), has_gate(mc.kind), &skipped);
    if (!skipped.empty())
      std::cerr << fmt::format("lm-compress: {} skipped (a softmax model has no bias to rank by)\n",
                               fmt::join(skipped, ", "));

    CompressSettings settings;
    settings.split = cli.get<std::string>("split");
    settings.evict_every = cli.get<int64_t>("evict-every");
    settings.run = run_name(cli.get<std::string>("checkpoint"));
    settings.out = cli.out();
    settings.tokenizer = tokenizer;
    auto result = run_compress(settings, loaded, scored, policies);
    auto prov = Provenance::from(cli);
    const auto trained = training_record(cli.get<std::string>("checkpoint"));
    prov.config["train-seed"] = trained.seed;
    prov.config["train-config"] = trained.config;
    if (tokenizer.kind() != TokenizerKind::Bytes) prov.config["tokenizer"] = tokenizer.identity();
    result.table.commit(prov);
  } catch (const UsageError& e) {
    fail_usage(e.what());
  } catch (const std::exception& e) {
    std::cerr << "error: " << one_line(e.what()) << "\n";
    return 1;
  }
  return 0;
}
