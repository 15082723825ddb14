// The autograd wrapper around the fused CPU kernels: contiguity, dtype dispatch, the saved
// tensors, and the reduction of the backward's per-chunk slots.
#include "kernels/cpu/fused_cpu.h"

#include "kernels/checks.h"
#include "kernels/cpu/fused_gemm.h"
#include "kernels/cpu/fused_kernels.h"
#include "kernels/reference.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>

namespace fpa {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

fused::Problem make_problem(const at::Tensor& q, const at::Tensor& v, Variant variant,
                            FpaBackward fpa_backward, double tau, double scale, int64_t tile) {
  fused::Problem p;
  p.batch = q.size(0);
  p.heads = q.size(1);
  p.n = q.size(2);
  p.d = q.size(3);
  p.dv = v.size(3);
  p.variant = variant;
  p.fpa_backward = fpa_backward;
  p.tau = tau;
  p.scale = scale > 0 ? scale : 1.0 / std::sqrt(double(p.d));
  p.tile = tile;
  return p;
}

template <class T>
T* ptr_or_null(const at::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

struct FusedAttention : public torch::autograd::Function<FusedAttention> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q_in, const at::Tensor& k_in,
                            const at::Tensor& v_in, const at::Tensor& gate_in, int64_t variant,
                            int64_t fpa_backward, double tau, double scale, int64_t tile) {
    auto q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
    const auto var = static_cast<Variant>(variant);
    at::Tensor gate = var == Variant::Softmax ? at::Tensor() : gate_in.contiguous();
    const auto p = make_problem(q, v, var, static_cast<FpaBackward>(fpa_backward), tau, scale, tile);
    auto out = at::empty(v.sizes(), v.options());
    auto lse = at::empty({p.batch, p.heads, p.n}, q.options());
    if (p.n > 0) {
      AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "fused_attention_forward", [&] {
        fused::forward<scalar_t>(p, {q.data_ptr<scalar_t>(), k.data_ptr<scalar_t>(),
                                     v.data_ptr<scalar_t>(), ptr_or_null<scalar_t>(gate),
                                     out.data_ptr<scalar_t>(), lse.data_ptr<scalar_t>()});
      });
    }
    // The inputs as given, not their contiguous copies: a double backward differentiates
    // through them (backward makes them contiguous again, free when they already are).
    ctx->save_for_backward({q_in, k_in, v_in, gate_in, out, lse});
    ctx->saved_data["variant"] = variant;
    ctx->saved_data["fpa_backward"] = fpa_backward;
    ctx->saved_data["tau"] = tau;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["tile"] = tile;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto var = static_cast<Variant>(ctx->saved_data["variant"].toInt());
    const auto fpa_backward = static_cast<FpaBackward>(ctx->saved_data["fpa_backward"].toInt());
    const double tau = ctx->saved_data["tau"].toDouble();
    const double scale = ctx->saved_data["scale"].toDouble();
    if (at::GradMode::is_enabled()) {
      // create_graph=True (double backward): the kernels below give first derivatives only, so
      // the gradient is recomputed through the reference's differentiable ops (n x n memory).
      const AttentionOptions ref{var, Impl::Reference, fpa_backward, tau, scale};
      const auto g = reference_attention_grads(saved[0], saved[1], saved[2],
                                               var == Variant::Softmax ? at::Tensor() : saved[3],
                                               ref, grads[0]);
      return {g[0], g[1], g[2], g[3], at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
              at::Tensor()};
    }
    const auto q = saved[0].contiguous(), k = saved[1].contiguous(), v = saved[2].contiguous();
    const auto gate = var == Variant::Softmax ? at::Tensor() : saved[3].contiguous();
    const auto &out = saved[4], &lse = saved[5];
    const auto p = make_problem(q, v, var, fpa_backward, tau, scale, ctx->saved_data["tile"].toInt());
    auto dout = grads[0].defined() ? grads[0].contiguous() : at::zeros_like(out);
    const int64_t slots = fused::backward_slots(p, at::get_num_threads());
    auto dq = at::empty(q.sizes(), q.options());
    auto dk = at::zeros({slots, p.batch, p.heads, p.n, p.d}, q.options());
    auto dv = at::zeros({slots, p.batch, p.heads, p.n, p.dv}, q.options());
    at::Tensor dgate;
    if (gate.defined()) dgate = at::zeros({slots, p.batch, p.heads, p.n}, q.options().dtype(at::kDouble));
    if (p.n > 0) {
      AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "fused_attention_backward", [&] {
        fused::BackwardArgs<scalar_t> a{
            q.data_ptr<scalar_t>(),   k.data_ptr<scalar_t>(),    v.data_ptr<scalar_t>(),
            ptr_or_null<scalar_t>(gate), out.data_ptr<scalar_t>(), lse.data_ptr<scalar_t>(),
            dout.data_ptr<scalar_t>(), dq.data_ptr<scalar_t>(),   dk.data_ptr<scalar_t>(),
            dv.data_ptr<scalar_t>(),  ptr_or_null<double>(dgate), slots};
        fused::backward<scalar_t>(p, a);
      });
    }
    auto reduce = [](const at::Tensor& s) { return s.size(0) == 1 ? s[0] : s.sum(0); };
    dk = reduce(dk);
    dv = reduce(dv);
    if (dgate.defined()) {
      dgate = reduce(dgate);
      // FoX: the kernel produced dLoss/dF; F = cumsum(log f) so d log f_t = sum_{s >= t} dF_s.
      if (var == Variant::Fox) dgate = dgate.flip(-1).cumsum(-1).flip(-1);
      dgate = dgate.to(q.scalar_type());
    }
    return {dq, dk, dv, dgate, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

at::Tensor fused_attention_cpu(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& gate, const AttentionOptions& opts,
                               int64_t tile) {
  check(tile >= 1 && tile <= 256, "fused attention: tile size must be in [1, 256]");
  check(!q.is_cuda(), "fused attention: CPU tensors only");
  // An undefined tensor cannot pass through an autograd function's arguments in every LibTorch
  // version; softmax gets an empty placeholder that the kernels ignore.
  const at::Tensor g = opts.variant == Variant::Softmax ? at::empty({0}, q.options()) : gate;
  return FusedAttention::apply(q, k, v, g, static_cast<int64_t>(opts.variant),
                               static_cast<int64_t>(opts.fpa_backward), opts.st_temperature,
                               opts.scale, tile);
}

int64_t fused_extra_bytes(int64_t batch, int64_t heads, int64_t n, int64_t head_dim,
                          const AttentionOptions& opts, int64_t elem_size, bool backward,
                          int threads, int64_t tile) {
  fused::Problem p;
  p.batch = batch;
  p.heads = heads;
  p.n = n;
  p.d = p.dv = head_dim;
  p.variant = opts.variant;
  p.fpa_backward = opts.fpa_backward;
  p.tile = tile;
  int64_t bytes = fused::forward_extra_bytes(p, elem_size, threads);
  if (backward) bytes += fused::backward_extra_bytes(p, elem_size, threads);
  return bytes;
}

const char* fused_gemm_backend() { return fused::gemm_backend(); }

}  // namespace fpa
