#include "lm/passkey/eval_setup.h"

#include "lm/corpus_tokenizer.h"
#include "lm/memory.h"
#include "lm/passkey/filler.h"
#include "lm/passkey/token_prompt.h"
#include "lm/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>

namespace fpa::passkey {
namespace {

// The checkpoint's sub-word tokenizer, read from beside --corpus as lm-eval reads it, or null for
// a byte-level checkpoint. A missing --corpus folder or model file: one line, exit 2.
std::shared_ptr<const lm::Tokenizer> subword_tokenizer(const Cli& cli, const std::string& recorded,
                                                       const std::string& tool) {
  if (recorded.empty()) return nullptr;  // bytes: every published checkpoint
  const auto corpus = cli.get<std::string>("corpus");
  std::error_code ec;
  if (!std::filesystem::is_directory(corpus, ec))
    fail_usage(fmt::format("{}: --corpus '{}' is not a folder; checkpoint '{}' reads text with "
                           "tokenizer '{}', whose model lies beside its corpus", tool, corpus,
                           cli.get<std::string>("checkpoint"), recorded));
  try {
    return std::make_shared<const lm::Tokenizer>(lm::recorded_tokenizer(recorded, corpus));
  } catch (const UsageError& e) {  // names the model file and both checksums
    fail_usage(fmt::format("{}: --corpus '{}': {}", tool, corpus, e.what()));
  }
}

}  // namespace

EvalSetup load_eval_setup(const Cli& cli, const std::vector<int>& lengths, const std::string& tool) {
  const int64_t longest_multiple = *std::max_element(lengths.begin(), lengths.end());
  const int64_t shortest_multiple = *std::min_element(lengths.begin(), lengths.end());
  const int64_t given_L = cli.has("train-len") ? cli.get<int64_t>("train-len") : 0;
  if (given_L > 0)  // before loading the checkpoint
    lm::require_sequence_length(longest_multiple * given_L,
                                fmt::format("{} at --lengths x --train-len {}", tool, given_L));
  EvalSetup s;
  s.loaded = lm::load_model(cli.get<std::string>("checkpoint"));
  s.variant = cli.get<std::string>("variant").empty() ? lm::to_string(s.loaded.config.kind)
                                                      : cli.get<std::string>("variant");
  s.L = given_L > 0 ? given_L : s.loaded.config.context;
  s.run = lm::run_name(cli.get<std::string>("checkpoint"));
  s.prompt.key_digits = cli.get<int>("key-digits");
  apply_filler_options(cli, s.prompt);
  s.prompt.tokenizer = subword_tokenizer(cli, s.loaded.progress.tokenizer, tool);
  const int64_t longest = longest_multiple * s.L;
  lm::require_sequence_length(longest, fmt::format("{} at --lengths x the training length {}", tool, s.L));
  if (!s.prompt.subword() && shortest_multiple * s.L < s.prompt.fixed_bytes())
    fail_usage(fmt::format("--lengths x the training length: the shortest prompt has {} bytes, fewer "
                           "than the prompt's fixed parts ({} bytes)",
                           shortest_multiple * s.L, s.prompt.fixed_bytes()));
  if (s.prompt.subword() && shortest_multiple * s.L < fixed_tokens_bound(s.prompt))
    fail_usage(fmt::format("--lengths x the training length: the shortest prompt has {} tokens, fewer "
                           "than the prompt's fixed parts may take ({} tokens)",
                           shortest_multiple * s.L, fixed_tokens_bound(s.prompt)));
  lm::require_decoding_memory(s.loaded.config, longest,
                              fmt::format("{} at --lengths {} x L = {}", tool, longest_multiple, longest));
  return s;
}

Provenance eval_provenance(const Cli& cli, const EvalSetup& setup) {
  auto prov = Provenance::from(cli);
  const auto trained = lm::training_record(cli.get<std::string>("checkpoint"));
  prov.config["train-seed"] = trained.seed;
  prov.config["train-config"] = trained.config;
  if (setup.prompt.subword()) prov.config["tokenizer"] = tokenizer_cell(setup.prompt);
  return prov;
}

std::string tokenizer_cell(const PromptConfig& prompt) {
  return prompt.subword() ? prompt.tokenizer->identity() : "";
}

std::vector<std::string> with_tokenizer(std::vector<std::string> columns, const std::string& cell) {
  if (!cell.empty()) columns.push_back("tokenizer");
  return columns;
}

}  // namespace fpa::passkey
