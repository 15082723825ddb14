// passkey-probe: where does the key sit when the answer is asked? For each prompt (the same
// keys and depths passkey-eval draws for the same --seed, --lengths, --keys and --depths), the
// prompt is prefilled with a full cache up to the answer query; then, for every layer and head,
// one row: the key's bias at the answer query (the highest over the key's digit positions, both
// occurrences), the T5 eviction threshold and the fraction of entries above it (what
// fpa-certified keeps), and the bias cut-off of a per-head and a shared budget (what the budget
// policies would keep if they ranked the full cache at this query). Whether the full-cache greedy
// answer is right is recorded too, so a reader can line up failures with heads.
//
// The kept sets are the policies' own (lm/cache: fpa-certified, budget, budget-per-head), applied
// once to the full cache at the answer query; in passkey-eval the budget policies evict during
// prefill, as they must, so they can differ: this explains, it does not replace passkey-eval. A
// key is kept when one of its digit entries is; the cut-off is the lowest bias kept. The study
// itself is run_passkey_probe (probe_study.h).
#include "experiments/cli.h"
#include "experiments/execution.h"
#include "lm/checkpoint_option.h"
#include "lm/passkey/filler.h"
#include "experiments/torch_runtime.h"
#include "lm/passkey/eval_setup.h"
#include "lm/passkey/probe_study.h"

#include <iostream>

using namespace fpa;
using namespace fpa::passkey;

int main(int argc, char** argv) {
  Cli cli("passkey-probe",
          "per layer and head, the passkey's bias at the answer query against the T5 eviction "
          "threshold and the budget cut-offs, with a full cache",
          "");
  cli.add()
      ("checkpoint", po::value<std::string>(), "run directory or checkpoint file (required)")
      ("variant", po::value<std::string>()->default_value(""), "label for the CSV (default: the model's attention kind)")
      ("lengths", po::value<std::string>()->default_value("1,2,4,8"), "evaluation lengths as multiples of L (as in passkey-eval)")
      ("keys", po::value<int>()->default_value(20), "keys per length (as in passkey-eval)")
      ("depths", po::value<int>()->default_value(5), "depths spread over the prompt (as in passkey-eval)")
      ("budget", po::value<double>()->default_value(0.25), "budget fraction for the cut-offs")
      ("epsilon", po::value<double>()->default_value(1e-3), "epsilon of the T5 threshold")
      ("chunk", po::value<int64_t>()->default_value(128), "prefill chunk")
      ("key-digits", po::value<int>()->default_value(5), "passkey length in digits");
  cli.range("keys", 1, 1e6);
  cli.range("depths", 1, 1000);
  cli.range("budget", 1e-6, 1);
  cli.range("epsilon", 1e-300, 0.999999);
  cli.range("chunk", 1, 1e6);
  cli.range("key-digits", 1, 18);
  cli.require([](const po::variables_map& vm) { return !vm["out"].as<std::string>().empty(); }, "--out is required");
  add_filler_options(cli, {"repeated", "corpus-test", "corpus-validation"}, true);
  lm::declare_checkpoint_input(cli);
  declare_execution_options(cli, "cpu");
  cli.parse(argc, argv);
  const auto lengths = split_int_list(cli.get<std::string>("lengths"), "lengths");
  for (int m : lengths) if (m < 1) fail_usage("--lengths: multiples must be >= 1");

  PasskeyProbeSettings settings;
  settings.lengths = lengths;
  settings.keys = cli.get<int>("keys");
  settings.depths = cli.get<int>("depths");
  settings.budget = cli.get<double>("budget");
  settings.epsilon = cli.get<double>("epsilon");
  settings.chunk = cli.get<int64_t>("chunk");
  settings.seed = cli.seed();
  settings.out = cli.out();
  try {
    set_threads(cli.threads());
    const auto execution = fp32_execution_of(cli, "KV-cache decoding (lm/cache) runs in float32 (bf16 decoding is not built)");
    const auto setup = load_eval_setup(cli, lengths, "passkey-probe");  // passkey-eval's set-up
    if (!execution.device.is_cpu()) lm::LanguageModel(setup.loaded.model)->use_device(execution.device);
    auto result = run_passkey_probe(settings, setup);
    result.table.commit(eval_provenance(cli, setup));
  } catch (const UsageError& e) {  // a missing or corrupt checkpoint: bad input, exit 2
    fail_usage(e.what());
  } catch (const std::exception& e) {
    std::cerr << "error: " << one_line(e.what()) << "\n";
    return 1;
  }
  return 0;
}
