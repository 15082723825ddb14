#include "lm/passkey/evaluate.h"

#include "experiments/usage_error.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <stdexcept>

namespace fpa::passkey {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// CPU time of this thread: with one intra-op thread the decoder's work runs here, so this is
// insensitive to other processes sharing the machine (wall time is not).
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

void evict(lm::IncrementalDecoder& d, const cache::Policy& policy,
           const std::vector<double>& head_scores, int64_t final_length, int64_t lookahead) {
  const auto views = d.views(policy.reads());
  const cache::Context context{views, d.length() - 1, final_length, lookahead, head_scores};
  d.keep(cache::select_checked(policy, context));
}

// The first largest logit, NaN counting as largest (at::argmax's choice).
int64_t argmax(const std::vector<float>& logits) {
  size_t best = 0;
  for (size_t i = 1; i < logits.size() && !std::isnan(logits[best]); ++i)
    if (std::isnan(logits[i]) || logits[i] > logits[best]) best = i;
  return int64_t(best);
}

}  // namespace

void DecodeSchedule::validate() const {
  if (chunk < 1) throw std::invalid_argument("decode schedule: chunk must be >= 1");
  if (evict_every < 1) throw std::invalid_argument("decode schedule: evict_every must be >= 1");
  if (timed_tokens < 1) throw std::invalid_argument("decode schedule: timed_tokens must be >= 1");
}

void check_observe_window(const DecodeSchedule& schedule, const cache::Policy& policy,
                          int64_t prompt_tokens) {
  const int64_t tail = std::min(schedule.timed_tokens, prompt_tokens);  // single-token steps
  if (policy.query_aware() && policy.settings().observe >= tail)
    throw UsageError("--observe must be smaller than --timed-tokens (snapkv observes the "
                     "single-token tail)");
}

PromptResult run_prompt(lm::IncrementalDecoder& decoder, const Prompt& prompt,
                        const cache::Policy& policy, const std::vector<double>& head_scores,
                        const DecodeSchedule& schedule) {
  schedule.validate();
  // Online policies evict throughout; a query-aware one once, after token n_prompt - 2, having
  // tracked the mass of the `observe` queries before it; full never.
  const bool online = !policy.keeps_everything() && !policy.query_aware();
  const bool query_aware = policy.query_aware();
  decoder.track_mass(online && policy.reads().mass);
  decoder.reset();
  const auto& ids = prompt.ids;
  const auto tokens = at::tensor(ids, at::kLong);
  const int64_t answer_tokens = prompt.answer_tokens;  // bytes: key_digits
  const int64_t n_prompt = prompt.answer_start, final_length = n_prompt + answer_tokens;
  const int64_t tail = std::min(schedule.timed_tokens, n_prompt);  // single-token prompt steps
  check_observe_window(schedule, policy, n_prompt);  // so observe_from >= n_prompt - tail
  const int64_t observe_from = n_prompt - 1 - policy.settings().observe;  // query-aware
  const auto t0 = Clock::now();
  for (int64_t s = 0; s < n_prompt - tail; s += schedule.chunk) {
    decoder.step(tokens.slice(0, s, std::min(s + schedule.chunk, n_prompt - tail)));
    if (online)
      evict(decoder, policy, head_scores, final_length, std::max(schedule.chunk, schedule.evict_every));
  }
  PromptResult r;
  r.prefill_ms = ms_since(t0);

  const double heads_total = double(decoder.heads());
  double decode_ms = 0, decode_cpu_ms = 0, occupancy_sum = 0;
  int64_t since_eviction = 0, steps = 0, next = 0;
  std::vector<int64_t> generated;
  for (int64_t s = n_prompt - tail; s < n_prompt - 1 + answer_tokens; ++s) {
    const bool answer = s >= n_prompt - 1;  // this step's logits give an answer digit
    if (s < n_prompt) next = ids[size_t(s)];
    if (query_aware && s == observe_from) decoder.track_mass(true);
    auto t = Clock::now();
    double c = thread_cpu_ms();
    const auto& logits = decoder.step_token(next);
    int64_t token = -1;
    if (answer) token = argmax(logits);
    decode_ms += ms_since(t);
    decode_cpu_ms += thread_cpu_ms() - c;
    ++steps;
    if (answer) {
      // What this query attended to (untimed bookkeeping, before the eviction below).
      occupancy_sum += double(decoder.cached_entries()) / (heads_total * double(s + 1));
      generated.push_back(token);
      next = token;
    }
    const bool now = online ? ++since_eviction >= schedule.evict_every
                            : query_aware && s == n_prompt - 2;
    if (now) {
      t = Clock::now();
      c = thread_cpu_ms();
      evict(decoder, policy, head_scores, final_length, online ? schedule.evict_every : answer_tokens);
      decode_ms += ms_since(t);
      decode_cpu_ms += thread_cpu_ms() - c;
      since_eviction = 0;
      if (query_aware) decoder.track_mass(false);
    }
  }
  r.generated = answer_text(prompt, generated);
  r.correct = answer_matches(prompt.key, r.generated);
  r.occupancy = occupancy_sum / double(answer_tokens);
  r.decode_ms_per_token = decode_ms / double(steps);
  r.decode_cpu_ms_per_token = decode_cpu_ms / double(steps);
  return r;
}

}  // namespace fpa::passkey
