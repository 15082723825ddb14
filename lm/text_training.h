// lm-train's study: next-token prediction on windows of a text corpus, with a validation loss
// every t.val_every steps, run by the suite's one trainer (lm/trainer.h). A library function so
// tests can train in-process.
//
// One step: draw the global batch, keep this rank's rows, run `accum` micro-batches (gradients
// summed, each loss scaled by 1/accum), average gradients and the loss over ranks.
#pragma once

#include "lm/distributed.h"
#include "lm/model.h"
#include "lm/presets.h"
#include "lm/trainer.h"

#include <cstdint>
#include <functional>
#include <string>

namespace fpa::lm {

struct TrainOptions {
  std::string preset_name = "custom";
  ModelConfig model;
  TrainConfig train;
  std::string corpus_dir;
  std::string out_dir;
  std::string out_copy;         // --out: a copy of log.csv and its sidecar; "" none
  uint64_t seed = 0;
  bool resume = false;          // continue from <out_dir>/checkpoint.pt when it exists
  bool show_progress = true;
  // The provenance JSON of log.csv.json, made whenever the log is written (empty: no sidecar).
  std::function<std::string()> provenance;
  // For tests: return after this many steps as if killed (no final checkpoint); -1: never.
  int64_t kill_after_steps = -1;
  // For tests: treat the loss of this step (1-based) as NaN; -1: never.
  int64_t fault_nan_at_step = -1;
};

// Throws std::runtime_error (one clear line) on bad input: missing corpus, an existing run
// without --resume, a checkpoint for a different model, a run directory another process holds
// (rank 0 locks it, experiments/run_dir.h). A resume rebuilds a log that lags its checkpoint.
TrainOutcome train(const TrainOptions& options, Communicator& comm);

// The log CSV's header (SPEC: step, tokens, train_loss, val_loss, lr, elapsed_s).
const char* train_log_header();

}  // namespace fpa::lm
