// The field table of a model and its training (experiments/settings_table.h): every setting once,
// with its name (the command-line flag and the key in preset and --config files), the key
// checkpoints store it under, its type, range and help text, and its role: part of the model's
// identity (saved in checkpoints and compared on resume), how the model executes (saved for the
// record, never compared), or a setting of the training run (in the log's provenance, not in
// checkpoints).
//
// Derived from the table: the options lm-train and passkey-train declare for these settings and
// their checks (add_options / apply_options), preset files (apply_setting), the checkpoint's
// configuration text and its parser (model_text / model_from_text), and the resume check
// (identity_differences). Adding a setting is a member in ModelConfig or TrainConfig and one row
// in settings.cpp; a tool that should expose it names it in its list.
#pragma once

#include "experiments/settings_table.h"
#include "lm/model.h"
#include "lm/train_config.h"

#include <string>
#include <vector>

namespace fpa::lm {

// What the table's rows read and write.
struct Configs {
  ModelConfig model;
  TrainConfig train;
};
using Setting = SettingRow<Configs>;
using fpa::ToolSettings;

const std::vector<Setting>& settings();                 // in checkpoint-text order
const Setting& setting(const std::string& name);        // throws std::invalid_argument

// `name = value` from a preset or configuration file; throws std::invalid_argument on an unknown
// name, a bad value or one out of range.
void apply_setting(ModelConfig& m, TrainConfig& t, const std::string& name, const std::string& value);

// A tool's options for settings of the table (ToolSettings: which, with the tool's defaults).
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
