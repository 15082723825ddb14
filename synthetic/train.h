// One training run of the one-layer model on a target-set task, and its held-out metrics.
//
// Training: MSE on every position, fresh random sequences each step, AdamW (one group, weight decay
// on every parameter, no clipping) on the suite's schedule, in the suite's one training loop
// (experiments/train_loop.h): linear warm-up and cosine decay to min_lr_ratio x lr (--lr-final).
// Metrics (SPEC section 4) on fixed held-out sequences of the training length n and of 2n: target
// mass (mean over queries of the attention mass on S_i; head mean and best head) and normalised MSE
// (MSE / variance of y). A run converges when mass >= 0.9 and normalised MSE <= 0.1 at n.
#pragma once

#include "experiments/execution.h"
#include "experiments/train_loop.h"
#include "model.h"
#include "task.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fpa::synthetic {

// A run's settings; the schedule (steps, lr, warmup, min_lr_ratio; clip stays 0) is the loop's.
struct RunConfig : TrainSchedule {
  RunConfig() { lr = 1e-2; }
  Task task;
  ModelConfig model;  // num_types is filled from the task
  int64_t n = 64;
  int64_t batch = 32;
  double weight_decay = 0.01;
  int64_t eval_every = 50;
  int64_t eval_seqs = 256;
  uint64_t seed = 0;
  Execution execution;  // --device, --precision: how it runs, not part of the run's key
};

struct Metrics {
  double mass = 0;       // head mean
  double mass_best = 0;  // best head
  double nmse = 0;
  double mse = 0;
};

inline bool converged(const Metrics& m) { return m.mass >= 0.9 && m.nmse <= 0.1; }

struct CurvePoint {
  int64_t step = 0;    // optimiser steps taken
  double lr = 0;
  double loss = 0;     // mean training loss since the previous point (NaN at step 0)
  Metrics held_out;    // at n
};

struct RunResult {
  std::vector<CurvePoint> curve;
  Metrics final_n, final_2n;
  int64_t steps_to_converge = -1;  // first curve step that met the criterion at n; -1: never
  double wall_s = 0;
};

struct Batch;
// On `execution`'s device and precision (the model must be there).
Metrics evaluate(TargetSetModel& model, const Batch& data, const Execution& execution = {});

// Trains and evaluates; `progress_label` non-empty shows a progress line. Throws
// std::runtime_error when the loss stops being finite.
RunResult train_run(const RunConfig& c, TargetSetModel& model, const std::string& progress_label = "");

// Held-out data of a run (fixed by the seed, disjoint stream from training).
Batch held_out(const RunConfig& c, int64_t n);

}  // namespace fpa::synthetic
