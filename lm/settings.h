// The field table of a model and its training: every setting once, with its name (the
// command-line flag and the key in preset and --config files), the key checkpoints store it under,
// its type, range and help text, and its role: part of the model's identity (saved in checkpoints
// and compared on resume), how the model executes (saved for the record, never compared), or a
// setting of the training run (in the log's provenance, not in checkpoints).
//
// Derived from the table: the options lm-train and passkey-train declare for these settings and
// their checks (add_options / apply_options), preset files (apply_setting), the checkpoint's
// configuration text and its parser (model_text / model_from_text), and the resume check
// (identity_differences). Adding a setting is a member in ModelConfig or TrainConfig and one row
// in settings.cpp; a tool that should expose it names it in its list.
#pragma once

#include "experiments/cli.h"
#include "lm/model.h"
#include "lm/presets.h"

#include <map>
#include <string>
#include <vector>

namespace fpa::lm {

enum class Role {
  Identity,   // the trained model: in checkpoints, compared on resume
  Execution,  // how it runs (the implementation): in checkpoints for the record, not compared
  Training,   // the training run: in the provenance of its log
};

enum class Type { Int, Real, Text, Switch };

struct Setting {
  std::string name;       // flag and file key, e.g. "fpa-backward"
  std::string stored_as;  // key in a checkpoint's configuration text, e.g. "min_grad"; "" none
  Role role;
  Type type;
  double lo, hi;          // range of a number
  std::string help;
  // The value as the flag takes it, and back (throws std::invalid_argument naming the problem).
  std::string (*get)(const ModelConfig&, const TrainConfig&);
  void (*set)(ModelConfig&, TrainConfig&, const std::string&);
  // Checkpoint text where it differs from the flag's (tie_embeddings = 1 for no
  // --untie-embeddings, mlp_hidden's resolved width); null: the flag's text.
  std::string (*store)(const ModelConfig&) = nullptr;
  void (*load)(ModelConfig&, const std::string&) = nullptr;
};

const std::vector<Setting>& settings();                 // in checkpoint-text order
const Setting& setting(const std::string& name);        // throws std::invalid_argument

// `name = value` from a preset or configuration file; throws std::invalid_argument on an unknown
// name, a bad value or one out of range.
void apply_setting(ModelConfig& m, TrainConfig& t, const std::string& name, const std::string& value);

// A tool's options for settings of the table: which ones, with the tool's default (as the flag's
// text), in the order of its --help. With keep_on_zero, a numeric option whose default is 0 keeps
// the value the tool starts from when it is 0 (lm-train: the preset's).
struct ToolSettings {
  std::vector<std::pair<std::string, std::string>> options;  // (name, default)
  bool keep_on_zero = false;
};
void add_options(Cli& cli, const ToolSettings& tool);
// After cli.parse(): the given values applied to m and t (the implementation last, once the
// variant and backward mode it depends on are set). Throws std::invalid_argument.
void apply_options(const Cli& cli, const ToolSettings& tool, ModelConfig& m, TrainConfig& t);

// The checkpoint's configuration text (`stored_as = value` lines in table order) and back; the
// text of published checkpoints, whose checksums cover it, is unchanged by this table.
std::string model_text(const ModelConfig& m);
ModelConfig model_from_text(const std::string& text);  // throws std::runtime_error
// "hidden = 64 there, 32 here; ..." for every identity setting that differs; "" when none does.
std::string identity_differences(const ModelConfig& saved, const ModelConfig& wanted);

}  // namespace fpa::lm
