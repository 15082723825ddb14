// The device-independent parts of the kernels' autograd function (kernels/kernel_autograd.h).
#include "kernels/kernel_autograd.h"

#include "kernels/reference.h"

namespace fpa {

at::Tensor gate_argument(const at::Tensor& q, const at::Tensor& gate, Variant variant) {
  return variant == Variant::Softmax ? at::empty({0}, q.options()) : gate;
}

std::vector<at::Tensor> double_backward_grads(const std::vector<at::Tensor>& saved,
                                              const KernelCall& call, const at::Tensor& dout) {
  const AttentionOptions ref{call.variant, Impl::Reference, call.fpa_backward, call.tau,
                             call.scale};
  return reference_attention_grads(saved[0], saved[1], saved[2],
                                   call.variant == Variant::Softmax ? at::Tensor() : saved[3],
                                   ref, dout);
}

at::Tensor gate_gradient(const KernelGrads& g, Variant variant, at::ScalarType dtype) {
  auto d = g.dgate;
  if (variant == Variant::Fox && !g.dgate_is_log_gate) d = d.flip(-1).cumsum(-1).flip(-1);
  return d.to(dtype);
}

}  // namespace fpa
