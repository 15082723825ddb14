// Sequences of a target-set task and their ground truth (SPEC section 4).
//
// Each token has a type (which fixes its ground-truth field increment) and a payload, one of
// `payload_values` fixed random vectors, drawn uniformly and independently of the type. The
// target set S_i of query i is the tau = 0 alive set of the ground-truth field, computed with
// the same functions the theory uses (fpa::fpa_bias, fpa::alive_sets); the target output y_i is
// the mean payload vector over S_i.
#pragma once

#include "task.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <random>
#include <vector>

namespace fpa::synthetic {

struct Batch {
  at::Tensor types;     // (B, N) int64
  at::Tensor payloads;  // (B, N) int64, indices into the payload table
  at::Tensor field;     // (B, N) float64, the ground-truth walk phi
  at::Tensor targets;   // (B, N, N) bool, [b][i][j]: key j is in S_i
  at::Tensor y;         // (B, N, P) float32, mean payload vector over S_i
};

// `values` fixed random vectors of dimension `dim` (standard normal), drawn from `rng`.
at::Tensor make_payload_table(int values, int dim, std::mt19937_64& rng);

// Draws `batch` sequences of length `n`: types by the task's weights and level constraints,
// payloads uniformly. Throws std::runtime_error if no type is allowed at some level.
Batch sample_batch(const Task& task, const at::Tensor& payload_table, int64_t batch, int64_t n,
                   std::mt19937_64& rng);

// The ground truth of given type and payload sequences (rows of equal length).
Batch make_batch(const Task& task, const at::Tensor& payload_table,
                 const std::vector<std::vector<int64_t>>& types,
                 const std::vector<std::vector<int64_t>>& payloads);

}  // namespace fpa::synthetic
