#include "lm/data.h"

#include "experiments/usage_error.h"

#include <fmt/format.h>

#include <sstream>
#include <stdexcept>

namespace fpa::lm {

WindowSampler::WindowSampler(at::Tensor stream, int64_t window, uint64_t seed)
    : stream_(std::move(stream)), window_(window) {
  if (stream_.scalar_type() != at::kByte && stream_.scalar_type() != at::kInt)
    throw std::invalid_argument("WindowSampler: the stream must be uint8 or int32");
  if (stream_.numel() <= window_)
    throw UsageError(fmt::format("the training split has {} tokens, fewer than a window of {} "
                                 "(a larger corpus or a shorter --context)",
                                 stream_.numel(), window_ + 1));
  std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), 0x4c4d4441u};
  rng_.seed(seq);
}

namespace {

// One batch of windows of a stream of T (uint8 bytes or int32 sub-word ids).
template <class T>
at::Tensor draw_batch(const at::Tensor& stream, int64_t window, int64_t batch, std::mt19937_64& rng) {
  const uint64_t starts = uint64_t(stream.numel() - window + 1);
  auto out = at::empty({batch, window}, at::kLong);
  const auto* s = stream.data_ptr<T>();
  auto* o = out.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    const uint64_t start = rng() % starts;  // modulo, not a distribution: same on every libstdc++
    for (int64_t t = 0; t < window; ++t) o[b * window + t] = s[start + t];
  }
  return out;
}

}  // namespace

at::Tensor WindowSampler::next_batch(int64_t batch) {
  return stream_.scalar_type() == at::kByte ? draw_batch<uint8_t>(stream_, window_, batch, rng_)
                                            : draw_batch<int32_t>(stream_, window_, batch, rng_);
}

std::string WindowSampler::state() const {
  std::ostringstream s;
  s << rng_;
  return s.str();
}

void WindowSampler::set_state(const std::string& state) {
  std::istringstream s(state);
  s >> rng_;
  if (!s) throw std::runtime_error("checkpoint: corrupt data-sampler state");
}

at::Tensor leading_windows(const at::Tensor& stream, int64_t window, int64_t count) {
  const int64_t n = std::min(count, stream.numel() / window);
  if (n == 0)
    throw UsageError(fmt::format("the validation split has {} tokens, fewer than a window of {} "
                                 "(a larger corpus or a shorter --context)", stream.numel(), window));
  return stream.narrow(0, 0, n * window).view({n, window}).to(at::kLong);
}

}  // namespace fpa::lm
