// Presets: a model configuration and a training budget, as plain data (lm/presets.cpp).
//
//   tiny  : about 10 minutes per softmax variant on one CPU core (FPA's reference operator: about
//           twice that); the quick profile runs fewer steps
//   small : about an hour per softmax variant on one core
//   paper : the paper's scale (hidden 768, 12 layers, 12 heads, sub-word vocabulary), for GPUs
//
// Every variant of a preset shares all of these numbers; only the attention kind differs, so
// parameter counts differ only by the gate/increment projections of fox and fpa.
#pragma once

#include "lm/model.h"

#include <string>
#include <vector>

namespace fpa::lm {

struct TrainConfig {
  int64_t steps = 1000;          // optimiser steps
  int64_t batch = 16;            // sequences per optimiser step (global, over all ranks)
  int64_t accum = 1;             // micro-batches per step (gradient accumulation)
  double lr = 1e-3;              // peak learning rate
  double min_lr_ratio = 0.1;     // cosine decays to lr * min_lr_ratio
  int64_t warmup = 100;          // linear warm-up steps
  double weight_decay = 0.1;     // AdamW, on matrices only (not norms, biases, embeddings)
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double clip = 1.0;             // global gradient-norm clipping; 0 disables
  int64_t val_every = 100;       // steps between validation passes
  int64_t val_windows = 32;      // validation windows per pass (fixed, the first ones)
  int64_t checkpoint_every = 100;
};

struct Preset {
  std::string name;
  ModelConfig model;
  TrainConfig train;
  std::string note;  // what it is for, what it needs
};

const Preset& preset(const std::string& name);  // throws std::invalid_argument on unknown names
std::vector<std::string> preset_names();

// Learning rate at `step` (0-based): linear warm-up to lr, then cosine to lr * min_lr_ratio.
double learning_rate(const TrainConfig& t, int64_t step);

}  // namespace fpa::lm
