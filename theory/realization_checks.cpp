#include "theory/realization_checks.h"

#include "theory/fpa_theory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace fpa::theory {

PartA check_target_sets(int cases, std::mt19937_64& rng, CsvWriter& csv) {
  PartA r;
  const std::vector<double> gaps = {0.25, 1.0, 4.0};
  for (int c = 0; c < cases; ++c) {
    const int64_t query = std::uniform_int_distribution<int64_t>(0, 199)(rng);
    const double density = std::uniform_real_distribution<double>(0, 1)(rng);
    const double gap = gaps[c % gaps.size()];
    std::bernoulli_distribution member(density);
    std::vector<int64_t> S;
    for (int64_t j = 0; j < query; ++j)
      if (member(rng)) S.push_back(j);
    S.push_back(query);
    const auto bias = fpa_bias_of(field_for_alive_set(query, S, gap));
    auto B = bias.accessor<double, 2>();
    std::vector<bool> in(query + 1, false);
    for (int64_t j : S) in[j] = true;
    bool exact = true;
    double shortfall = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j <= query; ++j) {
      if (in[j]) exact &= B[query][j] >= 0.0;
      else {
        exact &= B[query][j] < 0.0;
        shortfall = std::max(shortfall, B[query][j] + gap);
      }
    }
    const bool ok = exact && shortfall <= 1e-12 * (1 + gap * double(query));
    csv.row("a", "target_set", query + 1, c, fmt::format("gap={} members={}", gap, S.size()),
            "max_nonmember_bias_plus_gap", S.size() == size_t(query + 1) ? 0.0 : shortfall, 0,
            ok);
    r.cases++;
    r.exact += ok;
    if (S.size() < size_t(query + 1)) r.worst_gap_shortfall = std::max(r.worst_gap_shortfall, shortfall);
  }
  return r;
}

FamilyResult check_alive_sets(const at::Tensor& bias, const at::Tensor& truth) {
  const int64_t n = bias.size(0);
  const auto kernel_alive = alive_sets(bias, 0.0);
  FamilyResult r;
  r.sets_equal = at::equal(kernel_alive, truth);
  auto B = bias.accessor<double, 2>();
  auto T = truth.accessor<bool, 2>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      if (T[i][j]) r.max_alive_bias = std::max(r.max_alive_bias, std::abs(B[i][j]));
      else r.max_dead_bias = std::max(r.max_dead_bias, B[i][j]);
    }
  return r;
}

MassResult check_mass(const at::Tensor& bias, const at::Tensor& truth, double beta) {
  const int64_t n = bias.size(0);
  auto B = bias.accessor<double, 2>();
  auto T = truth.accessor<bool, 2>();
  MassResult r;
  std::vector<double> w(n);
  for (int64_t i = 0; i < n; ++i) {
    double z = 0;  // b_ii = 0 is the largest logit, so exp never overflows
    for (int64_t j = 0; j <= i; ++j) z += w[j] = std::exp(beta * B[i][j]);
    double inside = 0, outside = 0, lo = 1, hi = 0;
    int64_t alive = 0;
    for (int64_t j = 0; j <= i; ++j) {
      const double a = w[j] / z;
      if (T[i][j]) inside += a, lo = std::min(lo, a), hi = std::max(hi, a), alive++;
      else outside += a;
    }
    r.min_mass = std::min(r.min_mass, inside);
    r.max_spread = std::max(r.max_spread, hi - lo);
    const double bound = t3c_outside_bound(i + 1, alive, beta, 1.0);
    if (outside > 0) r.max_bound_ratio = std::max(r.max_bound_ratio, outside / bound);
  }
  return r;
}

double check_against_kernel(const std::vector<double>& field, const at::Tensor& bias, double beta) {
  const auto A = field_only_attention(field, beta);
  auto W = A.accessor<double, 2>();
  auto B = bias.accessor<double, 2>();
  double worst = 0;
  for (int64_t i = 0; i < A.size(0); ++i) {
    double z = 0;
    for (int64_t j = 0; j <= i; ++j) z += std::exp(beta * B[i][j]);
    for (int64_t j = 0; j <= i; ++j) worst = std::max(worst, std::abs(W[i][j] - std::exp(beta * B[i][j]) / z));
  }
  return worst;
}

}  // namespace fpa::theory
