// Data parallelism: the only part of lm/ that knows about LibTorch's c10d (distributed.cpp), so
// the API differences between LibTorch versions stay in one translation unit.
//
// A Communicator joins the process group described by the environment variables torchrun sets:
// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (rank 0 hosts the TCPStore rendezvous) and
// LOCAL_RANK (the GPU of this rank on its machine). The backend is Gloo on the CPU and NCCL on
// GPUs (in a build against a LibTorch with CUDA and NCCL). Without WORLD_SIZE (or WORLD_SIZE=1)
// there is no group and nothing to reduce.
#pragma once

#include "experiments/communicator.h"

#include <memory>
#include <vector>

namespace fpa::lm {

// Reads the environment; returns a single-process communicator when WORLD_SIZE is unset or 1.
// `gpu`: the ranks reduce CUDA tensors (NCCL), else CPU tensors (Gloo). Throws
// std::runtime_error with one clear line on a bad environment or a failed rendezvous.
std::unique_ptr<Communicator> communicator_from_env(bool gpu = false);

// Whether this build has a multi-process backend for CUDA tensors (NCCL) or CPU ones (Gloo).
bool distributed_available(bool gpu = false);

// This rank's GPU index on its machine: LOCAL_RANK (torchrun), else RANK in a group launched by
// lm-train --nproc (one machine), else -1 (a single process).
int local_rank_from_env();

}  // namespace fpa::lm
