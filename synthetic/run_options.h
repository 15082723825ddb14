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

// Options a sweep sets for all its runs, named by their synthetic-run flags: declared on the
// sweep's command line from the run's field table (its defaults, ranges and help), and passed on
// to each run as `--flag value` pairs.
void add_shared_run_options(Cli& cli, const std::vector<std::string>& flags);
std::vector<std::string> shared_run_args(const Cli& cli, const std::vector<std::string>& flags);

// What synthetic-run would run for these arguments (argv[0] excluded).
RunConfig run_config_from_args(const std::vector<std::string>& args);

// Everything that determines a run's result, as one line: the task's table, then every setting
// of the field table but the implementation (`name=value`, flag names), then the seed. The sweep
// compares it with the line in a run's CSV (`config`) to decide whether the run can be skipped.
std::string config_key(const RunConfig& c);

// The name used in CSVs: "n/a" for the baselines, the backward mode for FPA.
std::string fpa_grad_label(const RunConfig& c);

}  // namespace fpa::synthetic
