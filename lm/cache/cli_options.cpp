#include "lm/cache/cli_options.h"

#include "experiments/settings_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace fpa::cache {

namespace {

// The policies' settings a command line sets (experiments/settings_table.h); the kept fractions
// are a list (--budgets), one policy per fraction, and the seed is --seed.
const SettingsTable<Settings> kTable({
    {"epsilon", "", SettingRole::Run, SettingType::Real, 1e-300, 0.999999,
     "fpa-certified, fox-acp: epsilon of the certified threshold",
     [](const Settings& s) { return setting_text(s.epsilon); },
     [](Settings& s, const std::string& v) { s.epsilon = setting_real(v); }},
    {"sinks", "", SettingRole::Run, SettingType::Int, 0, 1e6, "window, h2o, duo-*: sink tokens", FPA_INT_SETTING(Settings, sinks)},
    {"duo-window", "", SettingRole::Run, SettingType::Int, 1, 1e6,
     "duo-*: recent tokens a streaming head keeps beside the sinks", FPA_INT_SETTING(Settings, duo_window)},
    {"observe", "", SettingRole::Run, SettingType::Int, 1, 1e6,
     "snapkv: the prompt's last queries whose attention scores the keys", FPA_INT_SETTING(Settings, observe)},
}, "cache-policy setting");

ToolSettings tool_settings(const Settings& d, int64_t duo_window, bool query_aware) {
  ToolSettings t{{{"epsilon", setting_text(d.epsilon)}, {"sinks", setting_text(d.sinks)},
                  {"duo-window", setting_text(duo_window)}}};
  if (query_aware) t.options.push_back({"observe", setting_text(d.observe)});
  return t;
}

}  // namespace

void add_policy_options(Cli& cli, const PolicyOptionDefaults& d) {
  cli.add()
      ("policies", po::value<std::string>()->default_value(d.policies), "cache policies (lm/cache/README.md)")
      ("budgets", po::value<std::string>()->default_value(d.budgets), "kept fractions for the budgeted policies");
  kTable.add_options(cli, tool_settings(Settings{}, d.duo_window, d.query_aware));
  // Every name is a policy: make_policy throws for one that is not, and parse() reports
  // "bad --policies (unknown cache policy '...' (<the policies>))". A repeated name is refused by
  // split_unique_list itself.
  cli.require([](const po::variables_map& vm) {
    for (const auto& p : split_unique_list(vm["policies"].as<std::string>(), "policies"))
      make_policy(p, Settings{});
    return true;
  }, "bad --policies");
  if (d.query_aware) return;
  // A tool without a question or a calibration run (lm-compress: running text) runs only online,
  // query-agnostic policies. The names are known here (the check above runs first).
  std::vector<std::string> needs_more;
  for (const auto& r : registry())
    if (const auto p = r.make(Settings{}); p->query_aware() || p->needs_head_scores())
      needs_more.push_back(r.name);
  cli.require([needs_more](const po::variables_map& vm) {
    for (const auto& p : split_list(vm["policies"].as<std::string>(), "policies"))
      if (std::find(needs_more.begin(), needs_more.end(), p) != needs_more.end()) return false;
    return true;
  }, fmt::format("--policies: {} runs online, query-agnostic policies only, not {} (each needs a "
                 "question or a calibration run; running text has neither)",
                 cli.program(), fmt::join(needs_more, ", ")));
}

Settings settings_from(const Cli& cli) {
  Settings s;
  // The defaults are only for declaring: every option here was declared with one, so each is set.
  kTable.apply_options(cli, tool_settings(s, s.duo_window, cli.has("observe")), s);
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
