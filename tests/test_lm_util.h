// Helpers shared by the lm tests: a generated corpus and a very small model configuration.
#pragma once

#include "lm/model.h"
#include "lm/presets.h"

#include <string>

namespace fpa::lm::lmtest {

// Writes `docs` documents of pseudo-random words (deterministic in `seed`) to a new temporary
// directory and returns its path.
std::string make_corpus(int docs, int words_per_doc, unsigned seed);
std::string make_temp_dir(const std::string& tag);

ModelConfig micro_model(AttentionKind kind);
TrainConfig micro_train(int64_t steps);

}  // namespace fpa::lm::lmtest
