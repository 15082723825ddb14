// The optimisation loop every trainer of this suite runs (lm-train through lm::train,
// passkey-train): the optimiser set-up and one sequence of steps, with the study-specific parts
// (the batch, the loss, the log, checks, checkpoints) passed in.
//
// One step, in this order:
//   lr = learning_rate(t, step) on every group -> zero_grad -> forward_backward(step) (the
//   caller draws the batch, computes the loss, calls backward and returns the loss value; lm
//   also averages gradients over ranks there) -> stop on a non-finite loss, before the step ->
//   clip the global gradient norm to t.clip (0: off) -> AdamW step -> after_step(step + 1).
#pragma once

#include "lm/model.h"
#include "lm/presets.h"

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>

namespace fpa::lm {

// AdamW(t.lr, betas (t.beta1, t.beta2), t.eps) with weight decay t.weight_decay on the weight
// matrices (dim >= 2) and none on norms and biases; the token embedding is decayed only when
// t.decay_embeddings. Groups: [decayed, not decayed], parameters in the model's order (the
// order a checkpoint's optimiser state is stored in).
std::unique_ptr<torch::optim::AdamW> make_optimizer(LanguageModel& model, const TrainConfig& t);

struct TrainLoopHooks {
  // Step `step` (0-based): draw its batch, forward, backward; return the loss value to check.
  std::function<double(int64_t step)> forward_backward;
  // After the optimiser step; `done` steps are done. Log, check, checkpoint; true stops the loop.
  std::function<bool(int64_t done, double loss, double lr)> after_step;
};

struct TrainLoopResult {
  int64_t steps_done = 0;   // steps completed (the failing step not counted)
  bool diverged = false;    // stopped on a non-finite loss (no step taken with it)
  double loss = 0;          // the last loss value (the non-finite one when diverged)
  bool stopped = false;     // after_step returned true
};

// Steps first_step .. t.steps - 1 (fewer when a hook stops the loop or the loss diverges).
TrainLoopResult run_train_loop(LanguageModel& model, torch::optim::Optimizer& optimizer,
                               const TrainConfig& t, int64_t first_step,
                               const TrainLoopHooks& hooks);

}  // namespace fpa::lm
