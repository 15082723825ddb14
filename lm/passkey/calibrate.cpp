#include "lm/passkey/calibrate.h"

#include <algorithm>
#include <random>
#include <stdexcept>

namespace fpa::passkey {

std::vector<double> calibrate_heads(lm::IncrementalDecoder& decoder, const PromptConfig& config,
                                    int64_t length, int prompts, uint64_t seed, int64_t chunk) {
  if (prompts < 1) throw std::invalid_argument("calibration: prompts must be >= 1");
  std::mt19937_64 rng(seed);
  const auto calibration = draw_prompts(config, length, prompts, spread_depths(5), rng);
  decoder.track_mass(false);
  std::vector<double> score(size_t(decoder.heads()), 0.0);
  fpa::CacheSignals weights;
  weights.weight = true;
  int64_t queries = 0;
  for (const auto& p : calibration) {
    decoder.reset();
    const auto& ids = p.ids;
    const int64_t n_prompt = p.answer_start;
    const auto [digits, digits_end] = p.key_spans[0];  // the key's first occurrence
    const auto tokens = at::tensor(ids, at::kLong);
    for (int64_t s = 0; s < n_prompt - 1; s += chunk)
      decoder.step(tokens.slice(0, s, std::min(s + chunk, n_prompt - 1)));
    // The answer's tokens, teacher-forced (bytes: the key_digits digits).
    for (int64_t s = n_prompt - 1; s < int64_t(ids.size()) - 1; ++s) {
      decoder.step_token(ids[size_t(s)]);  // the query at s predicts the token at s + 1
      const auto views = decoder.views(weights);
      for (size_t h = 0; h < views.size(); ++h)
        for (size_t e = 0; e < views[h].position.size(); ++e) {
          const int64_t pos = views[h].position[e];
          if (pos >= digits && pos < digits_end) score[h] += views[h].weight[e];
        }
      ++queries;
    }
  }
  for (auto& s : score) s /= double(queries);
  return score;
}

}  // namespace fpa::passkey
