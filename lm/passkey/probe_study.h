// The study of passkey-probe, callable in-process: for each prompt (passkey-eval's, for the same
// seed, lengths, keys and depths) prefilled with a full cache up to the answer query, one row per
// layer and head: the key's bias against the T5 threshold and the budget policies' cut-offs.
// passkey-probe only parses flags, loads the checkpoint (eval_setup.h) and commits the table.
#pragma once

#include "experiments/csv_writer.h"
#include "lm/passkey/eval_setup.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fpa::passkey {

struct PasskeyProbeSettings {
  std::vector<int> lengths = {1, 2, 4, 8};  // multiples of L
  int keys = 20;                            // prompts per length
  int depths = 5;                           // depths spread over the prompt
  double budget = 0.25;                     // kept fraction of the budget policies' cut-offs
  double epsilon = 1e-3;                    // of the T5 threshold (fpa-certified)
  int64_t chunk = 128;                      // prefill chunk
  uint64_t seed = 0;  // the prompts' generator (seed_everything), as passkey-eval's
  std::string out;    // the path of the returned table
};

struct PasskeyProbeResult {
  CsvWriter table;   // one row per (prompt, layer, head); uncommitted
  int64_t prompts = 0, correct = 0;  // greedy answers with the full cache
};

PasskeyProbeResult run_passkey_probe(const PasskeyProbeSettings& settings, const EvalSetup& setup);

}  // namespace fpa::passkey
