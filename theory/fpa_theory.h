// Shared mathematics of the theory suite (theorems T1-T5, see theory/THEORY.md).
//
// Everything here is checked against the SAME operators the models use: biases come from
// fpa::fpa_bias / fpa::fox_bias, alive sets from fpa::alive_sets, outputs from fpa::attention
// (Impl::Reference, float64). This file only adds what the theorems construct or bound:
// the T3 field for a target set, increment tables of the task families with an independent
// ground truth (the stack simulation of first-passage deaths), and the T5 eviction threshold.
// Sequences are 0-based here (position t = 0..n-1); THEORY.md uses 1-based positions.
#pragma once

#include "kernels/eviction.h"
#include "synthetic/task.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace fpa::theory {

// --- Thin wrappers around the kernels for one sequence ------------------------------------
at::Tensor to_tensor(const std::vector<double>& x);  // (N) float64
// (N, N) float64 bias matrices from the kernels ([i][j] = b_ij, -inf above the diagonal).
at::Tensor fpa_bias_of(const std::vector<double>& field);
at::Tensor fox_bias_of(const std::vector<double>& log_forget);
std::vector<double> cumulative_sum(const std::vector<double>& increments);

// Largest |a_ij - b_ij| over the causal entries j <= i of two (N, N) bias matrices.
double max_causal_diff(const at::Tensor& a, const at::Tensor& b);
// Largest b_ij - b_i,j+1 over 0 <= j < i (<= 0 means every row is non-decreasing in j).
double max_row_decrease(const at::Tensor& bias);
// Number of rows i whose alive set {j <= i : b_ij >= -tau} is not a suffix window {j >= j0}.
int64_t non_suffix_rows(const at::Tensor& bias, double tau);

// --- T3(a): a field whose tau = 0 alive set at `query` is exactly `members` ---------------
// `members` must contain `query`; entries outside [0, query] are ignored. Members get levels
// r*gap (r = 1, 2, ... in order), a non-member lying before the r-th member gets (r+1)*gap, so
// the r-th member dips exactly `gap` below it and never below an earlier member. Returns the
// field at positions 0..query.
std::vector<double> field_for_alive_set(int64_t query, const std::vector<int64_t>& members,
                                        double gap);

// --- T3(b): task families as integer increment tables -------------------------------------
struct IncrementTable {
  std::string name;
  std::vector<std::string> types;
  std::vector<int> increment;  // per type
  std::optional<synthetic::Task> task;  // a task family: sequences follow its own rules
};

// A task family of SPEC section 4 (dips, brackets, erase) from its one home,
// synthetic/tasks/<name>.task, the table the synthetic experiments train on. Throws if an
// increment is not an integer (T3(b) is stated for integer tables).
IncrementTable task_table(const std::string& name);
// 2..6 types with increments drawn from [-3, 3].
IncrementTable random_table(std::mt19937_64& rng);

// A random token-type sequence for the table: a task family's by its weights and constraints
// (synthetic::sample_types); other tables draw types uniformly.
std::vector<int> sample_types(const IncrementTable& table, int64_t n, std::mt19937_64& rng);
std::vector<double> field_of_types(const IncrementTable& table, const std::vector<int>& types);

// Ground truth of tau = 0 alive sets by the stack rule (independent of the kernels): token t
// removes the alive keys whose level is above phi_t, then joins. Calls visit(i, alive) for
// every query i, with alive the sorted alive positions.
void for_each_first_passage_set(const std::vector<double>& field,
                                const std::function<void(int64_t, const std::vector<int64_t>&)>& visit);
// The same as an (N, N) bool matrix.
at::Tensor first_passage_mask(const std::vector<double>& field);

// --- T3(c): head of dimension 1 whose logits are the field alone --------------------------
// The attention matrix A (N, N) of fpa::attention with q = k = 0 (d = 1), v = identity and the
// field scaled by beta: row i holds the weights of query i.
at::Tensor field_only_attention(const std::vector<double>& field, double beta);
// T3(c) bound on the mass outside the alive set: (keys - alive) / alive * exp(-beta * gap).
double t3c_outside_bound(int64_t keys, int64_t alive, double beta, double gap);

// The smallest epsilon the T3(c) and T5 checks accept: they compare float64 masses and outputs
// (sums of up to 8192 terms, rounding error ~1e-12) with 1 - eps and 2 eps V, so a smaller eps
// would report rounding as a FAIL of the theorem.
constexpr double kMinCertifiableEps = 1e-9;

// --- T5: certified eviction ---------------------------------------------------------------
// Keys with b_ij < threshold may be dropped: fpa::certified_eviction_threshold (kernels/eviction.h).
// The guaranteed bound on the change of the output (Euclidean norm): 2 * eps * V.
double eviction_bound(double eps, double V);

// Output of one query over a subset of the keys: softmax over `kept` of
// scale * q.k_j + bias_j, times v_j. q (D), k (N, D), v (N, Dv), bias (N) float64.
at::Tensor output_over(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const at::Tensor& bias_row, const std::vector<int64_t>& kept, double scale);

// A decoding run with eviction: queries 0..N-1 in order; after key i joins the cache, every
// cached key with b_ij < threshold(R, N, eps) is dropped for good. R is the global
// scale * max_{j<=i} |q_i.k_j| (a bound valid for every query, as a QK-normalised head would
// give), N the sequence length. Compares each query's output over the kept keys with the full
// output of fpa::attention.
struct EvictionCase {
  at::Tensor q, k, v;         // (N, D), (N, D), (N, Dv) float64
  std::vector<double> field;  // FPA field (levels), N
  double eps = 1e-2;
};
struct EvictionReport {
  double R = 0, V = 0, threshold = 0, bound = 0;
  double max_change = 0;          // max over queries of |o_i - o'_i|
  double final_evicted_frac = 0;  // evicted keys / N after the last query
  double mean_occupancy = 0;      // mean over queries of kept / (i+1)
  int64_t later_violations = 0;   // (evicted key, later query) pairs with b_ij >= threshold
  double reference_mismatch = 0;  // |fpa::attention - output_over(all keys)|: must be tiny
};
EvictionReport run_eviction(const EvictionCase& c);

// The near-worst case of the bound: N-1 keys at logit +R just below the threshold and value
// +V, the query's own key at logit -R and value -V. The change is 2 eps V (N-1)/N / (1 + ...).
EvictionCase adversarial_eviction_case(int64_t n, double R, double V, double eps);

// --- Counting (T4) -------------------------------------------------------------------------
double binomial(int n, int k);
// Cover's count of dichotomies of n points in general position in R^d cut by affine
// hyperplanes: C(n, d+1) = 2 * sum_{k=0}^{d} binom(n-1, k).
double cover_count(int n, int d);
// Cells of n affine hyperplanes in general position in R^m: sum_{k=0}^{m} binom(n, k).
double arrangement_cells(int n, int m);

}  // namespace fpa::theory
