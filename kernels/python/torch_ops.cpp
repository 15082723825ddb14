// PyTorch custom operators: fpa::attention as torch.ops.fpa.attention (TorchScript-compatible).
// Argument names are the command line's in snake case (fpa_backward, st_temperature).
// fp32_matmul ("tf32", the default, or "exact"): float32 on the GPU on TF32 tensor cores or with
// exact fp32 products (kernels/options.h); the CPU ignores it.
//
//   torch.ops.load_library("build/lib/libfpa_torch_ops.so")
//   out = torch.ops.fpa.attention(q, k, v, gate, "fpa", "auto", "exact")
//
// Registered as CompositeImplicitAutograd: the kernel runs with autograd still recording, so
// the gradients are those of fpa::attention itself (the reference's ATen graph, or the fused
// and CUDA kernels' own autograd functions). Only APIs shared by LibTorch 1.13 and 2.x are used.
#include "kernels/attention.h"
#include "kernels/impl_choice.h"

#include <torch/library.h>

#include <string>

namespace {

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const c10::optional<at::Tensor>& gate, std::string variant, std::string impl,
                     std::string fpa_backward, double st_temperature, double scale,
                     std::string fp32_matmul) {
  fpa::AttentionOptions o;
  o.variant = fpa::parse_variant(variant);
  o.impl = fpa::resolve_impl(impl, q.device().type());  // "auto": the device's kernels
  o.fpa_backward = fpa::parse_fpa_backward(fpa_backward);
  o.st_temperature = st_temperature;
  o.scale = scale;
  o.fp32_matmul = fpa::parse_fp32_matmul(fp32_matmul);
  const at::Tensor g = gate.has_value() ? *gate : at::Tensor();
  return fpa::attention(q, k, v, g, o);
}

at::Tensor fpa_bias(const at::Tensor& field, std::string fpa_backward, double st_temperature) {
  return fpa::fpa_bias(field, fpa::parse_fpa_backward(fpa_backward), st_temperature);
}

at::Tensor fox_bias(const at::Tensor& log_forget) { return fpa::fox_bias(log_forget); }

at::Tensor apply_rope(const at::Tensor& x, int64_t offset, double base) {
  return fpa::apply_rope(x, offset, base);
}

}  // namespace

TORCH_LIBRARY(fpa, m) {
  m.def("attention(Tensor q, Tensor k, Tensor v, Tensor? gate, str variant=\"softmax\", "
        "str impl=\"auto\", str fpa_backward=\"exact\", float st_temperature=1.0, float scale=0.0, "
        "str fp32_matmul=\"tf32\") -> Tensor");
  m.def("fpa_bias(Tensor field, str fpa_backward=\"exact\", float st_temperature=1.0) -> Tensor");
  m.def("fox_bias(Tensor log_forget) -> Tensor");
  m.def("apply_rope(Tensor x, int offset=0, float base=10000.0) -> Tensor");
}

TORCH_LIBRARY_IMPL(fpa, CompositeImplicitAutograd, m) {
  m.impl("attention", TORCH_FN(attention));
  m.impl("fpa_bias", TORCH_FN(fpa_bias));
  m.impl("fox_bias", TORCH_FN(fox_bias));
  m.impl("apply_rope", TORCH_FN(apply_rope));
}
