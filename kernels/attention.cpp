// The single entry point: validates shapes, then dispatches to an implementation.
#include "kernels/attention.h"

#include "kernels/checks.h"
#include "kernels/cpu/fused_cpu.h"
#include "kernels/reference.h"
#ifdef FPA_WITH_CUDA
#include "kernels/cuda/cuda_attention.h"
#endif

#include <fmt/format.h>

namespace fpa {
namespace {

bool is_half(at::ScalarType t) { return t == at::kBFloat16 || t == at::kHalf; }

void validate(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
              const at::Tensor& gate, const AttentionOptions& opts) {
  check(q.defined() && k.defined() && v.defined(), "attention: q, k and v must be defined");
  check(q.dim() == 4, fmt::format("attention: q must be (B, H, N, D), got {} dims", q.dim()));
  check(k.sizes() == q.sizes(), "attention: k must have the shape of q");
  check(v.dim() == 4 && v.size(0) == q.size(0) && v.size(1) == q.size(1) &&
            v.size(2) == q.size(2),
        "attention: v must be (B, H, N, Dv) with B, H, N of q");
  check(q.scalar_type() == at::kFloat || q.scalar_type() == at::kDouble ||
            is_half(q.scalar_type()),
        "attention: dtype must be float32, float64, bfloat16 or float16");
  check(k.scalar_type() == q.scalar_type() && v.scalar_type() == q.scalar_type(),
        "attention: q, k, v must share a dtype");
  if (opts.variant != Variant::Softmax) {
    check(gate.defined(), fmt::format("attention: variant {} needs a gate tensor (B, H, N)",
                                      to_string(opts.variant)));
    check(gate.dim() == 3 && gate.size(0) == q.size(0) && gate.size(1) == q.size(1) &&
              gate.size(2) == q.size(2),
          "attention: gate must be (B, H, N)");
    // A half-precision field would round levels together (ties that change which keys are
    // alive), so it is refused rather than silently upcast: the caller makes it in float32.
    if (is_half(q.scalar_type()))
      check(gate.scalar_type() == at::kFloat,
            "attention: with bfloat16/float16 q, k, v the gate must be float32");
    else
      check(gate.scalar_type() == q.scalar_type(), "attention: gate must have the dtype of q");
  }
  check_scale_and_temperature(opts.scale, opts.st_temperature, "attention");
}

at::Tensor dispatch(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                    const at::Tensor& gate, const AttentionOptions& opts) {
  switch (opts.impl) {
    case Impl::Reference:
      return reference_attention(q, k, v, gate, opts);
    case Impl::Fused:
      check(!q.is_cuda(), "attention: impl 'fused' runs on CPU tensors; use 'cuda' on a GPU");
      return fused_attention_cpu(q, k, v, gate, opts);
    case Impl::Cuda:
#ifdef FPA_WITH_CUDA
      return cuda_attention(q, k, v, gate, opts);
#else
      throw std::invalid_argument(
          "attention: impl 'cuda' is not in this build (LibTorch without CUDA)");
#endif
  }
  throw std::invalid_argument("attention: unknown implementation");
}

}  // namespace

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& gate, const AttentionOptions& opts) {
  validate(q, k, v, gate, opts);
  // bfloat16/float16 outside the CUDA kernels: the reference and the CPU kernels compute in
  // float32 (they have no half arithmetic). The casts are differentiable, so the gradients of
  // q, k, v come back in their dtypes, and fp32/fp64 calls are untouched.
  if (is_half(q.scalar_type()) && opts.impl != Impl::Cuda)
    return dispatch(q.to(at::kFloat), k.to(at::kFloat), v.to(at::kFloat), gate, opts)
        .to(q.scalar_type());
  return dispatch(q, k, v, gate, opts);
}

bool impl_available(Impl i) {
#ifdef FPA_WITH_CUDA
  (void)i;
  return true;
#else
  return i != Impl::Cuda;
#endif
}

}  // namespace fpa
