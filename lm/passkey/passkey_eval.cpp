// passkey-eval: passkey retrieval of a checkpoint at multiples of its training length, under
// KV-cache policies (SPEC section 6). Writes one row per (length, depth, policy, budget) cell to
// --out and the same cells averaged over depths to --summary (SPEC section 7's columns first).
// The study itself is run_passkey_eval (eval_study.h); this file parses and checks the flags.
#include "experiments/cli.h"
#include "experiments/execution.h"
#include "lm/checkpoint_option.h"
#include "lm/passkey/filler.h"
#include "experiments/torch_runtime.h"
#include "lm/cache/cli_options.h"
#include "lm/model.h"
#include "lm/passkey/eval_setup.h"
#include "lm/passkey/eval_study.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace fs = std::filesystem;
using namespace fpa;
using namespace fpa::passkey;
namespace cache = fpa::cache;

namespace {

// --summary, or its default beside --out.
std::string summary_path(const Cli& cli) {
  const auto given = cli.get<std::string>("summary");
  return given.empty() ? fs::path(cli.out()).replace_extension("").string() + ".summary.csv" : given;
}

void declare_options(Cli& cli) {
  cli.add()
      ("checkpoint", po::value<std::string>(), "run directory or checkpoint file (required)")
      ("variant", po::value<std::string>()->default_value(""), "label for the CSV (default: the model's attention kind)")
      ("train-len", po::value<int64_t>()->default_value(0), "training length L (default: the checkpoint's context)")
      ("lengths", po::value<std::string>()->default_value("1,2,4,8"), "evaluation lengths as multiples of L")
      ("calibration-keys", po::value<int>()->default_value(8), "duo-calibrated: calibration prompts at L (their own generator, seed + 1)")
      ("per-head", po::bool_switch()->default_value(false), "every budget policy per head (budget-per-head in --policies does it for one)")
      ("keys", po::value<std::string>()->default_value("20"), "keys per cell: one count, or one per --lengths entry")
      ("depths", po::value<int>()->default_value(5), "depths spread over the prompt (keys cycle through them)")
      ("chunk", po::value<int64_t>()->default_value(128), "prefill chunk (eviction at chunk boundaries)")
      ("evict-every", po::value<int64_t>()->default_value(64), "single-token decoding: tokens between evictions")
      ("timed-tokens", po::value<int64_t>()->default_value(256), "the prompt's last tokens decoded one at a time; decode time is their mean with the answer's")
      ("key-digits", po::value<int>()->default_value(5), "passkey length in digits")
      ("summary", po::value<std::string>()->default_value(""), "per-cell summary over depths (default: <out>.summary.csv)");
  cli.range("train-len", 0, 1e7);
  cli.range("depths", 1, 1000);
  cli.range("chunk", 1, 1e6);
  cli.range("evict-every", 1, 1e6);
  cli.range("timed-tokens", 1, 1e7);
  cli.range("key-digits", 1, 18);
  cli.range("calibration-keys", 1, 1e4);
  cache::PolicyOptionDefaults policy_defaults;
  policy_defaults.policies = "full,fpa-certified,budget,window";
  cache::add_policy_options(cli, policy_defaults);
  lm::declare_checkpoint_input(cli);
  add_filler_options(cli, {"repeated", "corpus-test", "corpus-validation"}, true);
  cli.output("summary", PathKind::File, [](const Cli& c) {
    return std::vector<std::string>{summary_path(c)};
  });
}

// --lengths, --keys (one count per length) and the flags the study reads; exit 2 on bad input.
PasskeyEvalSettings settings_from(const Cli& cli) {
  PasskeyEvalSettings s;
  const auto lengths = split_int_list(cli.get<std::string>("lengths"), "lengths");
  for (int m : lengths) if (m < 1) fail_usage("--lengths: multiples must be >= 1");
  require_unique(lengths, "lengths");
  auto keys_at = split_int_list(cli.get<std::string>("keys"), "keys");
  for (int k : keys_at)
    if (k < 1 || k > 1000000) fail_usage(fmt::format("--keys: '{}' is not in [1, 1000000]", k));
  if (keys_at.size() == 1) keys_at.assign(lengths.size(), keys_at[0]);
  if (keys_at.size() != lengths.size())
    fail_usage(fmt::format("--keys: {} counts for {} lengths (give one, or one per length)",
                           keys_at.size(), lengths.size()));
  s.lengths = lengths;
  s.keys = keys_at;
  s.depths = cli.get<int>("depths");
  s.calibration_keys = cli.get<int>("calibration-keys");
  s.seed = cli.seed();
  s.schedule.chunk = cli.get<int64_t>("chunk");
  s.schedule.evict_every = cli.get<int64_t>("evict-every");
  s.schedule.timed_tokens = cli.get<int64_t>("timed-tokens");
  s.out = cli.out();
  s.summary = summary_path(cli);
  return s;
}

// The policies of --policies x --budgets the model can run (a softmax model has no bias).
std::vector<std::unique_ptr<cache::Policy>> policies_for(const Cli& cli,
                                                        const std::vector<double>& budgets,
                                                        const EvalSetup& setup) {
  const auto settings = cache::settings_from(cli);
  auto names = cache::policy_names_from(cli);
  if (cli.flag("per-head")) std::replace(names.begin(), names.end(), std::string("budget"), std::string("budget-per-head"));
  std::vector<std::string> skipped;
  auto policies = cache::make_policies(names, budgets, settings, lm::has_gate(setup.loaded.config.kind), &skipped);
  if (!skipped.empty())
    std::cerr << fmt::format("passkey-eval: {} skipped (a softmax model has no bias to rank by)\n",
                             fmt::join(skipped, ", "));
  return policies;
}

}  // namespace

int main(int argc, char** argv) {
  Cli cli("passkey-eval",
          "passkey retrieval of a checkpoint at multiples of its training length under KV-cache "
          "policies (lm/cache/README.md: " + cache::policy_names() + ")",
          "results/passkey/cells.csv");
  declare_options(cli);
  declare_execution_options(cli, "cpu");
  cli.parse(argc, argv);
  const auto settings = settings_from(cli);
  const auto budgets = cache::budgets_from(cli);
  try {
    set_threads(cli.threads());
    const auto execution = fp32_execution_of(cli, "KV-cache decoding (lm/cache) runs in float32 (bf16 decoding is not built)");
    const auto setup = load_eval_setup(cli, settings.lengths, "passkey-eval");
    // On a GPU the weights move there and the KV caches follow them (kernels/cpu/kv_cache.h's
    // tensor path); the CPU keeps the model as loaded (the published path, unchanged).
    if (!execution.device.is_cpu()) lm::LanguageModel(setup.loaded.model)->use_device(execution.device);
    auto tables = run_passkey_eval(settings, setup, policies_for(cli, budgets, setup));
    const auto prov = eval_provenance(cli, setup);
    tables.cells.commit(prov);
    tables.summary.commit(prov);
  } catch (const UsageError& e) {  // bad input found before any prompt: exit 2
    fail_usage(e.what());
  } catch (const std::exception& e) {
    std::cerr << "error: " << one_line(e.what()) << "\n";
    return 1;
  }
  return 0;
}
