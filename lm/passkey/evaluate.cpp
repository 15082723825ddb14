#include "lm/passkey/evaluate.h"

#include <chrono>
#include <ctime>

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

void evict(lm::IncrementalDecoder& d, const PolicyConfig& policy, int64_t final_length) {
  if (policy.kind == PolicyKind::Full) return;
  d.keep(select_keep(policy, d.views(), d.length() - 1, final_length));
}

}  // namespace

PromptResult run_prompt(lm::IncrementalDecoder& decoder, const Prompt& prompt,
                        const PolicyConfig& policy, int64_t chunk, int key_digits) {
  decoder.reset();
  const auto tokens = at::tensor(to_tokens(prompt.text), at::kLong);
  const int64_t n_prompt = prompt.answer_start, final_length = n_prompt + key_digits;
  const auto t0 = Clock::now();
  for (int64_t s = 0; s < n_prompt - 1; s += chunk) {
    decoder.step(tokens.slice(0, s, std::min(s + chunk, n_prompt - 1)));
    evict(decoder, policy, final_length);
  }
  PromptResult r;
  r.prefill_ms = ms_since(t0);

  const double full_per_query = [&] {
    const auto v = decoder.views();
    return double(v.size());
  }();
  double decode_ms = 0, decode_cpu_ms = 0, occupancy_sum = 0;
  at::Tensor next = tokens.slice(0, n_prompt - 1, n_prompt);  // the last prompt token
  for (int d = 0; d < key_digits; ++d) {
    auto t = Clock::now();
    double c = thread_cpu_ms();
    const auto logits = decoder.step(next);
    decode_ms += ms_since(t);
    decode_cpu_ms += thread_cpu_ms() - c;
    // What this query attended to (untimed bookkeeping).
    occupancy_sum += double(decoder.cached_entries()) / (full_per_query * double(decoder.length()));
    t = Clock::now();
    c = thread_cpu_ms();
    evict(decoder, policy, final_length);
    const int64_t byte = logits[-1].argmax().item<int64_t>();
    decode_ms += ms_since(t);
    decode_cpu_ms += thread_cpu_ms() - c;
    r.generated += char(byte);
    next = at::tensor({byte}, at::kLong);
  }
  r.correct = r.generated == prompt.key;
  r.occupancy = occupancy_sum / key_digits;
  r.decode_ms_per_token = decode_ms / key_digits;
  r.decode_cpu_ms_per_token = decode_cpu_ms / key_digits;
  return r;
}

}  // namespace fpa::passkey
