// The T4 study of theory-lower-bound (THEORY.md), callable in-process: per trial, head dimension
// and number of keys, how many subsets a softmax / FoX head can select (GLPK LPs) against the
// counting formulas, and whether an FPA head of dimension 1 realises every subset. The
// executable only parses flags and calls run_* and report_*.
#pragma once

#include "experiments/csv_writer.h"
#include "experiments/provenance.h"

#include <cstdint>
#include <string>

namespace fpa::theory {

struct LowerBoundSettings {
  int trials = 1;     // independent draws of the keys per (n, d)
  int max_n = 12;     // largest number of keys (2^n subsets each)
  int max_d = 8;      // largest head dimension
  uint64_t seed = 0;  // seeds LibTorch and the key generator (seed_everything)
  std::string out;    // the counts table's path; the summary's is <out without .csv>_summary.csv
};

struct LowerBoundResult {
  CsvWriter table;    // one row per (trial, d, n, selector); uncommitted, as is the summary
  CsvWriter summary;  // one row per (trial, d): the largest n each selector shatters
  bool all_ok = true;
  int fpa_first = 0;            // FPA d = 1: all subsets realised up to this n (first trial)
  int64_t mismatches = 0;       // counts that differ from the formulas
  int64_t lp_solves = 0;
  std::string per_d;            // "d=1: 2/2/3, ..." of the first trial
};

LowerBoundResult run_lower_bound(const LowerBoundSettings& settings);

// Commits the result's tables with `provenance`, then prints the summary lines and the verdict
// (the last line) as theory-lower-bound does; returns whether every check passed.
bool report_lower_bound(LowerBoundResult& result, const LowerBoundSettings& settings,
                        const Provenance& provenance);

}  // namespace fpa::theory
