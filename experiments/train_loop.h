// The one training loop of the suite: lm-train (lm/text_training.h), passkey-train
// (lm/passkey/train_task.h) and synthetic-run (synthetic/train.h) are this function with their
// own model, batches, loss, metrics and log columns. Read train_loop.cpp top to bottom for what
// a run does; a study only says what one step and one evaluation are.
//
// One step, in this order:
//   lr = learning_rate(schedule, step) on every group -> zero_grad -> task.forward_backward (the
//   task draws the batch, computes the loss, calls backward and returns the loss value; lm also
//   averages gradients over ranks there) -> stop on a non-finite loss, before the optimiser
//   step -> clip the global gradient norm to schedule.clip (0: off) -> optimiser step ->
//   task.evaluate(done) on the lead rank -> the log row and the progress line -> a checkpoint
//   every run.checkpoint_every steps, at the end and when the run stops early.
//
// With a run directory (run.out_dir) the loop also owns: a lock, --resume from the checkpoint,
// stale temporary files removed, the log (<out_dir>/<log_name> with its provenance sidecar,
// rewritten at every checkpoint and rebuilt from the checkpoint when a kill left it behind), the
// stop once the task has reached its goal, and the run's --out copy of the log. Without one
// (synthetic-run, whose runs are short and whose sweep resumes whole runs) nothing is written.
#pragma once

#include "experiments/communicator.h"

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>

namespace fpa {

// The optimisation schedule every trainer runs: linear warm-up to lr over `warmup` steps, then
// cosine decay to lr * min_lr_ratio at the last of `steps`; the global gradient norm clipped to
// `clip` (0: off). Studies keep it as the base of their training settings (lm::TrainConfig,
// synthetic::RunConfig), so each value is written once, in their field tables.
struct TrainSchedule {
  int64_t steps = 1000;       // optimiser steps
  double lr = 1e-3;           // peak learning rate
  double min_lr_ratio = 0.1;  // the cosine ends at lr * min_lr_ratio
  int64_t warmup = 100;       // linear warm-up steps
  double clip = 0;            // global gradient-norm clipping; 0: off
};

// The learning rate of step `step` (0-based). The only schedule of the suite.
double learning_rate(const TrainSchedule& s, int64_t step);

// One finished optimiser step, as the log and progress line see it.
struct StepRecord {
  int64_t step = 0;         // steps done (1-based step number)
  int64_t tokens = 0;       // training tokens so far (all ranks)
  double loss = 0;          // the step's training loss
  double lr = 0;            // its learning rate
  double elapsed_s = 0;     // wall time of the run so far (all invocations)
  double train_time_s = 0;  // time in training steps only
};

// Where a run stands: what a checkpoint saves besides the model and optimiser.
struct RunProgress {
  int64_t step = 0;          // optimiser steps done
  int64_t tokens = 0;        // training tokens consumed (global, all ranks)
  double elapsed_s = 0;      // training wall time so far
  std::string sampler_state; // the task's data position (TrainTask::data_state)
  std::string log_rows;      // CSV rows written so far (no header)
  double train_time_s = 0;   // time in training steps only (evaluation, checkpoints excluded)
};

// The model side of a run in the study's checkpoint format (lm/checkpoint.h for lm's models).
class Checkpointer {
 public:
  virtual ~Checkpointer() = default;
  // The model, its optimiser state and `p`, replacing `path` atomically.
  virtual void save(const std::string& path, const RunProgress& p) = 0;
  // Loads the model and optimiser state; throws UsageError for a checkpoint of another model.
  virtual RunProgress resume(const std::string& path) = 0;
  virtual int64_t saved_step(const std::string& path) = 0;  // for the message of a diverged run
};

// What a study contributes: batches, the loss, metrics and its log columns.
class TrainTask {
 public:
  virtual ~TrainTask() = default;
  // Step `step` (0-based): draw its batch, forward, backward. Returns the loss value the loop
  // checks; adds the step's tokens.
  virtual double forward_backward(int64_t step, int64_t& tokens) = 0;
  // After step `done`, on the lead rank: the evaluations due then.
  virtual void evaluate(int64_t done) = 0;
  // The log's columns, the log row of a step (no newline) and the progress line's note, after
  // evaluate(). The checkpoint's rows of older runs in the current columns (default: unchanged).
  virtual std::string log_header() const = 0;
  virtual std::string log_row(const StepRecord& r) const = 0;
  virtual std::string progress_note(const StepRecord& r) const = 0;
  virtual std::string upgrade_log_rows(const std::string& rows) const { return rows; }
  // The data position, saved in checkpoints and restored on resume.
  virtual std::string data_state() const { return ""; }
  virtual void set_data_state(const std::string&) {}
  // Non-empty when the run has reached its goal and stops (with a checkpoint), saying so ("learned
  // the task at step 1200"): after a step (asked on the lead rank only, so a task with a goal
  // trains in one process), and on resume from the checkpoint's log rows (nothing to do then).
  virtual std::string goal_reached() const { return ""; }
  virtual std::string goal_reached_in(const std::string&) const { return ""; }
};

// How the run is driven, the same settings for every study, given once.
struct TrainRun {
  std::string tool;            // "lm-train": the prefix of messages
  std::string out_dir;         // the run directory; "": none (no lock, log or checkpoints)
  std::string log_name;        // the log's file name in out_dir
  std::string out_copy;        // --out: a copy of the log and its sidecar at the end; "" none
  std::string progress_label;  // the progress line's label
  std::string banner;          // one line printed once the run directory is checked and locked
  bool resume = false;         // continue from the checkpoint when there is one
  bool show_progress = true;
  // The log's provenance sidecar (JSON), made when it is written; empty function: none.
  std::function<std::string()> provenance;
  int64_t checkpoint_every = 100;
  // Stop with a checkpoint after this many steps of this invocation; 0: run to schedule.steps.
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
  std::string log_rows;         // the whole log's rows (no header)
};

// What the loop trains: the model (built and initialised by the caller, after seeding), its
// optimiser, and its checkpoint format (null: no checkpoints; needs run.out_dir empty).
// The model lives on `device` (--device: experiments/execution.h); a checkpoint is read on the
// CPU and the resumed model and optimiser state are moved there, so a run resumes on another
// device than it started on.
struct Trainee {
  torch::nn::Module& model;
  torch::optim::Optimizer& optimizer;
  Checkpointer* checkpointer = nullptr;
  torch::Device device = torch::kCPU;
};

// Trains under `schedule`. Throws UsageError (one clear line) for an existing run without
// resume, a checkpoint for a different model or another process holding the run directory;
// std::runtime_error for a corrupt one.
TrainOutcome train(Trainee trainee, const TrainSchedule& schedule, TrainTask& task,
                   const TrainRun& run, Communicator& comm);

}  // namespace fpa
