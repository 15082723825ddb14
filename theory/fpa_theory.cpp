#include "theory/fpa_theory.h"

#include "kernels/attention.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace fpa::theory {
namespace {

const auto kF64 = at::TensorOptions().dtype(at::kDouble);

AttentionOptions fpa_reference(double scale = 0.0) {
  AttentionOptions o;
  o.variant = Variant::Fpa;
  o.impl = Impl::Reference;
  o.scale = scale;
  return o;
}

}  // namespace

at::Tensor to_tensor(const std::vector<double>& x) {
  return at::tensor(at::ArrayRef<double>(x), kF64);
}

at::Tensor fpa_bias_of(const std::vector<double>& field) {
  return fpa::fpa_bias(to_tensor(field));
}

at::Tensor fox_bias_of(const std::vector<double>& log_forget) {
  return fpa::fox_bias(to_tensor(log_forget));
}

std::vector<double> cumulative_sum(const std::vector<double>& increments) {
  std::vector<double> out(increments.size());
  double s = 0;
  for (size_t t = 0; t < increments.size(); ++t) out[t] = s += increments[t];
  return out;
}

double max_causal_diff(const at::Tensor& a, const at::Tensor& b) {
  const int64_t n = a.size(0);
  return (a - b).masked_select(at::ones({n, n}, at::kBool).tril()).abs().max().item<double>();
}

double max_row_decrease(const at::Tensor& bias) {
  auto b = bias.contiguous();
  auto B = b.accessor<double, 2>();
  double worst = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < b.size(0); ++i)
    for (int64_t j = 0; j < i; ++j) worst = std::max(worst, B[i][j] - B[i][j + 1]);
  return worst;
}

int64_t non_suffix_rows(const at::Tensor& bias, double tau) {
  auto alive = fpa::alive_sets(bias, tau).contiguous();
  auto A = alive.accessor<bool, 2>();
  int64_t bad = 0;
  for (int64_t i = 0; i < alive.size(0); ++i) {
    // A suffix window: once a key is alive, every later key (up to i) is alive too.
    bool seen_alive = false, broken = false;
    for (int64_t j = 0; j <= i; ++j) {
      if (A[i][j]) seen_alive = true;
      else if (seen_alive) broken = true;
    }
    bad += broken;
  }
  return bad;
}

std::vector<double> field_for_alive_set(int64_t query, const std::vector<int64_t>& members,
                                        double gap) {
  if (gap <= 0) throw std::invalid_argument("field_for_alive_set: gap must be > 0");
  std::vector<bool> in(query + 1, false);
  for (int64_t j : members)
    if (j >= 0 && j <= query) in[j] = true;
  if (!in[query]) throw std::invalid_argument("field_for_alive_set: the query must be a member");
  std::vector<double> phi(query + 1);
  int64_t r = 1;  // index of the next member (1-based)
  for (int64_t t = 0; t <= query; ++t) {
    if (in[t]) phi[t] = double(r++) * gap;
    else phi[t] = double(r + 1) * gap;  // the r-th member will dip exactly `gap` below
  }
  return phi;
}

IncrementTable task_table(const std::string& name) {
  IncrementTable t;
  t.name = name;
  t.task = synthetic::builtin_task(name);
  for (const auto& type : t.task->types) {
    if (type.increment != std::round(type.increment))
      throw std::invalid_argument("task_table: " + name + " has a non-integer increment");
    t.types.push_back(type.name);
    t.increment.push_back(int(type.increment));
  }
  return t;
}

IncrementTable random_table(std::mt19937_64& rng) {
  IncrementTable t;
  t.name = "random";
  const int types = std::uniform_int_distribution<int>(2, 6)(rng);
  std::uniform_int_distribution<int> inc(-3, 3);
  for (int a = 0; a < types; ++a) {
    t.increment.push_back(inc(rng));
    t.types.push_back("t" + std::to_string(a));
  }
  return t;
}

std::vector<int> sample_types(const IncrementTable& table, int64_t n, std::mt19937_64& rng) {
  std::vector<int> out;
  out.reserve(n);
  if (table.task) {
    for (int64_t c : synthetic::sample_types(*table.task, n, rng)) out.push_back(int(c));
    return out;
  }
  std::uniform_int_distribution<int> pick(0, int(table.increment.size()) - 1);
  for (int64_t t = 0; t < n; ++t) out.push_back(pick(rng));
  return out;
}

std::vector<double> field_of_types(const IncrementTable& table, const std::vector<int>& types) {
  std::vector<double> inc;
  inc.reserve(types.size());
  for (int a : types) inc.push_back(table.increment.at(a));
  return cumulative_sum(inc);
}

void for_each_first_passage_set(
    const std::vector<double>& field,
    const std::function<void(int64_t, const std::vector<int64_t>&)>& visit) {
  std::vector<int64_t> stack;  // alive keys, levels non-decreasing from bottom to top
  for (int64_t t = 0; t < int64_t(field.size()); ++t) {
    while (!stack.empty() && field[stack.back()] > field[t]) stack.pop_back();
    stack.push_back(t);
    visit(t, stack);
  }
}

at::Tensor first_passage_mask(const std::vector<double>& field) {
  const int64_t n = int64_t(field.size());
  auto mask = at::zeros({n, n}, at::kBool);
  auto M = mask.accessor<bool, 2>();
  for_each_first_passage_set(field, [&](int64_t i, const std::vector<int64_t>& alive) {
    for (int64_t j : alive) M[i][j] = true;
  });
  return mask;
}

