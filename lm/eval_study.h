// The study of lm-eval, callable in-process: validation and test loss of a model over a corpus
// (lm/evaluate.h), then its tables: perplexity and bits per byte per split, optionally the loss
// per window position and the one-row summary of SPEC section 7. lm-eval only parses flags,
// loads the checkpoint and the corpus, and calls these two.
#pragma once

#include "experiments/provenance.h"
#include "lm/checkpoint.h"
#include "lm/corpus.h"
#include "lm/evaluate.h"
#include "lm/tokenizer.h"

#include <cstdint>
#include <string>

namespace fpa::lm {

struct LmEvalSettings {
  int64_t batch = 16;              // windows per forward pass
  int64_t max_tokens_per_doc = 0;  // documents truncated to this many tokens (0: whole)
  std::string out;                 // per-split table
  std::string positions, summary;  // optional tables; empty: not written
  // The tokenizer the checkpoint records (lm/corpus_tokenizer.h's recorded_tokenizer).
  Tokenizer tokenizer = Tokenizer::bytes();
};

struct LmEvalResult {
  DocumentEval validation, test;
};

// `loaded` is not const: evaluation runs the model (LanguageModel& in lm/evaluate.h).
LmEvalResult run_lm_eval(const LmEvalSettings& settings, LoadedModel& loaded,
                         const Corpus& corpus);

// Writes the tables with `provenance` (the summary row names the training run's seed and config
// file, `trained`), then prints the one-line result to stderr.
void report_lm_eval(const LmEvalResult& result, const LmEvalSettings& settings,
                    const LoadedModel& loaded, const Corpus& corpus, const TrainingRecord& trained,
                    const Provenance& provenance);

}  // namespace fpa::lm
