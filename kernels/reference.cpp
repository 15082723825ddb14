#include "kernels/reference.h"

#include "kernels/checks.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <limits>

namespace fpa {
namespace {

at::Tensor upper_mask(int64_t n, const at::TensorOptions& o) {
  // true where j > i: keys a causal query never sees
  return at::ones({n, n}, o.dtype(at::kBool)).triu(1);
}

double neg_inf() { return -std::numeric_limits<double>::infinity(); }

// y_j = log sum_{l >= j} exp(x_l) along the last dimension, with a backward that is itself
// differentiable. LibTorch 1.13's logcumsumexp backward takes log |grad|, whose derivative is NaN
// where grad is exactly 0 (a query's first row, one key, always gives one), so a double backward
// through the straight-through soft minimum was NaN.
struct ReverseLogCumSumExp : public torch::autograd::Function<ReverseLogCumSumExp> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x) {
    auto y = at::logcumsumexp(x.flip(-1), -1).flip(-1);
    ctx->save_for_backward({x, y});
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    // dx_l = sum_{j <= l} g_j exp(x_l - y_j), split by the sign of g so that each part is a
    // log-cum-sum-exp: exp(x_l + log sum_{j <= l} exp(log |g_j| - y_j)). The log sees 1 where
    // g = 0, and `where` drops that branch: no 0 * inf in the derivative.
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &y = saved[1];
    const auto g = grads[0];
    const auto lowest = at::full({}, g.scalar_type() == at::kDouble
                                         ? std::numeric_limits<double>::lowest()
                                         : double(std::numeric_limits<float>::lowest()),
                                 g.options());
    const auto log_abs = at::where(g != 0, g.abs(), at::ones_like(g)).log();
    auto part = [&](const at::Tensor& sign) {
      return (at::logcumsumexp(at::where(sign, log_abs, lowest) - y, -1) + x).exp();
    };
    return {part(g > 0) - part(g < 0)};
  }
};

}  // namespace

at::Tensor path_argmin(const at::Tensor& field) {
  const int64_t n = field.size(-1);
  const int64_t heads = n > 0 ? field.numel() / n : 0;  // reshape({-1, 0}) is ambiguous
  auto phi = field.detach().to(at::kDouble).contiguous().reshape({heads, n}).cpu();
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

at::Tensor fpa_bias(const at::Tensor& field, FpaBackward fpa_backward, double st_temperature) {
  const int64_t n = field.size(-1);
  auto mask = upper_mask(n, field.options());
  auto rows_shape = field.sizes().vec();
  rows_shape.insert(rows_shape.end() - 1, n);
  auto rows = field.unsqueeze(-2).expand(rows_shape);  // [.., i, l] = phi_l
  // Exact path minimum as a gather at the argmin: its autograd is the exact subgradient
  // (gradient 1 at l*), with the latest-position rule at ties.
  auto path_min = rows.gather(-1, path_argmin(field));
  if (fpa_backward == FpaBackward::StraightThrough) {
    check(std::isfinite(st_temperature) && st_temperature > 0,
          "straight-through temperature must be finite and > 0");
    // Soft minimum m_s(j,i) = -tau log sum_{l in [j,i]} exp(-phi_l / tau): a reverse
    // log-cum-sum-exp along each row. Entries l > i get a large finite value, not -inf, since
    // -inf gives NaN gradients in logcumsumexp. Only its gradient is used, and that does not
    // change when row i is centred on a constant: c_i = min_{l<=i} phi_l (exact, detached).
    // The exponents -(phi_l - c_i)/tau <= 0 then scale with the field's spread, not its level:
    // uncentred, a float32 field at level 1e4 lost ~5e-4 of its gradient to their rounding.
    const double big = field.scalar_type() == at::kDouble ? 1e300 : 1e30;
    auto centre = path_min.detach().slice(-1, 0, 1);  // [.., i, 0] = min_{l<=i} phi
    auto x = (-(rows - centre) / st_temperature).masked_fill(mask, -big);
    auto soft = -st_temperature * ReverseLogCumSumExp::apply(x);  // m_s - c_i
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
  check(std::isfinite(base) && base > 0, "RoPE base must be finite and > 0");
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
      s = s + fpa_bias(gate, opts.fpa_backward, opts.st_temperature);
      break;
  }
  return at::matmul(at::softmax(s, -1), v);
}

std::vector<at::Tensor> reference_attention_grads(const at::Tensor& q, const at::Tensor& k,
                                                  const at::Tensor& v, const at::Tensor& gate,
                                                  const AttentionOptions& opts,
                                                  const at::Tensor& dout) {
  const std::vector<at::Tensor> inputs{q, k, v, gate};
  std::vector<at::Tensor> wrt;  // autograd::grad refuses inputs that do not require grad
  for (const auto& t : inputs)
    if (t.defined() && t.requires_grad()) wrt.push_back(t);
  std::vector<at::Tensor> grads(inputs.size());
  if (wrt.empty()) return grads;
  const at::AutoGradMode grad_on(true);
  const auto out = reference_attention(q, k, v, gate, opts);
  const auto d = torch::autograd::grad({out}, wrt, {dout.defined() ? dout : at::zeros_like(out)},
                                       /*retain_graph=*/true, /*create_graph=*/true,
                                       /*allow_unused=*/true);
  for (size_t i = 0, w = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) grads[i] = d[w++];
  return grads;
}

}  // namespace fpa
