// The training loop of lm-train, as a library function so tests can run it in-process.
//
// One optimiser step: draw the global batch, keep this rank's rows, run `accum` micro-batches
// (gradients summed, each loss scaled by 1/accum), average gradients and the loss over ranks,
// stop on a non-finite loss, clip, set the scheduled learning rate, AdamW step. Rank 0 validates
// every `val_every` steps, logs every step and checkpoints every `checkpoint_every` steps and at
// the end.
#pragma once

#include "lm/distributed.h"
#include "lm/model.h"
#include "lm/presets.h"

#include <cstdint>
#include <string>

namespace fpa::lm {

struct TrainOptions {
  std::string preset_name = "custom";
  ModelConfig model;
  TrainConfig train;
  std::string corpus_dir;
  std::string out_dir;
  uint64_t seed = 0;
  bool resume = false;          // continue from <out_dir>/checkpoint.pt when it exists
  bool show_progress = true;
  // Provenance JSON written as log.csv.json before each log.csv, so that no log is ever on disk
  // without its sidecar (lm-train fills it; empty: no sidecar).
  std::string log_provenance;
  // For tests: return after this many steps as if killed (no final checkpoint); -1: never.
  int64_t stop_after_steps = -1;
  // For tests: treat the loss of this step (1-based) as NaN; -1: never.
  int64_t fault_nan_at_step = -1;
};

struct TrainOutcome {
  int64_t steps_done = 0;
  bool diverged = false;        // stopped on a NaN or infinite loss
  std::string message;          // the one-line reason when diverged
  double final_val_loss = 0;    // last validation loss (nats per token)
  double tokens_per_s = 0;      // training throughput (all ranks), validation excluded
  int64_t params = 0;
};

// Throws std::runtime_error (one clear line) on bad input: missing corpus, an existing run
// without --resume, a checkpoint for a different model, a run directory another process holds
// (rank 0 locks it, experiments/run_dir.h). A resume rebuilds a log that lags its checkpoint.
TrainOutcome train(const TrainOptions& options, Communicator& comm);

// The log CSV's header (SPEC: step, tokens, train_loss, val_loss, lr, elapsed_s).
const char* train_log_header();

}  // namespace fpa::lm
