// The one trainer of the suite: lm-train (lm/text_training.h) and passkey-train
// (lm/passkey/train_task.h) are this function with their own batches, loss and log columns.
//
// What it owns, the same for every study: the run directory (a lock, --resume from its
// checkpoint, stale temporary files removed), the optimiser (lm/train_loop.h), the log
// (<out_dir>/<log_name> with its provenance sidecar, rewritten at every checkpoint and rebuilt
// from the checkpoint when a kill left it behind), checkpoints every t.checkpoint_every steps and
// at the end, the progress line, a stop on a non-finite loss (the caller exits 3), a stop when
// the task has reached its goal, and the run's --out copy of the log.
#pragma once

#include "lm/checkpoint.h"
#include "lm/distributed.h"
#include "lm/model.h"
#include "lm/presets.h"

#include <cstdint>
#include <functional>
#include <string>

namespace fpa::lm {

// One finished optimiser step, as the log and progress line see it.
struct StepRecord {
  int64_t step = 0;       // steps done (1-based step number)
  int64_t tokens = 0;     // training tokens so far (all ranks)
  double loss = 0;        // the step's training loss
  double lr = 0;          // its learning rate
  double elapsed_s = 0;   // wall time of the run so far (all invocations)
  double train_time_s = 0;  // time in training steps only
};

// What a study contributes.
class TrainTask {
 public:
  virtual ~TrainTask() = default;
  virtual std::string log_header() const = 0;  // the log's columns
  // The checkpoint's log rows of older runs in the current columns (default: unchanged).
  virtual std::string upgrade_log_rows(const std::string& rows) const { return rows; }
  // The data position, saved in checkpoints and restored on resume.
  virtual std::string data_state() const = 0;
  virtual void set_data_state(const std::string& state) = 0;
  // Step `step` (0-based): draw its batch, forward, backward (gradients averaged over ranks when
  // there are several). Returns the loss value the trainer checks; adds the step's tokens.
  virtual double forward_backward(LanguageModel& model, int64_t step, int64_t& tokens) = 0;
  // After step `done` on the lead rank: the evaluations due then (validation, held-out check).
  virtual void evaluate(LanguageModel& model, int64_t done) = 0;
  // The log row of a step (no newline) and the progress line's note, after evaluate().
  virtual std::string log_row(const StepRecord& r) const = 0;
  virtual std::string progress_note(const StepRecord& r) const = 0;
  // Non-empty when the run has reached its goal and stops (with a checkpoint), saying so ("learned
  // the task at step 1200"): after a step (asked on the lead rank only, so a task with a goal
  // trains in one process), and on resume from the checkpoint's log rows (nothing to do then).
  virtual std::string goal_reached() const { return ""; }
  virtual std::string goal_reached_in(const std::string& log_rows) const { return ""; }
};

// How the run is driven, the same settings for every study.
struct RunSettings {
  std::string tool;            // "lm-train": the prefix of messages
  std::string out_dir;         // the run directory
  std::string log_name;        // the log's file name in out_dir
  std::string out_copy;        // --out: a copy of the log and its sidecar at the end; "" none
  std::string progress_label;  // the progress line's label
  std::string banner;          // one line printed once the run directory is checked and locked
  std::string preset;          // recorded in a new run's checkpoints (lm-train's preset name)
  bool resume = false;         // continue from the checkpoint when there is one
  bool show_progress = true;
  // The log's provenance sidecar (JSON), made when it is written; empty function: none.
  std::function<std::string()> provenance;
  // Stop with a checkpoint after this many steps of this invocation; 0: run to t.steps.
  int64_t stop_after = 0;
  // For tests: return after this many steps as if killed (no final checkpoint); -1: never.
  int64_t kill_after_steps = -1;
  // For tests: treat the loss of this step (1-based) as NaN; -1: never.
  int64_t fault_nan_at_step = -1;
};

struct TrainOutcome {
  int64_t steps_done = 0;
  bool diverged = false;        // stopped on a NaN or infinite loss
  std::string message;          // the one-line reason when diverged
  std::string nothing_to_do;    // why a resumed run trained no step ("" when it trained)
  double tokens_per_s = 0;      // training throughput (all ranks), evaluation excluded
  int64_t params = 0;
  std::string log_rows;         // the whole log's rows (no header)
  double final_val_loss = 0;    // lm-train's last validation loss (nats per token)
};

// Trains `model` (built and initialised by the caller, after seeding) under `t`. Throws
// UsageError (one clear line) for an existing run without resume, a checkpoint for a different
// model or another process holding the run directory; std::runtime_error for a corrupt one.
TrainOutcome run_training(LanguageModel& model, const TrainConfig& t, TrainTask& task,
                          const RunSettings& run, Communicator& comm);

}  // namespace fpa::lm
