// The checks of theory-realization's three parts (T3, THEORY.md), one sequence or one batch of
// target sets at a time: (a) constructed fields realise target sets with the gap, (b) the
// kernel's alive sets against the first-passage truth, (c) the target mass of a dimension-1 head
// and its weights against fpa::attention's.
#pragma once

#include "experiments/csv_writer.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace fpa::theory {

struct PartA {
  int64_t cases = 0, exact = 0;
  double worst_gap_shortfall = -std::numeric_limits<double>::infinity();  // max(b + g), <= 0
};

// (a): `cases` random target sets, one row each in `csv` (part "a").
PartA check_target_sets(int cases, std::mt19937_64& rng, CsvWriter& csv);

struct FamilyResult {
  bool sets_equal = true;
  double max_alive_bias = 0;                                        // must be 0
  double max_dead_bias = -std::numeric_limits<double>::infinity();  // must be <= -1
};

// (b): the kernel's alive sets (bias >= 0) against `truth`, with the biases of both kinds.
FamilyResult check_alive_sets(const at::Tensor& bias, const at::Tensor& truth);

struct MassResult {
  double min_mass = 1;         // over queries
  double max_bound_ratio = 0;  // outside mass / T3(c) bound
  double max_spread = 0;       // uniformity of the weights on A_i
};

// (c): weights of a head whose logits are beta * b_ij alone (q.k = 0), from the kernel's bias:
// the softmax is done row by row so that n = 8192 fits in time and memory; it is checked
// against fpa::attention itself on the shorter sequences (check_against_kernel).
MassResult check_mass(const at::Tensor& bias, const at::Tensor& truth, double beta);

// Largest difference between the weights above and fpa::attention's (q = k = 0, v = identity).
double check_against_kernel(const std::vector<double>& field, const at::Tensor& bias, double beta);

}  // namespace fpa::theory
