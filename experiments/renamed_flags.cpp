#include "renamed_flags.h"

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

}  // namespace fpa
