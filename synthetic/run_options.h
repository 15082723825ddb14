// The options of one synthetic run, shared by synthetic-run (which parses them) and
// synthetic-sweep (which builds them, and parses them back to know the run's config_key).
#pragma once

#include "experiments/cli.h"
#include "train.h"

#include <string>
#include <vector>

namespace fpa::synthetic {

void add_run_options(Cli& cli);
RunConfig run_config_from(const Cli& cli);  // exits with a one-line error on bad values
// Exit 2 (with the estimate) when the run's largest tensors cannot fit in this machine's memory.
void require_run_memory(const RunConfig& c);

// What synthetic-run would run for these arguments (argv[0] excluded).
RunConfig run_config_from_args(const std::vector<std::string>& args);

// The name used in CSVs: "n/a" for the baselines, the backward mode for FPA.
std::string fpa_grad_label(const RunConfig& c);

}  // namespace fpa::synthetic
