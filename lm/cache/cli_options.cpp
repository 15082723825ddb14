#include "lm/cache/cli_options.h"

#include <fmt/format.h>

namespace fpa::cache {

void add_policy_options(Cli& cli, const PolicyOptionDefaults& d) {
  cli.add()
      ("policies", po::value<std::string>()->default_value(d.policies), "cache policies (lm/cache/README.md)")
      ("budgets", po::value<std::string>()->default_value(d.budgets), "kept fractions for the budgeted policies")
      ("epsilon", po::value<double>()->default_value(1e-3), "fpa-certified, fox-acp: epsilon of the certified threshold")
      ("sinks", po::value<int64_t>()->default_value(4), "window, h2o, duo-*: sink tokens")
      ("duo-window", po::value<int64_t>()->default_value(d.duo_window), d.duo_window_help.c_str());
  if (d.query_aware)
    cli.add()("observe", po::value<int64_t>()->default_value(32), "snapkv: the prompt's last queries whose attention scores the keys");
  cli.range("epsilon", 1e-300, 0.999999);
  cli.range("sinks", 0, 1e6);
  cli.range("duo-window", 1, 1e6);
  if (d.query_aware) cli.range("observe", 1, 1e6);
  const bool query_aware = d.query_aware;
  cli.require([query_aware](const po::variables_map& vm) {
    for (const auto& p : split_unique_list(vm["policies"].as<std::string>(), "policies")) {
      const auto policy = make_policy(p, Settings{});
      if (!query_aware && (policy->query_aware() || policy->needs_head_scores()))
        fail_usage(fmt::format("--policies: {} is not an online, query-agnostic policy (it needs a "
                               "question or a calibration run); running text has neither", p));
    }
    return true;
  }, "bad --policies");
}

Settings settings_from(const Cli& cli) {
  Settings s;
  s.epsilon = cli.get<double>("epsilon");
  s.sinks = cli.get<int64_t>("sinks");
  s.duo_window = cli.get<int64_t>("duo-window");
  if (cli.has("observe")) s.observe = cli.get<int64_t>("observe");
  s.seed = cli.seed();
  return s;
}

std::vector<std::string> policy_names_from(const Cli& cli) {
  return split_list(cli.get<std::string>("policies"), "policies");
}

std::vector<double> budgets_from(const Cli& cli) {
  const auto out = split_double_list(cli.get<std::string>("budgets"), "budgets");
  for (double x : out)
    if (!(x > 0 && x <= 1)) fail_usage(fmt::format("--budgets: '{}' is not in (0, 1]", x));
  require_unique(out, "budgets");
  return out;
}

}  // namespace fpa::cache
