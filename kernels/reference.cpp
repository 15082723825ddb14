#include "reference.h"

#include "checks.h"

#include <cmath>
#include <limits>

namespace fpa {
namespace {

at::Tensor upper_mask(int64_t n, const at::TensorOptions& o) {
  // true where j > i: keys a causal query never sees
  return at::ones({n, n}, o.dtype(at::kBool)).triu(1);
}

double neg_inf() { return -std::numeric_limits<double>::infinity(); }

}  // namespace

at::Tensor path_argmin(const at::Tensor& field) {
  const int64_t n = field.size(-1);
  auto phi = field.detach().to(at::kDouble).contiguous().reshape({-1, n}).cpu();
  auto idx = at::empty({phi.size(0), n, n}, at::kLong);
  auto P = phi.accessor<double, 2>();
  auto I = idx.accessor<int64_t, 3>();
  for (int64_t r = 0; r < phi.size(0); ++r) {
    for (int64_t i = 0; i < n; ++i) {
      // Scan j = i, i-1, ..., 0 keeping the running minimum of phi over [j, i]. Updating only on
      // a strict decrease keeps the LATEST position among ties: the documented tie rule.
      double m = std::numeric_limits<double>::infinity();
      int64_t at_m = i;
      for (int64_t j = i; j >= 0; --j) {
        if (P[r][j] < m) { m = P[r][j]; at_m = j; }
        I[r][i][j] = at_m;
      }
      for (int64_t j = i + 1; j < n; ++j) I[r][i][j] = j;
    }
  }
  auto shape = field.sizes().vec();
  shape.push_back(n);
  return idx.reshape(shape).to(field.device());
}

at::Tensor fox_bias(const at::Tensor& log_forget) {
  const int64_t n = log_forget.size(-1);
  auto F = at::cumsum(log_forget, -1);
  auto b = F.unsqueeze(-1) - F.unsqueeze(-2);  // [i][j] = F_i - F_j
  return b.masked_fill(upper_mask(n, log_forget.options()), neg_inf());
}

at::Tensor fpa_field_from_increments(const at::Tensor& increments) {
  return at::cumsum(increments, -1);
}

at::Tensor fpa_bias(const at::Tensor& field, MinGrad min_grad, double st_temperature) {
  const int64_t n = field.size(-1);
  auto mask = upper_mask(n, field.options());
  auto rows_shape = field.sizes().vec();
  rows_shape.insert(rows_shape.end() - 1, n);
  auto rows = field.unsqueeze(-2).expand(rows_shape);  // [.., i, l] = phi_l
  // Exact path minimum as a gather at the argmin: its autograd is the exact subgradient
  // (gradient 1 at l*), with the latest-position rule at ties.
  auto path_min = rows.gather(-1, path_argmin(field));
  if (min_grad == MinGrad::StraightThrough) {
    check(st_temperature > 0, "straight-through temperature must be > 0");
    // Soft minimum m_s(j,i) = -tau log sum_{l in [j,i]} exp(-phi_l / tau): a reverse
    // log-cum-sum-exp along each row. Entries l > i get a large finite value, not -inf, since
    // -inf gives NaN gradients in logcumsumexp.
    const double big = field.scalar_type() == at::kDouble ? 1e300 : 1e30;
    auto x = (-rows / st_temperature).masked_fill(mask, -big);
    auto soft = -st_temperature * at::logcumsumexp(x.flip(-1), -1).flip(-1);
    // Forward value: the exact minimum, bit for bit (soft - soft.detach() is exactly 0).
    // Backward: the soft minimum's gradient.
    path_min = path_min.detach() + (soft - soft.detach());
  }
  auto b = path_min - field.unsqueeze(-2);  // [i][j] = min_{[j,i]} phi - phi_j
  return b.masked_fill(mask, neg_inf());
}

at::Tensor alive_sets(const at::Tensor& bias, double tau) {
  check(tau >= 0, "alive-set margin tau must be >= 0");
  return bias >= -tau;  // -inf above the diagonal is never alive
}

at::Tensor apply_rope(const at::Tensor& x, int64_t offset, double base) {
  const int64_t n = x.size(-2), d = x.size(-1);
  check(d % 2 == 0, "RoPE needs an even head dimension");
  auto opts = x.options();
  auto pos = at::arange(offset, offset + n, opts).unsqueeze(-1);                 // (N, 1)
  auto inv_freq = at::pow(base, -at::arange(0, d, 2, opts) / double(d));         // (D/2)
  auto angle = pos * inv_freq;                                                   // (N, D/2)
  auto cos = angle.cos(), sin = angle.sin();
  auto xe = x.slice(-1, 0, d, 2), xo = x.slice(-1, 1, d, 2);
  auto re = xe * cos - xo * sin;
  auto ro = xe * sin + xo * cos;
  return at::stack({re, ro}, -1).flatten(-2);
}

at::Tensor reference_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& gate, const AttentionOptions& opts) {
  const int64_t n = q.size(-2), d = q.size(-1);
  const double scale = opts.scale > 0 ? opts.scale : 1.0 / std::sqrt(double(d));
  auto s = at::matmul(q, k.transpose(-1, -2)) * scale;
  switch (opts.variant) {
    case Variant::Softmax:
      s = s.masked_fill(upper_mask(n, q.options()), neg_inf());
      break;
    case Variant::Fox:
      s = s + fox_bias(gate);
      break;
    case Variant::Fpa:
      s = s + fpa_bias(gate, opts.min_grad, opts.st_temperature);
      break;
  }
  return at::matmul(at::softmax(s, -1), v);
}

}  // namespace fpa
