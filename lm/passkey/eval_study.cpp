#include "lm/passkey/eval_study.h"

#include "experiments/progress.h"
#include "experiments/torch_runtime.h"
#include "lm/decode.h"
#include "lm/passkey/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <utility>

namespace fpa::passkey {
namespace {

std::string budget_cell(const cache::Policy& p) {
  if (p.keeps_everything()) return "1";
  if (!p.budgeted()) return "";
  return fmt::format("{}", p.settings().budget);
}

}  // namespace

PasskeyEvalTables run_passkey_eval(const PasskeyEvalSettings& s, const EvalSetup& setup,
                                   const std::vector<std::unique_ptr<cache::Policy>>& policies) {
  // run_prompt's check, before the first prompt: bad input costs no work (UsageError, exit 2).
  for (const auto& policy : policies) check_observe_window(s.schedule, *policy);
  auto rng = seed_everything(s.seed);
  const auto& variant = setup.variant;
  const int64_t L = setup.L;
  const auto& run = setup.run;
  const auto& pc = setup.prompt;
  const auto depths = spread_depths(s.depths);
  // Lengths count the model's tokens; a sub-word run's rows end with its tokenizer (eval_setup.h).
  const auto tokenizer = tokenizer_cell(pc);
  CsvWriter cells(s.out, with_tokenizer({"variant", "train_len", "eval_len", "depth", "policy", "budget",
                          "occupancy", "accuracy", "decode_ms_per_token", "n_keys", "epsilon",
                          "per_head", "prefill_ms", "decode_cpu_ms_per_token", "run", "filler",
                          "filler_offsets"}, tokenizer));
  CsvWriter summary(s.summary, with_tokenizer({"variant", "train_len", "eval_len", "policy", "budget",
                                "occupancy", "accuracy", "n_keys", "decode_ms_per_token",
                                "epsilon", "per_head", "prefill_ms", "decode_cpu_ms_per_token",
                                "run", "filler"}, tokenizer));
  const auto row = [&tokenizer](CsvWriter& table, const auto&... values) {
    if (tokenizer.empty()) table.row(values...);
    else table.row(values..., tokenizer);
  };

  lm::IncrementalDecoder decoder(setup.loaded.model);
  std::vector<double> head_scores;  // duo-calibrated's, from prompts at L
  if (std::any_of(policies.begin(), policies.end(), [](const auto& p) { return p->needs_head_scores(); }))
    head_scores = calibrate_heads(decoder, pc, L, s.calibration_keys, s.seed + 1, s.schedule.chunk);
  int64_t prompts_total = 0;
  for (int k : s.keys) prompts_total += int64_t(k) * int64_t(policies.size());
  Progress bar("passkey-eval " + run, prompts_total, "prompt");
  int64_t done = 0;
  for (size_t li = 0; li < s.lengths.size(); ++li) {
    const int m = s.lengths[li], keys = s.keys[li];
    const int64_t n = int64_t(m) * L;
    // The same keys and depths for every policy at this length.
    const auto prompts = draw_prompts(pc, n, keys, depths, rng);
    for (const auto& policy_ptr : policies) {
      const cache::Policy& policy = *policy_ptr;
      struct Acc {
        double correct = 0, occ = 0, ms = 0, cpu_ms = 0, prefill = 0;
        int count = 0;
        std::string offsets;  // the cell's passages (filler_offsets): where each prompt's filler starts
      };
      std::map<double, Acc> by_depth;
      Acc all;
      for (const auto& p : prompts) {
        const auto r = run_prompt(decoder, p, policy,
                                  policy.needs_head_scores() ? head_scores : std::vector<double>{},
                                  s.schedule);
        for (Acc* a : {&by_depth[p.depth], &all}) {
          a->correct += r.correct; a->occ += r.occupancy; a->ms += r.decode_ms_per_token;
          a->cpu_ms += r.decode_cpu_ms_per_token;
          a->prefill += r.prefill_ms; a->count += 1;
          a->offsets += (a->offsets.empty() ? "" : ";") + std::to_string(p.filler_offset);
        }
        bar.update(++done, fmt::format("{}x {} {}", m, policy.name(), r.generated));
      }
      const auto eps = policy.reads_epsilon() ? fmt::format("{}", policy.settings().epsilon) : "";
      const int per_head = policy.per_head();
      for (const auto& [depth, a] : by_depth)
        row(cells, variant, L, n, depth, policy.csv_name(), budget_cell(policy), a.occ / a.count,
                    a.correct / a.count, a.ms / a.count, a.count, eps, per_head,
                    a.prefill / a.count, a.cpu_ms / a.count, run, pc.filler_source, a.offsets);
      row(summary, variant, L, n, policy.csv_name(), budget_cell(policy), all.occ / all.count,
                    all.correct / all.count, all.count, all.ms / all.count, eps, per_head,
                    all.prefill / all.count, all.cpu_ms / all.count, run, pc.filler_source);
      std::cerr << fmt::format("\n{} {}x{} {} budget {}: accuracy {:.2f}, occupancy {:.3f}, {:.3f} ms/token ({:.3f} CPU)\n",
                               variant, m, L, policy.name(), budget_cell(policy),
                               all.correct / all.count, all.occ / all.count, all.ms / all.count,
                               all.cpu_ms / all.count);
    }
  }
  bar.finish();
  return {std::move(cells), std::move(summary)};
}

}  // namespace fpa::passkey
