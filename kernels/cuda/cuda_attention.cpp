// The CUDA kernels behind the kernels' autograd function (kernels/kernel_autograd.h): device
// guard, stream, workspace, and the kernel that cuda_dispatch.h chooses for the call: the tiled
// kernels (tiled_kernels.h) or the one-thread-per-row kernels (fpa_cuda_kernels.h).
#include "kernels/cuda/cuda_attention.h"

#include "kernels/checks.h"
#include "kernels/cuda/cuda_dispatch.h"
#include "kernels/cuda/fpa_cuda_kernels.h"
#include "kernels/cuda/tiled_kernels.h"
#include "kernels/kernel_autograd.h"

#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <fmt/format.h>

namespace fpa {
namespace {

void ok(int code, const char* what) {
  check(code == 0, fmt::format("cuda attention: {} failed (code {})", what, code));
}

void* stream() { return at::cuda::getCurrentCUDAStream().stream(); }

template <class T>
T* ptr(const at::Tensor& t) {
  return t.defined() && t.numel() > 0 ? t.data_ptr<T>() : nullptr;
}

void* raw(const at::Tensor& t) { return t.defined() && t.numel() > 0 ? t.data_ptr() : nullptr; }

cuda::tiled::DType tiled_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return cuda::tiled::DType::Float32;
    case at::kDouble: return cuda::tiled::DType::Float64;
    case at::kBFloat16: return cuda::tiled::DType::BFloat16;
    case at::kHalf: return cuda::tiled::DType::Float16;
    default: break;
  }
  throw std::invalid_argument(
      fmt::format("cuda attention: dtype {} is not supported", c10::toString(t)));
}

cuda::CudaPlan plan_of(const at::Tensor& q, const at::Tensor& v, const KernelCall& c) {
  return cuda::plan_cuda_attention(tiled_dtype(q.scalar_type()), q.size(0) * q.size(1),
                                   q.size(3), v.size(3), c.variant, c.fpa_backward,
                                   c.fp32_matmul);
}

// ---- the tiled kernels -----------------------------------------------------------------------

cuda::tiled::Problem tiled_problem(const at::Tensor& q, const at::Tensor& v, const KernelCall& c) {
  auto p = problem_sizes<cuda::tiled::Problem>(q, v, c);
  switch (c.variant) {
    case Variant::Softmax: p.mode = cuda::tiled::Mode::Softmax; break;
    case Variant::Fox: p.mode = cuda::tiled::Mode::Fox; break;
    case Variant::Fpa:
      p.mode = c.fpa_backward == FpaBackward::StraightThrough
                   ? cuda::tiled::Mode::FpaStraightThrough
                   : cuda::tiled::Mode::FpaExact;
      break;
  }
  p.dtype = tiled_dtype(q.scalar_type());
  p.tau = c.tau;
  p.tensor_cores = plan_of(q, v, c).tensor_cores;
  return p;
}

// The row log-sum-exp and the gate are in the accumulator type: double for double, else float.
at::ScalarType acc_type(const at::Tensor& q) {
  return q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

at::Tensor workspace(const at::Tensor& q, size_t bytes) {
  return at::empty({int64_t(bytes)}, q.options().dtype(at::kByte));
}

struct TiledKernels {
  using DeviceGuard = c10::cuda::CUDAGuard;

  static void check_backward(const KernelCall&) {}  // every variant and FPA mode

  static KernelForward forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& gate, const KernelCall& c) {
    const auto p = tiled_problem(q, v, c);
    auto out = at::empty(v.sizes(), v.options());
    auto lse = at::empty({p.batch, p.heads, p.n}, q.options().dtype(acc_type(q)));
    auto ws = workspace(q, cuda::tiled::forward_workspace_bytes(p));
    ok(cuda::tiled::forward(p, raw(q), raw(k), raw(v), raw(gate), raw(out), raw(lse), raw(ws),
                            stream()),
       "tiled forward");
    return {out, {lse}};
  }

  // Tile reductions, no atomics: the same inputs give the same bits. dgate comes back as
  // d log f for FoX.
  static KernelGrads backward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const at::Tensor& gate, const at::Tensor& out,
                              const std::vector<at::Tensor>& saved, const at::Tensor& dout,
                              const KernelCall& c) {
    const auto p = tiled_problem(q, v, c);
    auto dq = at::empty_like(q), dk = at::empty_like(k), dv = at::empty_like(v);
    at::Tensor dgate;
    if (gate.defined()) dgate = at::empty({p.batch, p.heads, p.n}, q.options().dtype(at::kDouble));
    auto ws = workspace(q, cuda::tiled::backward_workspace_bytes(p));
    ok(cuda::tiled::backward(p, raw(q), raw(k), raw(v), raw(gate), raw(out), raw(saved[0]),
                             raw(dout), raw(dq), raw(dk), raw(dv), ptr<double>(dgate), raw(ws),
                             stream()),
       "tiled backward");
    return {dq, dk, dv, dgate, /*dgate_is_log_gate=*/true};
  }
};

