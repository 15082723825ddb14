// The T3 study of theory-realization (THEORY.md), callable in-process: part (a) on random target
// sets, parts (b) and (c) on sequences of every task family and length (realization_checks.h),
// one CSV row per check, and the numbers the verdict line reports. The executable only parses
// flags and calls run_* and report_*.
#pragma once

#include "experiments/csv_writer.h"
#include "experiments/provenance.h"
#include "theory/realization_checks.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace fpa::theory {

struct RealizationSettings {
  int trials = 1;  // sequences per (family, length); part (a) draws 300 x trials target sets
  std::vector<int> lengths = {128, 1024, 4096};   // of parts (b, c)
  std::vector<double> eps = {1e-2, 1e-3, 1e-6};   // target outside masses of part (c)
  int kernel_check_max_n = 1024;  // weights compared with fpa::attention's up to this length
  uint64_t seed = 0;  // seeds LibTorch and the generators (seed_everything)
  std::string out;    // the CSV path the returned table will be committed to
};

struct RealizationResult {
  CsvWriter table;     // uncommitted: the caller commits it with its provenance
  bool all_ok = true;
  PartA a;             // (a)
  int64_t sequences = 0, sets_equal = 0;  // (b)
  double worst_dead = -std::numeric_limits<double>::infinity(), worst_alive = 0;
  double worst_ratio = 0, worst_kernel_diff = 0;  // (c)
  int kernel_checks = 0;
  std::vector<double> min_mass_at_eps;  // one per eps
};

RealizationResult run_realization(const RealizationSettings& settings);

// Commits the result's table with `provenance`, then prints the summary lines and the verdict
// (the last line) as theory-realization does; returns whether every check passed.
bool report_realization(RealizationResult& result, const RealizationSettings& settings,
                        const Provenance& provenance);

}  // namespace fpa::theory
