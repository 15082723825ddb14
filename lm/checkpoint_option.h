// The --checkpoint option of every tool that reads a trained model (lm-eval, lm-export,
// lm-compress, passkey-eval, passkey-probe): declared once, with the run files beside the
// checkpoint that the tools read (the training log's sidecar, for the run's seed and config,
// training_record in checkpoint.h), so that no output of theirs can overwrite them.
#pragma once

#include "experiments/cli.h"

#include <string>
#include <vector>

namespace fpa::lm {

// The files of the run a checkpoint (a run directory or a file in one) belongs to.
std::vector<std::string> run_files_of(const std::string& checkpoint);

// Declares --checkpoint (run directory or file, required when `required`) and its run files as
// inputs of `cli`.
void declare_checkpoint_input(Cli& cli, bool required = true);

}  // namespace fpa::lm
