// Head scores for duo-calibrated (lm/cache/policies/duo_calibrated.cpp): DuoAttention picks its
// full-cache "retrieval heads" from a calibration on the task; we score each layer's head by
// the attention weight its answer queries put on the passkey's digits, with a full cache, on
// `prompts` calibration prompts at length `length` (the training length: no extrapolation
// involved), drawn from their own generator so the evaluation's prompts do not change.
// Teacher-forced: the answer queries read the true digits.
#pragma once

#include "lm/decode.h"
#include "lm/passkey/prompt.h"

#include <cstdint>
#include <vector>

namespace fpa::passkey {

// One score per layer and head (layer-major, as the decoder's views): the mean over prompts and
// answer queries of the weight on the key's digit positions.
std::vector<double> calibrate_heads(lm::IncrementalDecoder& decoder, const PromptConfig& config,
                                    int64_t length, int prompts, uint64_t seed, int64_t chunk);

}  // namespace fpa::passkey
