// The T5 study of theory-eviction (THEORY.md), callable in-process: random and near-worst-case
// caches decoded with the certified eviction, one CSV row per cache, and the numbers the verdict
// line reports. The executable only parses flags and calls run_* and report_*.
#pragma once

#include "experiments/csv_writer.h"
#include "experiments/provenance.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fpa::theory {

struct EvictionSettings {
  int trials = 30;                        // random caches per epsilon
  std::vector<double> eps = {1e-1, 1e-2, 1e-3};
  // Random caches draw n and d from these; the near-worst cases are (n, R) pairs.
  std::vector<int64_t> lengths = {16, 64, 256, 1024}, dims = {4, 16, 64};
  std::vector<std::pair<int64_t, double>> worst_cases = {{16, 0.5}, {256, 3.0}, {1024, 1.0}};
  uint64_t seed = 0;  // seeds LibTorch and the case generator (seed_everything)
  std::string out;    // the CSV path the returned table will be committed to
};

struct EvictionStudyResult {
  CsvWriter table;     // uncommitted: the caller commits it with its provenance
  bool all_ok = true;  // every cache within the bound, no evicted key back above the threshold
  double worst_ratio = 0, worst_random_ratio = 0;  // max change / (2 eps V)
  double evicted_sum = 0;                          // over the random caches
  int64_t violations = 0, random_cases = 0, caches = 0;
};

EvictionStudyResult run_eviction_study(const EvictionSettings& settings);

// Commits the result's table with `provenance`, then prints the summary lines and the verdict
// (the last line) as theory-eviction does; returns whether every check passed.
bool report_eviction_study(EvictionStudyResult& result, const EvictionSettings& settings,
                           const Provenance& provenance);

}  // namespace fpa::theory
