// The study of lm-compress, callable in-process: every policy's loss over the chosen windows
// decoded with its compressed cache (compressed_loss.h), one table row per policy with the rise
// in perplexity over the full cache's. lm-compress only parses flags, loads the model, its
// tokenizer and the corpus, picks the windows, makes the policies and commits the returned table.
#pragma once

#include "experiments/csv_writer.h"
#include "lm/cache/policy.h"
#include "lm/checkpoint.h"
#include "lm/compress/compressed_loss.h"
#include "lm/tokenizer.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fpa::lm {

struct CompressSettings {
  std::string split = "test";  // the windows' split (a label in the table)
  int64_t evict_every = 1;     // tokens between evictions
  std::string run;             // the checkpoint's run name (a label)
  std::string out;             // the path of the returned table
  // The model's tokenizer: the windows hold its ids, and bpb divides the loss by the bytes their
  // predicted tokens stand for (lm-eval's bits per byte). A sub-word table ends with a
  // `tokenizer` column (its identity); a byte table keeps the published columns.
  Tokenizer tokenizer = Tokenizer::bytes();
};

struct CompressResult {
  CsvWriter table;                     // one row per policy; uncommitted
  std::vector<CompressedLoss> losses;  // one per policy, in their order
  std::optional<double> full_ppl;      // the keep-everything policy's, when one ran
  int64_t bytes = 0;                   // the bytes the windows' predicted tokens stand for
};

// Throws std::runtime_error when a policy's loss is not finite. Per-policy lines go to stderr.
CompressResult run_compress(const CompressSettings& settings, LoadedModel& loaded,
                            const std::vector<at::Tensor>& windows,
                            const std::vector<std::unique_ptr<cache::Policy>>& policies);

}  // namespace fpa::lm
