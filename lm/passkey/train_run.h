// One passkey-train run from its settings: the model (seeded, with its optional initial gate bias
// and embedding scale), the batches, the held-out set, the task (lm/passkey/train_task.h) and the
// suite's one training loop. passkey_train.cpp maps the command line to these settings; tests
// call it in-process.
#pragma once

#include "experiments/train_loop.h"
#include "lm/model.h"
#include "lm/passkey/prompt.h"
#include "lm/passkey/train_task.h"
#include "lm/train_config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fpa::passkey {

struct TrainSettings {
  lm::ModelConfig model;
  lm::TrainConfig train;
  PromptConfig prompt;            // key digits and filler
  TaskOptions task;               // curriculum, loss weight, held-out checks, stop when learned
  int64_t check_keys = 40;        // held-out prompts per check
  std::string corpus_dir;         // text mixed into the batches ("": none)
  double corpus_fraction = 0;     // fraction of each batch that is corpus text
  double embed_std = 0;           // std of the token embedding's initialisation; 0: the model's
  std::vector<double> gate_bias;  // initial per-head gate/increment bias; empty: the model's
  uint64_t seed = 0;
  Execution execution;            // --device, --precision
  TrainRun run;                   // out_dir, --out, --resume, provenance, --stop-after
};

// Trains (or resumes) the run in s.run.out_dir. Throws UsageError / std::invalid_argument on
// bad input found before training (exit 2), std::runtime_error otherwise.
TrainOutcome train_passkey(const TrainSettings& s);

}  // namespace fpa::passkey