at::Tensor field_only_attention(const std::vector<double>& field, double beta) {
  const int64_t n = int64_t(field.size());
  auto zeros = at::zeros({1, 1, n, 1}, kF64);
  auto v = at::eye(n, kF64).view({1, 1, n, n});
  auto gate = (to_tensor(field) * beta).view({1, 1, n});
  return fpa::attention(zeros, zeros, v, gate, fpa_reference()).view({n, n});
}

double t3c_outside_bound(int64_t keys, int64_t alive, double beta, double gap) {
  return double(keys - alive) / double(alive) * std::exp(-beta * gap);
}


double eviction_bound(double eps, double V) { return 2.0 * eps * V; }

at::Tensor output_over(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const at::Tensor& bias_row, const std::vector<int64_t>& kept,
                       double scale) {
  // Plain float64 linear algebra (Eigen), independent of the ATen code it is checked against.
  if (kept.empty()) throw std::invalid_argument("output_over: no kept keys");
  using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous(),
             bc = bias_row.contiguous();
  const Eigen::Map<const RowMatrix> K(kc.data_ptr<double>(), kc.size(0), kc.size(1));
  const Eigen::Map<const RowMatrix> V(vc.data_ptr<double>(), vc.size(0), vc.size(1));
  const Eigen::Map<const Eigen::VectorXd> Q(qc.data_ptr<double>(), qc.size(0));
  const Eigen::Map<const Eigen::VectorXd> B(bc.data_ptr<double>(), bc.size(0));
  // Every column by seqN: Eigen 3.4 spells it Eigen::all and Eigen 5 Eigen::placeholders::all.
  const Eigen::VectorXd s = scale * (K(kept, Eigen::seqN(0, K.cols())) * Q) + B(kept);
  const Eigen::VectorXd w = (s.array() - s.maxCoeff()).exp();
  Eigen::VectorXd out = V(kept, Eigen::seqN(0, V.cols())).transpose() * w / w.sum();
  return at::from_blob(out.data(), {out.size()}, kF64).clone();
}

EvictionReport run_eviction(const EvictionCase& c) {
  const int64_t n = c.q.size(0), d = c.q.size(1);
  const double scale = 1.0 / std::sqrt(double(d));
  EvictionReport r;
  // R over every (query, earlier key) pair: one bound valid for the whole decoding run.
  auto logits = at::matmul(c.q, c.k.t()).abs() * scale;
  r.R = logits.tril().max().item<double>();
  r.V = c.v.norm(2, 1).max().item<double>();
  r.threshold = certified_eviction_threshold(r.R, n, c.eps);
  r.bound = eviction_bound(c.eps, r.V);

  auto bias = fpa_bias_of(c.field).contiguous();
  auto B = bias.accessor<double, 2>();
  auto gate = to_tensor(c.field).view({1, 1, n});
  AttentionOptions opts = fpa_reference(scale);
  auto full = fpa::attention(c.q.view({1, 1, n, d}), c.k.view({1, 1, n, d}),
                             c.v.view({1, 1, n, c.v.size(1)}), gate, opts)
                  .view({n, c.v.size(1)});

  std::vector<int64_t> cache, evicted, all;
  double occupancy_sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    cache.push_back(i);
    all.push_back(i);
    std::vector<int64_t> keep;
    for (int64_t j : cache) (B[i][j] < r.threshold ? evicted : keep).push_back(j);
    cache.swap(keep);
    // Dead forever: every key evicted so far stays below the threshold at this query.
    for (int64_t j : evicted) r.later_violations += B[i][j] >= r.threshold;
    auto row = bias[i];
    auto kept_out = output_over(c.q[i], c.k, c.v, row, cache, scale);
    r.max_change = std::max(r.max_change, (full[i] - kept_out).norm().item<double>());
    if (i % 61 == 0 || i == n - 1) {  // spot-check the library's mixing against the kernel
      auto all_out = output_over(c.q[i], c.k, c.v, row, all, scale);
      r.reference_mismatch =
          std::max(r.reference_mismatch, (full[i] - all_out).abs().max().item<double>());
    }
    occupancy_sum += double(cache.size()) / double(i + 1);
  }
  r.final_evicted_frac = double(evicted.size()) / double(n);
  r.mean_occupancy = occupancy_sum / double(n);
  return r;
}

EvictionCase adversarial_eviction_case(int64_t n, double R, double V, double eps) {
  // d = 1, so scale = 1 and the logit of key j is q_i * k_j.
  EvictionCase c;
  c.eps = eps;
  c.q = at::ones({n, 1}, kF64);
  c.k = at::full({n, 1}, R, kF64);
  c.k[n - 1][0] = -R;
  c.v = at::full({n, 1}, V, kF64);
  c.v[n - 1][0] = -V;
  // Every earlier key sits at level 0; the last token dips just below the threshold.
  c.field.assign(n, 0.0);
  const double theta = certified_eviction_threshold(R, n, eps);
  c.field[n - 1] = theta - 1e-9 * (1.0 + std::abs(theta));
  return c;
}

double binomial(int n, int k) {
  if (k < 0 || k > n) return 0;
  double r = 1;
  for (int a = 1; a <= k; ++a) r = r * double(n - k + a) / double(a);
  return std::round(r);
}

double cover_count(int n, int d) {
  double s = 0;
  for (int k = 0; k <= d; ++k) s += binomial(n - 1, k);
  return 2 * s;
}

double arrangement_cells(int n, int m) {
  double s = 0;
  for (int k = 0; k <= m; ++k) s += binomial(n, k);
  return s;
}

}  // namespace fpa::theory
