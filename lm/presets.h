// Presets: a model configuration and a training budget, as plain data: configs/lm/<name>.conf
// (lines `name = value` with lm-train's option names), read when first asked for and parsed here.
// Adding a preset is adding a file there (no rebuild); FPA_PRESET_DIR in the environment names
// another folder (tests).
//
//   tiny  : about 10 minutes per softmax variant on one CPU core (FPA's reference operator: about
//           twice that); the quick profile runs fewer steps
//   small : a few million parameters, about an hour per variant on one core
//   paper : the paper's scale (hidden 768, 12 layers, 12 heads, sub-word vocabulary), for GPUs
//   paper-smoke : paper's structure at a tiny scale (SentencePiece, 512 pieces), seconds on a CPU
//
// Every variant of a preset shares all of these numbers; only the attention kind differs, so
// parameter counts differ only by the gate/increment projections of fox and fpa.
#pragma once

#include "lm/model.h"
#include "lm/train_config.h"

#include <string>
#include <utility>
#include <vector>

namespace fpa::lm {


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

}  // namespace fpa::lm
