// The study of passkey-eval, callable in-process: every (length, policy) cell's prompts decoded
// under its cache policy, averaged per depth (the cells table) and over depths (the summary).
// passkey-eval only parses flags, loads the checkpoint (eval_setup.h), makes the policies and
// commits the returned tables with its provenance.
#pragma once

#include "experiments/csv_writer.h"
#include "lm/cache/policy.h"
#include "lm/passkey/eval_setup.h"
#include "lm/passkey/evaluate.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fpa::passkey {

struct PasskeyEvalSettings {
  std::vector<int> lengths = {1, 2, 4, 8};  // evaluation lengths as multiples of L
  std::vector<int> keys = {20, 20, 20, 20};  // prompts per length, one per entry of lengths
  int depths = 5;                           // depths spread over the prompt
  int calibration_keys = 8;                 // duo-calibrated's calibration prompts at L
  uint64_t seed = 0;  // the prompts' generator (seed_everything); calibration uses seed + 1
  DecodeSchedule schedule;
  std::string out, summary;  // paths of the returned tables
};

struct PasskeyEvalTables {
  CsvWriter cells;    // one row per (length, depth, policy)
  CsvWriter summary;  // one row per (length, policy), averaged over depths
};

// The tables are returned uncommitted: the caller commits them with its provenance.
PasskeyEvalTables run_passkey_eval(const PasskeyEvalSettings& settings, const EvalSetup& setup,
                                   const std::vector<std::unique_ptr<cache::Policy>>& policies);

}  // namespace fpa::passkey
