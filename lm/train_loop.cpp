#include "lm/train_loop.h"

#include <cmath>
#include <string>

namespace fpa::lm {

std::unique_ptr<torch::optim::AdamW> make_optimizer(LanguageModel& model, const TrainConfig& t) {
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& item : model->named_parameters()) {
    const bool embedding = item.key().find("embed") != std::string::npos;
    const bool matrix = item.value().dim() >= 2 && (t.decay_embeddings || !embedding);
    (matrix ? decay : no_decay).push_back(item.value());
  }
  const auto options = torch::optim::AdamWOptions(t.lr).betas({t.beta1, t.beta2}).eps(t.eps);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(
                                 torch::optim::AdamWOptions(options).weight_decay(t.weight_decay)));
  groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(
                                    torch::optim::AdamWOptions(options).weight_decay(0.0)));
  return std::make_unique<torch::optim::AdamW>(std::move(groups), options);
}

TrainLoopResult run_train_loop(LanguageModel& model, torch::optim::Optimizer& optimizer,
                               const TrainConfig& t, int64_t first_step,
                               const TrainLoopHooks& hooks) {
  TrainLoopResult r;
  r.steps_done = first_step;
  const auto params = model->parameters();
  for (int64_t step = first_step; step < t.steps; ++step) {
    const double lr = learning_rate(t, step);
    for (auto& g : optimizer.param_groups())
      static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
    optimizer.zero_grad();
    r.loss = hooks.forward_backward(step);
    if (!std::isfinite(r.loss)) {
      r.diverged = true;
      return r;
    }
    if (t.clip > 0) torch::nn::utils::clip_grad_norm_(params, t.clip);
    optimizer.step();
    r.steps_done = step + 1;
    if (hooks.after_step(step + 1, r.loss, lr)) {
      r.stopped = true;
      return r;
    }
  }
  return r;
}

}  // namespace fpa::lm
