// The grid of synthetic runs (tasks x models x head dims x seeds, FPA once per backward mode),
// the files each run owns, whether a run's CSV is complete for its configuration, and the
// aggregation into summary.csv (columns fixed by SPEC section 7, then more).
#pragma once

#include "train.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fpa::synthetic {

struct SweepRun {
  std::string name;               // e.g. "dips-fpa-exact-d8-s3"
  std::vector<std::string> args;  // synthetic-run arguments (without --out)
  RunConfig config;               // what those arguments run
  std::string group;              // summary row it belongs to
};

struct GridSpec {
  std::vector<std::string> tasks, models, fpa_grads;
  std::vector<int> head_dims;
  uint64_t first_seed = 0;
  int seeds = 1;
  std::vector<std::string> shared_args;  // passed to every run (steps, n, impl, ...)
};

std::vector<SweepRun> make_grid(const GridSpec& spec);

// The final row of a run CSV (read with fast-cpp-csv-parser), as column -> value for the columns
// the sweep uses (phase, config, converged, mass, mass2n, nmse, nmse2n, mass_best, wall_s,
// steps_to_converge); empty when the file is missing, lacks one of those columns, has a row of
// the wrong width, has no final row or was written for another configuration (its `config`
// differs from `expected_key`).
std::map<std::string, std::string> read_final_row(const std::string& csv_path,
                                                  const std::string& expected_key);

struct SummaryRow {
  std::string task, model, fpa_grad;
  int head_dim = 0;
  int seeds_run = 0, seeds_converged = 0, runs_missing = 0;
  double mass_mean = 0, mass_std = 0, mass2n_mean = 0, nmse_mean = 0, nmse2n_mean = 0;
  double mass_best_mean = 0, steps_to_converge_median = -1, wall_s_mean = 0;
  int64_t n = 0;  // training length
  // The seed closest to converging: the lowest nMSE (the criterion that attending to recent
  // tokens cannot game), ties to the higher mass; -1 when no run is complete. Its mass and nMSE
  // show how narrowly a failing cell fails.
  int64_t best_seed = -1;
  double best_seed_mass = 0, best_seed_nmse = 0;
};

// One row per (task, model, fpa_grad, head_dim), in grid order, from the runs' final rows
// (runs without a complete CSV count in runs_missing, not in seeds_run).
std::vector<SummaryRow> summarize(const std::vector<SweepRun>& runs,
                                  const std::map<std::string, std::map<std::string, std::string>>& finals);

extern const std::vector<std::string> kSummaryColumns;

}  // namespace fpa::synthetic
