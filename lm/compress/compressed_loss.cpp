#include "lm/compress/compressed_loss.h"

#include <cmath>
#include <ctime>
#include <stdexcept>

namespace fpa::lm {
namespace {

double thread_cpu_ms() {  // with one intra-op thread the decoder's work runs on this thread
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

// -log softmax(logits)[target], in double.
double token_nll(const std::vector<float>& logits, int64_t target) {
  double top = -INFINITY;
  for (float x : logits) top = std::max(top, double(x));
  double sum = 0;
  for (float x : logits) sum += std::exp(double(x) - top);
  return top + std::log(sum) - double(logits[size_t(target)]);
}

}  // namespace

double CompressedLoss::perplexity() const { return std::exp(nll_per_token()); }

void CompressedLoss::add(const CompressedLoss& o) {
  nll += o.nll;
  tokens += o.tokens;
  occupancy_sum += o.occupancy_sum;
  decode_cpu_ms += o.decode_cpu_ms;
}

CompressedLoss score_window(IncrementalDecoder& decoder, const at::Tensor& window,
                            const cache::Policy& policy, int64_t evict_every) {
  if (policy.query_aware() || policy.needs_head_scores())
    throw std::invalid_argument("policy " + policy.name() +
                                " is not online and query-agnostic (it needs a question or a "
                                "calibration); a language-model window has neither");
  if (evict_every < 1) throw std::invalid_argument("evict_every must be >= 1");
  if (window.dim() != 1 || window.numel() < 2)
    throw std::invalid_argument("a window needs at least 2 tokens");
  const auto w = window.contiguous().to(at::kLong);
  const auto* ids = w.data_ptr<int64_t>();
  const int64_t n = w.numel() - 1;  // scored tokens
  const bool online = !policy.keeps_everything();
  decoder.track_mass(online && policy.reads().mass);
  decoder.reset();
  const double heads = double(decoder.heads());
  CompressedLoss out;
  const double c0 = thread_cpu_ms();
  for (int64_t s = 0; s < n; ++s) {
    const auto& logits = decoder.step_token(ids[s]);
    out.nll += token_nll(logits, ids[s + 1]);
    out.occupancy_sum += double(decoder.cached_entries()) / (heads * double(s + 1));
    ++out.tokens;
    if (online && (s + 1) % evict_every == 0 && s + 1 < n) {
      const auto views = decoder.views(policy.reads());
      const cache::Context context{views, s, n, evict_every, {}};
      decoder.keep(cache::select_checked(policy, context));
    }
  }
  out.decode_cpu_ms = thread_cpu_ms() - c0;
  return out;
}

std::vector<int64_t> spread_indices(int64_t total, int64_t max_windows) {
  std::vector<int64_t> out;
  if (max_windows <= 0 || max_windows >= total) {
    for (int64_t i = 0; i < total; ++i) out.push_back(i);
    return out;
  }
  for (int64_t k = 0; k < max_windows; ++k) out.push_back(k * total / max_windows);
  return out;
}

}  // namespace fpa::lm
