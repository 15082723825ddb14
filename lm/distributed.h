// Data parallelism: the only part of lm/ that knows about LibTorch's c10d (distributed.cpp), so
// the API differences between LibTorch versions stay in one translation unit.
//
// A Communicator joins the process group described by the usual environment variables
// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (rank 0 hosts the TCPStore rendezvous). On CPU the
// backend is Gloo. Without WORLD_SIZE (or WORLD_SIZE=1) there is no group and nothing to reduce.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <vector>

namespace fpa::lm {

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

// Reads the environment; returns a single-process communicator when WORLD_SIZE is unset or 1.
// Throws std::runtime_error with one clear line on a bad environment or a failed rendezvous.
std::unique_ptr<Communicator> communicator_from_env();
// One process, nothing to reduce (passkey-train, which never runs ranks).
std::unique_ptr<Communicator> single_process();

// Whether this build has a multi-process backend (Gloo).
bool distributed_available();

}  // namespace fpa::lm
