// --filler: where a passkey prompt's filler comes from (SPEC section 6; issue 46). One name from
// the command line to the CSVs' `filler` column:
//   repeated           the classic sentence group (or --filler-file's text), repeated from its
//                      start in every prompt: the form the C6 verdict is judged on (the default);
//   corpus-<split>     natural text: every prompt takes its own passage of that split of
//                      --corpus (its documents, whitespace collapsed, joined by spaces), starting
//                      at a sentence start that the seed picks (prompt.h's draw_prompts) and the
//                      cells table records (filler_offsets).
// Evaluators take the held-out splits (corpus-test, corpus-validation), never the text a model
// was trained on; passkey-train takes corpus-train.
#pragma once

#include "experiments/cli.h"
#include "lm/passkey/prompt.h"

#include <string>
#include <vector>

namespace fpa::passkey {

// Declares --filler with the values `allowed` (the first is the default), --filler-file, and,
// when `declare_corpus`, --corpus (default data/brown/text), read only for a corpus-* filler.
void add_filler_options(Cli& cli, const std::vector<std::string>& allowed, bool declare_corpus);

// Sets pc's filler, filler_source and filler_seed (--seed) from the options; bad input (a
// missing corpus, --filler-file with a corpus filler) ends the program with exit code 2.
void apply_filler_options(const Cli& cli, PromptConfig& pc);

// The text of a corpus split as one filler: documents whitespace-collapsed, joined by spaces.
std::string split_filler_text(const std::string& corpus_dir, const std::string& split);

}  // namespace fpa::passkey