// ---- the one-thread-per-row kernels (fp32 / fp64; what the tiled ones do not cover) ----------

cuda::KernelProblem row_problem(const at::Tensor& q, const at::Tensor& v, const KernelCall& c) {
  auto p = problem_sizes<cuda::KernelProblem>(q, v, c);
  p.variant = static_cast<cuda::KernelVariant>(static_cast<int64_t>(c.variant));
  return p;
}

struct RowKernels {
  using DeviceGuard = c10::cuda::CUDAGuard;

  static void check_backward(const KernelCall& c) {
    check(!(c.variant == Variant::Fpa && c.fpa_backward == FpaBackward::StraightThrough),
          cuda::row_kernels_straight_through_refusal());
  }

  // Saves the row log-sum-exp and FoX's prefix sums (float64) for the backward.
  static KernelForward forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& gate, const KernelCall& c) {
    const auto p = row_problem(q, v, c);
    auto out = at::empty(v.sizes(), v.options());
    auto lse = at::empty({p.batch, p.heads, p.n}, q.options());
    auto prefix = at::empty({p.batch, p.heads, p.n}, q.options().dtype(at::kDouble));
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "cuda_attention_forward", [&] {
      ok(cuda::forward<scalar_t>(p, ptr<scalar_t>(q), ptr<scalar_t>(k), ptr<scalar_t>(v),
                                 ptr<scalar_t>(gate), ptr<double>(prefix), ptr<scalar_t>(out),
                                 ptr<scalar_t>(lse), stream()),
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
    const auto p = row_problem(q, v, c);
    auto dq = at::zeros_like(q), dk = at::zeros_like(k), dv = at::zeros_like(v);
    at::Tensor dgate;
    if (gate.defined()) dgate = at::zeros({p.batch, p.heads, p.n}, q.options().dtype(at::kDouble));
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "cuda_attention_backward", [&] {
      ok(cuda::backward<scalar_t>(p, ptr<scalar_t>(q), ptr<scalar_t>(k), ptr<scalar_t>(v),
                                  ptr<scalar_t>(gate), ptr<double>(prefix), ptr<scalar_t>(out),
                                  ptr<scalar_t>(lse), ptr<scalar_t>(dout), ptr<scalar_t>(dq),
                                  ptr<scalar_t>(dk), ptr<scalar_t>(dv), ptr<double>(dgate),
                                  stream()),
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
  const KernelCall call{opts.variant, opts.fpa_backward, opts.st_temperature, opts.scale, 0,
                        opts.fp32_matmul};
  const auto plan = plan_of(q, v, call);
  check(plan.refusal.empty(), plan.refusal);
  if (plan.compute_in_fp32)  // bf16 / fp16 on the row kernels; the gate is float32 already
    return cuda_attention(q.to(at::kFloat), k.to(at::kFloat), v.to(at::kFloat), gate, opts)
        .to(q.scalar_type());
  if (plan.kernel == cuda::CudaKernel::Tiled)
    return kernel_attention<TiledKernels>(q, k, v, gate, opts, /*tile=*/0);
  return kernel_attention<RowKernels>(q, k, v, gate, opts, /*tile=*/0);
}

}  // namespace fpa
