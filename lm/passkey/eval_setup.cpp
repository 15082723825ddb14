#include "lm/passkey/eval_setup.h"

#include "lm/corpus_tokenizer.h"
#include "lm/memory.h"
#include "lm/passkey/filler.h"
#include "lm/model.h"

#include <fmt/format.h>

#include <algorithm>

namespace fpa::passkey {

EvalSetup load_eval_setup(const Cli& cli, const std::vector<int>& lengths, const std::string& tool) {
  const int64_t longest_multiple = *std::max_element(lengths.begin(), lengths.end());
  const int64_t shortest_multiple = *std::min_element(lengths.begin(), lengths.end());
  const int64_t given_L = cli.has("train-len") ? cli.get<int64_t>("train-len") : 0;
  if (given_L > 0)  // before loading the checkpoint
    lm::require_sequence_length(longest_multiple * given_L,
                                fmt::format("{} at --lengths x --train-len {}", tool, given_L));
  EvalSetup s;
  s.loaded = lm::load_model(cli.get<std::string>("checkpoint"));
  lm::require_byte_tokenizer(s.loaded.progress.tokenizer, tool, cli.get<std::string>("checkpoint"));
  s.variant = cli.get<std::string>("variant").empty() ? lm::to_string(s.loaded.config.kind)
                                                      : cli.get<std::string>("variant");
  s.L = given_L > 0 ? given_L : s.loaded.config.context;
  s.run = lm::run_name(cli.get<std::string>("checkpoint"));
  s.prompt.key_digits = cli.get<int>("key-digits");
  apply_filler_options(cli, s.prompt);
  const int64_t longest = longest_multiple * s.L;
  lm::require_sequence_length(longest, fmt::format("{} at --lengths x the training length {}", tool, s.L));
  if (shortest_multiple * s.L < s.prompt.fixed_bytes())
    fail_usage(fmt::format("--lengths x the training length: the shortest prompt has {} bytes, fewer "
                           "than the prompt's fixed parts ({} bytes)",
                           shortest_multiple * s.L, s.prompt.fixed_bytes()));
  lm::require_decoding_memory(s.loaded.config, longest,
                              fmt::format("{} at --lengths {} x L = {}", tool, longest_multiple, longest));
  return s;
}

Provenance eval_provenance(const Cli& cli) {
  auto prov = Provenance::from(cli);
  const auto trained = lm::training_record(cli.get<std::string>("checkpoint"));
  prov.config["train-seed"] = trained.seed;
  prov.config["train-config"] = trained.config;
  return prov;
}

}  // namespace fpa::passkey
