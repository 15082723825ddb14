// The optimiser of lm's trainers (lm-train, passkey-train) and of the checkpoints that store its
// state: AdamW(t.lr, betas (t.beta1, t.beta2), t.eps) with weight decay t.weight_decay on the
// weight matrices (dim >= 2) and none on norms and biases; the token embedding is decayed only
// when t.decay_embeddings. Groups: [decayed, not decayed], parameters in the model's order (the
// order a checkpoint's optimiser state is stored in).
#pragma once

#include "lm/model.h"
#include "lm/train_config.h"

#include <torch/torch.h>

#include <memory>

namespace fpa::lm {

std::unique_ptr<torch::optim::AdamW> make_optimizer(LanguageModel& model, const TrainConfig& t);

}  // namespace fpa::lm
