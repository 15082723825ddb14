#include "renamed_flags.h"

#include "usage_error.h"

#include <fmt/format.h>

namespace fpa {

const std::vector<std::pair<std::string, std::string>>& renamed_flags() {
  static const std::vector<std::pair<std::string, std::string>> table = {
      {"min-grad", "fpa-backward"},        // lm-train, passkey-train
      {"fpa-grad", "fpa-backward"},        // synthetic-run
      {"fpa-grads", "fpa-backward"},       // synthetic-sweep (a list there)
      {"st-tau", "st-temperature"},        // synthetic-run, synthetic-sweep
      {"model", "variant"},                // synthetic-run
      {"models", "variants"},              // synthetic-sweep
      {"n", "length"},                     // synthetic-run, synthetic-sweep
      {"context", "length"},               // lm-train
      {"n-list", "lengths"},               // attention-bench, bias-bench
      {"corpus-dir", "corpus"},            // passkey-train
      {"embed", "hidden"},                 // synthetic-run
      {"positions-out", "positions"},      // lm-eval
      {"summary-out", "summary"},          // lm-eval
  };
  return table;
}

std::string renamed_to(const std::string& name) {
  for (const auto& [old_name, new_name] : renamed_flags())
    if (old_name == name) return new_name;
  return "";
}

void refuse_renamed(const std::string& name,
                    const boost::program_options::options_description& all,
                    const std::string& where) {
  const auto now = renamed_to(name);
  if (!now.empty() && !all.find_nothrow(name, false) && all.find_nothrow(now, false))
    fail_usage(fmt::format("{}--{} is now --{}", where, name, now));
}

}  // namespace fpa
