// Presets: a model configuration and a training budget, as plain data: configs/lm/<name>.conf
// (lines `name = value` with lm-train's option names), read when first asked for and parsed here.
// Adding a preset is adding a file there (no rebuild); FPA_PRESET_DIR in the environment names
// another folder (tests).
//
//   tiny  : about 10 minutes per softmax variant on one CPU core (FPA's reference operator: about
//           twice that); the quick profile runs fewer steps
//   small : a few million parameters, about an hour per variant on one core
//   paper : the paper's scale (hidden 768, 12 layers, 12 heads, sub-word vocabulary), for GPUs
//
// Every variant of a preset shares all of these numbers; only the attention kind differs, so
// parameter counts differ only by the gate/increment projections of fox and fpa.
#pragma once

#include "lm/model.h"

#include <string>
#include <utility>
#include <vector>

namespace fpa::lm {

struct TrainConfig {
  int64_t steps = 1000;          // optimiser steps
  int64_t batch = 16;            // sequences per optimiser step (global, over all ranks)
  int64_t accum = 1;             // micro-batches per step (gradient accumulation)
  double lr = 1e-3;              // peak learning rate
  double min_lr_ratio = 0.1;     // cosine decays to lr * min_lr_ratio
  int64_t warmup = 100;          // linear warm-up steps
  double weight_decay = 0.1;     // AdamW, on weight matrices only (not norms or biases)
  // The token embedding (tied to the output layer by default) is a matrix too: lm-train decays
  // it (its published runs did); passkey-train does not (lm/train_loop.h, lm/passkey/README.md).
  bool decay_embeddings = true;
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
  std::string note;  // what it is for, what it needs (the file's first comment line)
};

// The preset folder (FPA_PRESET_DIR, else this source tree's configs/lm) and its files as
// (name, text), sorted by name. Throws std::invalid_argument when the folder is missing.
std::string preset_dir();
std::vector<std::pair<std::string, std::string>> preset_files();
// A preset from the text of its file. Throws std::invalid_argument naming the line on an unknown
// setting, a bad number or a `preset` line that differs from `name`.
Preset parse_preset(const std::string& name, const std::string& text);

const Preset& preset(const std::string& name);  // throws std::invalid_argument on unknown names
std::vector<std::string> preset_names();        // smallest model first

// Learning rate at `step` (0-based): linear warm-up to lr, then cosine to lr * min_lr_ratio.
double learning_rate(const TrainConfig& t, int64_t step);

}  // namespace fpa::lm
