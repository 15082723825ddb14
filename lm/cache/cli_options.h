// The cache-policy options of every evaluator that runs policies (passkey-eval, lm-compress): one
// home for their names, defaults, ranges and checks, and for the Settings they make.
//   --policies  --budgets  --epsilon  --sinks  --duo-window  [--observe: query-aware tools]
#pragma once

#include "experiments/cli.h"
#include "lm/cache/policy.h"

#include <string>
#include <vector>

namespace fpa::cache {

struct PolicyOptionDefaults {
  std::string policies;       // the tool's default list
  std::string budgets = "0.25";
  int64_t duo_window = 60;    // sinks + this many recent keys per streaming head
  bool query_aware = true;    // the tool can run snapkv (adds --observe); false refuses it
};

// Adds the options and their checks (unknown or repeated policies, a query-aware or calibrated
// policy where the tool cannot run one, ranges) to `cli`, before cli.parse().
void add_policy_options(Cli& cli, const PolicyOptionDefaults& defaults);

// After cli.parse(): the settings (epsilon, sinks, duo window, observe, seed = --seed), the
// policy names, and the kept fractions (each in (0, 1], no repeats; exit 2 otherwise).
Settings settings_from(const Cli& cli);
std::vector<std::string> policy_names_from(const Cli& cli);
std::vector<double> budgets_from(const Cli& cli);

}  // namespace fpa::cache
