#include "lm/passkey/probe_study.h"

#include "experiments/progress.h"
#include "experiments/torch_runtime.h"
#include "kernels/eviction.h"
#include "lm/cache/policy.h"
#include "lm/decode.h"
#include "lm/passkey/prompt.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace fpa::passkey {
namespace {

// The positions of the key's digits in the prompt: both occurrences in the key sentence.
std::vector<int64_t> key_digit_positions(const Prompt& p) {
  std::vector<int64_t> out;
  for (const auto& [begin, end] : p.key_spans)
    for (int64_t at = begin; at < end; ++at) out.push_back(at);
  return out;
}

// What `policy` keeps of the full cache at query i (no lookahead: nothing is appended before
// the answer is read), from the policy code itself.
cache::Keep kept_by(const cache::Policy& policy, const std::vector<cache::HeadView>& views, int64_t i,
                    int64_t final_length) {
  const std::vector<double> no_scores;
  return cache::select_checked(policy, {views, i, final_length, 0, no_scores});
}

// The lowest bias among the kept entries of the heads in [first, last): the cut-off a key's bias
// must reach (ties at the cut-off go to the more recent key). -inf when nothing is kept.
double lowest_kept(const std::vector<cache::HeadView>& views, const cache::Keep& keep, size_t first,
                   size_t last) {
  double low = INFINITY;
  for (size_t h = first; h < last; ++h)
    for (size_t e = 0; e < views[h].bias.size(); ++e)
      if (keep[h][e]) low = std::min(low, views[h].bias[e]);
  return std::isinf(low) ? -INFINITY : low;
}

}  // namespace

PasskeyProbeResult run_passkey_probe(const PasskeyProbeSettings& settings, const EvalSetup& setup) {
  auto rng = seed_everything(settings.seed);
  const auto& loaded = setup.loaded;
  const auto& variant = setup.variant;
  const int64_t L = setup.L, heads = loaded.config.heads;
  const auto& run = setup.run;
  const auto& pc = setup.prompt;
  const auto& lengths = settings.lengths;
  const auto depths = spread_depths(settings.depths);
  const int keys = settings.keys;
  const double budget = settings.budget, epsilon = settings.epsilon;
  const int64_t chunk = settings.chunk;
  cache::Settings policy_settings;
  policy_settings.budget = budget;
  policy_settings.epsilon = epsilon;
  const auto certified_policy = cache::make_policy("fpa-certified", policy_settings);
  const auto per_head_policy = cache::make_policy("budget-per-head", policy_settings);
  const auto shared_policy = cache::make_policy("budget", policy_settings);

  // Lengths count the model's tokens; a sub-word run's rows end with its tokenizer (eval_setup.h).
  const auto tokenizer = tokenizer_cell(pc);
  CsvWriter out(settings.out, with_tokenizer({"variant", "run", "train_len", "eval_len", "depth", "prompt",
                               "correct_full", "layer", "head", "key_bias", "threshold", "r",
                               "kept_certified", "key_kept_certified", "budget", "cutoff_per_head",
                               "key_kept_per_head", "cutoff_shared", "key_kept_shared", "filler",
                               "filler_offset"}, tokenizer));
  const auto row = [&tokenizer](CsvWriter& table, const auto&... values) {
    if (tokenizer.empty()) table.row(values...);
    else table.row(values..., tokenizer);
  };
  PasskeyProbeResult result{std::move(out)};
  lm::IncrementalDecoder decoder(loaded.model);
  Progress bar("passkey-probe " + run, int64_t(lengths.size()) * keys, "prompt");
  int64_t done = 0;
  for (int m : lengths) {
    const int64_t n = int64_t(m) * L;
    const auto prompts = draw_prompts(pc, n, keys, depths, rng);  // passkey-eval's prompts
    for (int k = 0; k < keys; ++k) {
      const auto& p = prompts[size_t(k)];
      const auto tokens = at::tensor(p.ids, at::kLong);
      decoder.reset();
      at::Tensor logits;
      for (int64_t s = 0; s < p.answer_start; s += chunk)
        logits = decoder.step(tokens.slice(0, s, std::min(s + chunk, p.answer_start)));
      const auto views = decoder.views();  // as of the answer query i = answer_start - 1
      // Greedy answer with the full cache (answer_tokens tokens, judged on their text).
      std::vector<int64_t> generated;
      for (int64_t d = 0; d < p.answer_tokens; ++d) {
        const int64_t next = logits[-1].argmax().item<int64_t>();
        generated.push_back(next);
        if (d + 1 < p.answer_tokens) logits = decoder.step(at::tensor({next}, at::kLong));
      }
      const bool right = answer_matches(p.key, answer_text(p, generated));
      const int64_t i = p.answer_start - 1;
      const auto digits = key_digit_positions(p);
      const auto certified = kept_by(*certified_policy, views, i, n);
      const auto per_head = kept_by(*per_head_policy, views, i, n);
      const auto shared = kept_by(*shared_policy, views, i, n);
      const double cutoff_shared = lowest_kept(views, shared, 0, views.size());
      for (size_t h = 0; h < views.size(); ++h) {
        const auto& v = views[h];
        double key_bias = -INFINITY;
        int key_certified = 0, key_per_head = 0, key_shared = 0;
        for (size_t s = 0; s < v.position.size(); ++s)
          if (std::find(digits.begin(), digits.end(), v.position[s]) != digits.end()) {
            key_bias = std::max(key_bias, v.bias[s]);
            key_certified |= int(certified[h][s]);
            key_per_head |= int(per_head[h][s]);
            key_shared |= int(shared[h][s]);
          }
        const double threshold = fpa::certified_eviction_threshold(v.r, i + 1, epsilon);
        const auto kept = std::count(certified[h].begin(), certified[h].end(), true);
        row(result.table, variant, run, L, n, p.depth, k, int(right), int64_t(h) / heads,
                         int64_t(h) % heads, key_bias, threshold, v.r, double(kept) / double(i + 1),
                         key_certified, budget, lowest_kept(views, per_head, h, h + 1),
                         key_per_head, cutoff_shared, key_shared, pc.filler_source,
                         p.filler_offset);
      }
      result.prompts++;
      result.correct += right;
      bar.update(++done, fmt::format("{}x {}", m, right ? "right" : "wrong"));
    }
  }
  bar.finish();
  return result;
}

}  // namespace fpa::passkey
