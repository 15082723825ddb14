// Training and evaluation windows cut from a split's token stream.
//
// Training draws window start offsets uniformly from a 64-bit Mersenne Twister seeded from the run
// seed; its state is the data position saved in checkpoints, so a resumed run sees the same
// batches as an uninterrupted one. Every rank draws the whole global batch and keeps its share,
// so the data do not depend on the number of ranks.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <random>
#include <string>

namespace fpa::lm {

class WindowSampler {
 public:
  // stream: uint8 bytes or int32 sub-word ids (T,) (lm/corpus_tokenizer.h's split_stream),
  // window: tokens per window (context + 1 for next-token training).
  WindowSampler(at::Tensor stream, int64_t window, uint64_t seed);
  at::Tensor next_batch(int64_t batch);  // (batch, window) int64
  std::string state() const;             // the generator state as text
  void set_state(const std::string& state);

 private:
  at::Tensor stream_;
  int64_t window_;
  std::mt19937_64 rng_;
};

// The first `count` non-overlapping windows of `window` tokens (fewer if the stream is short),
// as (count, window) int64: the fixed validation set used during training.
at::Tensor leading_windows(const at::Tensor& stream, int64_t window, int64_t count);

}  // namespace fpa::lm
