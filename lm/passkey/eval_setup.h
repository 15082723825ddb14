// What passkey-eval and passkey-probe share before their first prompt (one set-up, so that both
// read the same model, length and prompts): the checkpoint or weights file, the CSV label, the
// training length L, the prompt configuration, and the checks that every evaluated length fits
// (sequence length, decoding memory, the prompt's fixed parts); and the provenance both write,
// with the training run's seed and config file.
#pragma once

#include "experiments/cli.h"
#include "experiments/provenance.h"
#include "lm/checkpoint.h"
#include "lm/passkey/prompt.h"

#include <string>
#include <vector>

namespace fpa::passkey {

struct EvalSetup {
  lm::LoadedModel loaded;
  std::string variant;  // the CSV label: --variant when given, else the model's attention kind
  std::string run;      // the checkpoint's run name (lm::run_name)
  int64_t L = 0;        // training length: --train-len when the tool has it and it is > 0, else the model's context
  PromptConfig prompt;  // --key-digits, --filler (filler.h)
};

// Reads --checkpoint, --variant, --key-digits, --filler (with --filler-file or --corpus) and
// (when the tool defines it) --train-len. A sub-word checkpoint's tokenizer is read from beside
// --corpus, as lm-eval reads it (lm/corpus_tokenizer.h), and its prompts and lengths count tokens
// (token_prompt.h). Bad input (a length that does not fit, a missing or corrupt file, a sub-word
// checkpoint whose --corpus has no model of its tokenizer) ends the program with exit code 2 or
// throws UsageError; `tool` names it in messages.
EvalSetup load_eval_setup(const Cli& cli, const std::vector<int>& lengths, const std::string& tool);

// The provenance of an evaluation's CSVs: the tool's options plus the training run's seed and
// config file (train-seed, train-config) and, for a sub-word checkpoint, its tokenizer's identity
// (`tokenizer`, as lm-eval records it).
Provenance eval_provenance(const Cli& cli, const EvalSetup& setup);

// The CSVs' `tokenizer` column: the identity line of a sub-word checkpoint's tokenizer, "" for
// bytes, whose tables have no such column (as a byte-level checkpoint records no tokenizer), so
// byte-level tables stay as published. with_tokenizer adds the column's name when it is not "".
std::string tokenizer_cell(const PromptConfig& prompt);
std::vector<std::string> with_tokenizer(std::vector<std::string> columns, const std::string& cell);

}  // namespace fpa::passkey
