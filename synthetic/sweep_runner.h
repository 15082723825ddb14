// The study of synthetic-sweep, callable in-process: the grid's runs (sweep.h) as parallel
// synthetic-run processes, skipping runs whose CSV is complete for the same configuration, and
// the summary table. synthetic-sweep only parses flags, builds the grid, checks the runner and
// commits the returned table.
#pragma once

#include "experiments/csv_writer.h"
#include "sweep.h"

#include <cstddef>
#include <string>
#include <vector>

namespace fpa::synthetic {

struct SweepSettings {
  std::string run_exe;       // the synthetic-run executable
  std::string out_dir;       // runs go to OUT_DIR/runs, their logs to OUT_DIR/logs
  int jobs = 1;              // runs in parallel (processes)
  bool summarize_only = false;   // run nothing: summarise the runs already complete
  bool dump_first_seed = false;  // runs of `first_seed` also write <run>.dump.csv
  uint64_t first_seed = 0;
  std::string out;           // the summary's path
};

struct SweepOutcome {
  CsvWriter summary;  // one row per grid cell; uncommitted
  size_t failed = 0;  // runs that exited non-zero or left no complete CSV
};

// Progress and one line per finished run go to stderr.
SweepOutcome run_sweep(const SweepSettings& settings, const std::vector<SweepRun>& runs);

}  // namespace fpa::synthetic
