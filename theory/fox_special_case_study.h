// The T1/T2 study of theory-fox-special-case (THEORY.md), callable in-process: random fields per
// length checked against the theorems, one CSV row per check, and the counts the verdict line
// reports. The executable only parses flags and calls run_* and report_*.
#pragma once

#include "experiments/csv_writer.h"
#include "experiments/provenance.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fpa::theory {

struct FoxSpecialCaseSettings {
  int trials = 5;       // random fields per length and check, lengths up to 512
  int long_trials = 1;  // random fields per length above 512
  std::vector<int> lengths = {1, 2, 3, 8, 64, 512, 4096};
  int head_dim = 16;    // of the output check
  uint64_t seed = 0;    // seeds LibTorch and the field generator (seed_everything)
  std::string out;      // the CSV path the returned table will be committed to
};

struct FoxSpecialCaseResult {
  CsvWriter table;      // uncommitted: the caller commits it with its provenance
  bool all_ok = true;   // every check passed
  double worst_bias = 0, worst_out = 0;  // T1 on non-increasing fields
  int monotone_fields = 0, nonmono_fields = 0, nonmono_differ = 0, nonmono_nonsuffix = 0;
  int64_t fox_checks = 0, fox_bad = 0;   // T2 (field, tau) checks, and those failing
  double a31 = 0, a32 = 0;               // the three-token witness's weights
};

FoxSpecialCaseResult run_fox_special_case(const FoxSpecialCaseSettings& settings);

// Commits the result's table with `provenance`, then prints the summary lines and the verdict
// (the last line) as theory-fox-special-case does; returns whether every check passed.
bool report_fox_special_case(FoxSpecialCaseResult& result, const FoxSpecialCaseSettings& settings,
                             const Provenance& provenance);

}  // namespace fpa::theory
