// Data parallelism: the only part of lm/ that knows about LibTorch's c10d (distributed.cpp), so
// the API differences between LibTorch versions stay in one translation unit.
//
// A Communicator joins the process group described by the usual environment variables
// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (rank 0 hosts the TCPStore rendezvous). On CPU the
// backend is Gloo. Without WORLD_SIZE (or WORLD_SIZE=1) there is no group and nothing to reduce.
#pragma once

#include "experiments/communicator.h"

#include <memory>
#include <vector>

namespace fpa::lm {

// Reads the environment; returns a single-process communicator when WORLD_SIZE is unset or 1.
// Throws std::runtime_error with one clear line on a bad environment or a failed rendezvous.
std::unique_ptr<Communicator> communicator_from_env();

// Whether this build has a multi-process backend (Gloo).
bool distributed_available();

}  // namespace fpa::lm
