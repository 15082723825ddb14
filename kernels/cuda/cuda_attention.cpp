// The CUDA kernels (fpa_cuda_kernels.h) behind the kernels' autograd function
// (kernels/kernel_autograd.h): device guard, stream, dtype dispatch, what the backward needs.
#include "kernels/cuda/cuda_attention.h"

#include "kernels/checks.h"
#include "kernels/cuda/fpa_cuda_kernels.h"
#include "kernels/kernel_autograd.h"

#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <fmt/format.h>

namespace fpa {
namespace {

cuda::KernelProblem make_problem(const at::Tensor& q, const at::Tensor& v, const KernelCall& c) {
  auto p = problem_sizes<cuda::KernelProblem>(q, v, c);
  p.variant = static_cast<cuda::KernelVariant>(static_cast<int64_t>(c.variant));
  return p;
}

void ok(int code, const char* what) {
  check(code == 0, fmt::format("cuda attention: {} failed (code {})", what, code));
}

template <class T>
T* ptr(const at::Tensor& t) {
  return t.defined() && t.numel() > 0 ? t.data_ptr<T>() : nullptr;
}

// The CUDA kernels in the kernels' autograd function (kernels/kernel_autograd.h).
struct CudaKernels {
  using DeviceGuard = c10::cuda::CUDAGuard;

  static void check_backward(const KernelCall& c) {
    check(!(c.variant == Variant::Fpa && c.fpa_backward == FpaBackward::StraightThrough),
          "cuda attention: FPA's straight-through backward is not implemented on the GPU; "
          "use impl 'fused' (CPU) or 'reference'");
  }

  // Saves the row log-sum-exp and FoX's prefix sums (float64) for the backward.
  static KernelForward forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& gate, const KernelCall& c) {
    const auto p = make_problem(q, v, c);
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
    return {out, {lse, prefix}};
  }

  // dK, dV and the gate gradient accumulate with atomics.
  static KernelGrads backward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const at::Tensor& gate, const at::Tensor& out,
                              const std::vector<at::Tensor>& saved, const at::Tensor& dout,
                              const KernelCall& c) {
    const auto &lse = saved[0], &prefix = saved[1];
    const auto p = make_problem(q, v, c);
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
    return {dq, dk, dv, dgate};
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
  return kernel_attention<CudaKernels>(q, k, v, gate, opts, /*tile=*/0);
}

}  // namespace fpa
