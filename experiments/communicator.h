// The ranks of a data-parallel run, as the training loop sees them (experiments/train_loop.h).
// One process is SingleProcess below; the multi-process group (c10d with Gloo) is lm's
// (lm/distributed.h, communicator_from_env), the only code that knows about c10d.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <vector>

namespace fpa {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // In place: every tensor becomes the mean of its values over the ranks. The tensors are
  // reduced as one flat buffer (one collective per call).
  virtual void all_reduce_mean(const std::vector<at::Tensor>& tensors) = 0;
  virtual void barrier() = 0;
};

// One process, nothing to reduce.
class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  void all_reduce_mean(const std::vector<at::Tensor>&) override {}
  void barrier() override {}
};

}  // namespace fpa
