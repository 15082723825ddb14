// passkey-eval: passkey retrieval of a checkpoint at multiples of its training length, under
// KV-cache policies (SPEC section 6). Writes one row per (length, depth, policy, budget) cell to
// --out and the same cells averaged over depths to --summary (SPEC section 7's columns first).
#include "experiments/cli.h"
#include "experiments/csv_writer.h"
#include "experiments/progress.h"
#include "experiments/torch_runtime.h"
#include "lm/cache/cli_options.h"
#include "lm/decode.h"
#include "lm/passkey/calibrate.h"
#include "lm/passkey/eval_setup.h"
#include "lm/passkey/evaluate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>

namespace fs = std::filesystem;
using namespace fpa;
using namespace fpa::passkey;
namespace cache = fpa::cache;

namespace {

std::string budget_cell(const cache::Policy& p) {
  if (p.keeps_everything()) return "1";
  if (!p.budgeted()) return "";
  return fmt::format("{}", p.settings().budget);
}


}  // namespace

int main(int argc, char** argv) {
  Cli cli("passkey-eval",
          "passkey retrieval of a checkpoint at multiples of its training length under KV-cache "
          "policies (lm/cache/README.md: " + cache::policy_names() + ")",
          "results/passkey/cells.csv");
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
      ("filler-file", po::value<std::string>()->default_value(""), "filler text file")
      ("summary", po::value<std::string>()->default_value(""), "per-cell summary over depths (default: <out>.summary.csv)");
  cli.range("train-len", 0, 1e7);
  cli.range("depths", 1, 1000);
  cli.range("chunk", 1, 1e6);
  cli.range("evict-every", 1, 1e6);
  cli.range("timed-tokens", 1, 1e7);
  cli.range("key-digits", 1, 18);
  cli.range("calibration-keys", 1, 1e4);
  cli.require([](const po::variables_map& vm) { return vm.count("checkpoint") > 0; }, "--checkpoint is required");
  cache::PolicyOptionDefaults policy_defaults;
  policy_defaults.policies = "full,fpa-certified,budget,window";
  cache::add_policy_options(cli, policy_defaults);
  cli.input("checkpoint", PathKind::Any);
  cli.input("filler-file", PathKind::File);
  cli.output("summary", PathKind::File);
  cli.parse(argc, argv);
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
  const auto budgets = cache::budgets_from(cli);

  try {
    set_threads(cli.threads());
    auto rng = seed_everything(cli.seed());
    auto setup = load_eval_setup(cli, lengths, "passkey-eval");
    auto& loaded = setup.loaded;
    const auto& variant = setup.variant;
    const int64_t L = setup.L;
    const auto& run = setup.run;
    const auto& pc = setup.prompt;

    const auto settings = cache::settings_from(cli);
    auto names = cache::policy_names_from(cli);
    if (cli.flag("per-head")) std::replace(names.begin(), names.end(), std::string("budget"), std::string("budget-per-head"));
    std::vector<std::string> skipped;
    const auto policies = cache::make_policies(names, budgets, settings, lm::has_gate(loaded.config.kind), &skipped);
    if (!skipped.empty())
      std::cerr << fmt::format("passkey-eval: {} skipped (a softmax model has no bias to rank by)\n",
                               fmt::join(skipped, ", "));
    DecodeSchedule schedule;
    schedule.chunk = cli.get<int64_t>("chunk");
    schedule.evict_every = cli.get<int64_t>("evict-every");
    schedule.timed_tokens = cli.get<int64_t>("timed-tokens");
    // run_prompt's check, before the first prompt: bad input costs no work (UsageError, exit 2).
    for (const auto& policy : policies) check_observe_window(schedule, *policy);

    const auto depths = spread_depths(cli.get<int>("depths"));
    const std::vector<std::string> cell_columns = {
        "variant", "train_len", "eval_len", "depth", "policy", "budget", "occupancy", "accuracy",
        "decode_ms_per_token", "n_keys", "epsilon", "per_head", "prefill_ms",
        "decode_cpu_ms_per_token", "run"};
    CsvWriter cells(cli.out(), cell_columns);
    const std::string summary_path = cli.get<std::string>("summary").empty()
        ? (fs::path(cli.out()).replace_extension("").string() + ".summary.csv")
        : cli.get<std::string>("summary");
    CsvWriter summary(summary_path, {"variant", "train_len", "eval_len", "policy", "budget", "occupancy",
                                     "accuracy", "n_keys", "decode_ms_per_token", "epsilon",
                                     "per_head", "prefill_ms", "decode_cpu_ms_per_token", "run"});

    lm::IncrementalDecoder decoder(loaded.model);
    std::vector<double> head_scores;  // duo-calibrated's, from prompts at L
    if (std::any_of(policies.begin(), policies.end(), [](const auto& p) { return p->needs_head_scores(); }))
      head_scores = calibrate_heads(decoder, pc, L, cli.get<int>("calibration-keys"), cli.seed() + 1,
                                    schedule.chunk);
    int64_t prompts_total = 0;
    for (int k : keys_at) prompts_total += int64_t(k) * int64_t(policies.size());
    Progress bar("passkey-eval " + run, prompts_total, "prompt");
    int64_t done = 0;
    for (size_t li = 0; li < lengths.size(); ++li) {
      const int m = lengths[li], keys = keys_at[li];
      const int64_t n = int64_t(m) * L;
      // The same keys and depths for every policy at this length.
      const auto prompts = draw_prompts(pc, n, keys, depths, rng);
      for (const auto& policy_ptr : policies) {
        const cache::Policy& policy = *policy_ptr;
        struct Acc { double correct = 0, occ = 0, ms = 0, cpu_ms = 0, prefill = 0; int count = 0; };
        std::map<double, Acc> by_depth;
        Acc all;
        for (const auto& p : prompts) {
          const auto r = run_prompt(decoder, p, policy,
                                    policy.needs_head_scores() ? head_scores : std::vector<double>{},
                                    schedule, pc.key_digits);
          for (Acc* a : {&by_depth[p.depth], &all}) {
            a->correct += r.correct; a->occ += r.occupancy; a->ms += r.decode_ms_per_token;
            a->cpu_ms += r.decode_cpu_ms_per_token;
            a->prefill += r.prefill_ms; a->count += 1;
          }
          bar.update(++done, fmt::format("{}x {} {}", m, policy.name(), r.generated));
        }
        const auto eps = policy.reads_epsilon() ? fmt::format("{}", policy.settings().epsilon) : "";
        const int per_head = policy.per_head();
        for (const auto& [depth, a] : by_depth)
          cells.row(variant, L, n, depth, policy.csv_name(), budget_cell(policy), a.occ / a.count,
                    a.correct / a.count, a.ms / a.count, a.count, eps, per_head, a.prefill / a.count,
                    a.cpu_ms / a.count, run);
        summary.row(variant, L, n, policy.csv_name(), budget_cell(policy), all.occ / all.count,
                    all.correct / all.count, all.count, all.ms / all.count, eps, per_head,
                    all.prefill / all.count, all.cpu_ms / all.count, run);
        std::cerr << fmt::format("\n{} {}x{} {} budget {}: accuracy {:.2f}, occupancy {:.3f}, {:.3f} ms/token ({:.3f} CPU)\n",
                                 variant, m, L, policy.name(), budget_cell(policy),
                                 all.correct / all.count, all.occ / all.count, all.ms / all.count,
                                 all.cpu_ms / all.count);
      }
    }
    bar.finish();
    const auto prov = eval_provenance(cli);
    cells.commit(prov);
    summary.commit(prov);
  } catch (const UsageError& e) {  // bad input found before any prompt: exit 2
    fail_usage(e.what());
  } catch (const std::exception& e) {
    std::cerr << "error: " << one_line(e.what()) << "\n";
    return 1;
  }
  return 0;
}
