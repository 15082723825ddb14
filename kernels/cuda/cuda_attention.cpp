#include "kernels/cuda/cuda_attention.h"

#include "kernels/checks.h"
#include "kernels/cuda/fpa_cuda_kernels.h"
#include "kernels/reference.h"

#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>

namespace fpa {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

cuda::KernelProblem make_problem(const at::Tensor& q, const at::Tensor& v, int64_t variant,
                                 double scale) {
  cuda::KernelProblem p;
  p.batch = q.size(0);
  p.heads = q.size(1);
  p.n = q.size(2);
  p.d = q.size(3);
  p.dv = v.size(3);
  p.variant = static_cast<cuda::KernelVariant>(variant);
  p.scale = scale > 0 ? scale : 1.0 / std::sqrt(double(p.d));
  return p;
}

void ok(int code, const char* what) {
  check(code == 0, fmt::format("cuda attention: {} failed (code {})", what, code));
}

template <class T>
T* ptr(const at::Tensor& t) {
  return t.defined() && t.numel() > 0 ? t.data_ptr<T>() : nullptr;
}

struct CudaAttention : public torch::autograd::Function<CudaAttention> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q_in, const at::Tensor& k_in,
                            const at::Tensor& v_in, const at::Tensor& gate_in, int64_t variant,
                            int64_t fpa_backward, double scale) {
    const c10::cuda::CUDAGuard guard(q_in.device());
    auto q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
    const bool softmax = static_cast<Variant>(variant) == Variant::Softmax;
    auto gate = softmax ? at::Tensor() : gate_in.contiguous();
    const auto p = make_problem(q, v, variant, scale);
    auto out = at::empty(v.sizes(), v.options());
    auto lse = at::empty({p.batch, p.heads, p.n}, q.options());
    auto prefix = at::empty({p.batch, p.heads, p.n}, q.options().dtype(at::kDouble));
    void* stream = at::cuda::getCurrentCUDAStream().stream();
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "cuda_attention_forward", [&] {
      ok(cuda::forward<scalar_t>(p, ptr<scalar_t>(q), ptr<scalar_t>(k), ptr<scalar_t>(v),
                                 ptr<scalar_t>(gate), ptr<double>(prefix), ptr<scalar_t>(out),
                                 ptr<scalar_t>(lse), stream),
         "forward kernel");
    });
    // The inputs as given, not their contiguous copies: a double backward differentiates
    // through them (backward makes them contiguous again, free when they already are).
    ctx->save_for_backward({q_in, k_in, v_in, gate_in, out, lse, prefix});
    ctx->saved_data["variant"] = variant;
    ctx->saved_data["fpa_backward"] = fpa_backward;
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const int64_t variant = ctx->saved_data["variant"].toInt();
    const auto var = static_cast<Variant>(variant);
    const auto fpa_backward = static_cast<FpaBackward>(ctx->saved_data["fpa_backward"].toInt());
    const double scale = ctx->saved_data["scale"].toDouble();
    check(!(var == Variant::Fpa && fpa_backward == FpaBackward::StraightThrough),
          "cuda attention: FPA's straight-through backward is not implemented on the GPU; "
          "use impl 'fused' (CPU) or 'reference'");
    const c10::cuda::CUDAGuard guard(s[0].device());
    if (at::GradMode::is_enabled()) {
      // create_graph=True (double backward): the kernels below give first derivatives only, so
      // the gradient is recomputed through the reference's differentiable ops (n x n memory).
      const AttentionOptions ref{var, Impl::Reference, fpa_backward, 1.0, scale};
      const auto g = reference_attention_grads(s[0], s[1], s[2],
                                               var == Variant::Softmax ? at::Tensor() : s[3], ref,
                                               grads[0]);
      return {g[0], g[1], g[2], g[3], at::Tensor(), at::Tensor(), at::Tensor()};
    }
    const auto q = s[0].contiguous(), k = s[1].contiguous(), v = s[2].contiguous();
    const auto gate = var == Variant::Softmax ? at::Tensor() : s[3].contiguous();
    const auto &out = s[4], &lse = s[5], &prefix = s[6];
    const auto p = make_problem(q, v, variant, scale);
    auto dout = grads[0].defined() ? grads[0].contiguous() : at::zeros_like(out);
    auto dq = at::zeros_like(q), dk = at::zeros_like(k), dv = at::zeros_like(v);
    at::Tensor dgate;
    if (gate.defined()) dgate = at::zeros({p.batch, p.heads, p.n}, q.options().dtype(at::kDouble));
    void* stream = at::cuda::getCurrentCUDAStream().stream();
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "cuda_attention_backward", [&] {
      ok(cuda::backward<scalar_t>(p, ptr<scalar_t>(q), ptr<scalar_t>(k), ptr<scalar_t>(v),
                                  ptr<scalar_t>(gate), ptr<double>(prefix), ptr<scalar_t>(out),
                                  ptr<scalar_t>(lse), ptr<scalar_t>(dout), ptr<scalar_t>(dq),
                                  ptr<scalar_t>(dk), ptr<scalar_t>(dv), ptr<double>(dgate),
                                  stream),
         "backward kernel");
    });
    if (dgate.defined()) {
      // FoX: the kernel produced dLoss/dF; d log f_t = sum_{s >= t} dF_s.
      if (static_cast<Variant>(variant) == Variant::Fox) dgate = dgate.flip(-1).cumsum(-1).flip(-1);
      dgate = dgate.to(q.scalar_type());
    }
    return {dq, dk, dv, dgate, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor cuda_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const at::Tensor& gate, const AttentionOptions& opts) {
  check(q.is_cuda() && k.is_cuda() && v.is_cuda(), "cuda attention: q, k, v must be CUDA tensors");
  check(opts.variant == Variant::Softmax || gate.is_cuda(),
        "cuda attention: the gate must be a CUDA tensor");
  check(q.size(3) <= cuda::kMaxHeadDim && v.size(3) <= cuda::kMaxHeadDim,
        fmt::format("cuda attention: head dimension must be <= {}", cuda::kMaxHeadDim));
  const at::Tensor g = opts.variant == Variant::Softmax ? at::empty({0}, q.options()) : gate;
  return CudaAttention::apply(q, k, v, g, static_cast<int64_t>(opts.variant),
                              static_cast<int64_t>(opts.fpa_backward), opts.scale);
}

}  // namespace fpa
