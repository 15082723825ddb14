#include "lm/optimizer.h"

#include <string>
#include <vector>

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

}  // namespace fpa::lm
