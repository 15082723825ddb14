// lm-train's study: next-token prediction on windows of a text corpus, with a validation loss
// every t.val_every steps, run by the suite's one training loop (experiments/train_loop.h). A
// library function so tests can train in-process.
//
// One step: draw the global batch, keep this rank's rows, run `accum` micro-batches (gradients
// summed, each loss scaled by 1/accum), average gradients and the loss over ranks.
#pragma once

#include "lm/distributed.h"
#include "lm/model.h"
#include "lm/presets.h"
#include "experiments/execution.h"
#include "lm/tokenizer.h"
#include "experiments/train_loop.h"

#include <cstdint>
#include <string>

namespace fpa::lm {

struct TrainOptions {
  std::string preset_name = "custom";  // recorded in a new run's checkpoints
  ModelConfig model;
  TrainConfig train;
  std::string corpus_dir;
  // The corpus's token ids (lm/corpus_tokenizer.h's run_tokenizer for train.tokenizer); its
  // vocabulary must be the model's. Recorded in checkpoints unless it is bytes.
  Tokenizer tokenizer = Tokenizer::bytes();
  uint64_t seed = 0;
  Execution execution;  // --device and --precision: where the model trains, and in what precision
  // The run directory, --out copy, --resume, provenance and test faults, as the caller sets them;
  // train() names the tool, the log (log.csv), the progress label, the banner and the checkpoint
  // interval (train.checkpoint_every).
  TrainRun run;
};

// What a finished run reports: the loop's outcome and the last validation loss.
struct TextOutcome : TrainOutcome {
  double final_val_loss = 0;  // nats per token
};

// Throws std::runtime_error (one clear line) on bad input: missing corpus, an existing run
// without --resume, a checkpoint for a different model, a run directory another process holds
// (rank 0 locks it, experiments/run_dir.h). A resume rebuilds a log that lags its checkpoint.
TextOutcome train(const TrainOptions& options, Communicator& comm);

// The log CSV's header (SPEC: step, tokens, train_loss, val_loss, lr, elapsed_s).
const char* train_log_header();

}  // namespace fpa::lm
