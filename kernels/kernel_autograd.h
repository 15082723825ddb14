// The one autograd function of the attention kernels: the fused CPU kernels (cpu/fused_cpu.cpp)
// and the CUDA kernels (cuda/cuda_attention.cpp) each plug their forward and backward into it.
// Plain C++ over ATen and LibTorch's autograd (no CUDA header), so a CPU-only build compiles it.
//
// What it does for every device: contiguous copies of the inputs, the tensors saved for the
// backward (the inputs as given, the output, and what the kernels add, e.g. the row log-sum-exp),
// the double backward (a backward with create_graph differentiates through the reference's ops,
// reference_attention_grads, with its n x n memory: the kernels give first derivatives only),
// the gradient of the incoming output gradient when it is undefined (zeros), and FoX's gate
// gradient (kernels that return dLoss/dF get d log f_t = sum_{s >= t} dF_s taken here) cast to
// the gate's dtype (float32 for bfloat16/float16 inputs).
//
// A device's kernels are a type `Kernels` with
//   using DeviceGuard = ...;  // constructed from the inputs' at::Device for the call's duration
//   static void check_backward(const KernelCall&);  // throws when the backward cannot run
//   static KernelForward forward(q, k, v, gate, const KernelCall&);
//   static KernelGrads backward(q, k, v, gate, out, saved, dout, const KernelCall&);
// (q, k, v, gate contiguous; gate undefined for softmax; saved = KernelForward::saved).
#pragma once

#include "kernels/options.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace fpa {

// What the kernels are given besides the tensors.
struct KernelCall {
  Variant variant;
  FpaBackward fpa_backward;
  double tau;    // tau_s of the straight-through soft minimum
  double scale;  // as given: 0 means 1/sqrt(D)
  int64_t tile;  // the CPU kernels' block size (the CUDA kernels ignore it)
  Fp32Matmul fp32_matmul = Fp32Matmul::Tf32;  // float32 on the GPU (the CPU kernels ignore it)
};

struct KernelForward {
  at::Tensor out;
  std::vector<at::Tensor> saved;  // what the backward needs besides the inputs and out
};

// dgate: float64; for FoX dLoss/dF (the autograd function turns it into d log f) unless
// dgate_is_log_gate (the tiled CUDA kernels take the reverse cumulative sum themselves);
// undefined for softmax.
struct KernelGrads {
  at::Tensor dq, dk, dv, dgate;
  bool dgate_is_log_gate = false;
};

// A device's problem description (fused::Problem, cuda::KernelProblem) with the sizes of q
// (B, H, N, D) and v (.., Dv) and the logit scale resolved (0 means 1/sqrt(D)).
template <class Problem>
Problem problem_sizes(const at::Tensor& q, const at::Tensor& v, const KernelCall& c) {
  Problem p;
  p.batch = q.size(0);
  p.heads = q.size(1);
  p.n = q.size(2);
  p.d = q.size(3);
  p.dv = v.size(3);
  p.scale = c.scale > 0 ? c.scale : 1.0 / std::sqrt(double(p.d));
  return p;
}

// For devices that need no guard (the CPU).
struct NoDeviceGuard {
  explicit NoDeviceGuard(const at::Device&) {}
};

// An undefined tensor cannot pass through an autograd function's arguments in every LibTorch
// version; softmax gets an empty placeholder that the kernels ignore.
at::Tensor gate_argument(const at::Tensor& q, const at::Tensor& gate, Variant variant);

// The double backward: the gradients of q, k, v and gate (the inputs as saved) through the
// reference's differentiable ops.
std::vector<at::Tensor> double_backward_grads(const std::vector<at::Tensor>& saved,
                                              const KernelCall& call, const at::Tensor& dout);

// FoX: d log f from dF (reverse cumulative sum) unless the kernels returned d log f already;
// then the gate's dtype.
at::Tensor gate_gradient(const KernelGrads& g, Variant variant, at::ScalarType dtype);

template <class Kernels>
struct KernelAttention : public torch::autograd::Function<KernelAttention<Kernels>> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& q_in,
                            const at::Tensor& k_in, const at::Tensor& v_in,
                            const at::Tensor& gate_in, int64_t variant, int64_t fpa_backward,
                            double tau, double scale, int64_t tile, int64_t fp32_matmul) {
    const typename Kernels::DeviceGuard guard(q_in.device());
    auto q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
    const KernelCall call{static_cast<Variant>(variant), static_cast<FpaBackward>(fpa_backward),
                          tau, scale, tile, static_cast<Fp32Matmul>(fp32_matmul)};
    const at::Tensor gate = call.variant == Variant::Softmax ? at::Tensor() : gate_in.contiguous();
    auto f = Kernels::forward(q, k, v, gate, call);
    // The inputs as given, not their contiguous copies: a double backward differentiates
    // through them (backward makes them contiguous again, free when they already are).
    std::vector<at::Tensor> save{q_in, k_in, v_in, gate_in, f.out};
    save.insert(save.end(), f.saved.begin(), f.saved.end());
    ctx->save_for_backward(save);
    ctx->saved_data["variant"] = variant;
    ctx->saved_data["fpa_backward"] = fpa_backward;
    ctx->saved_data["tau"] = tau;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["tile"] = tile;
    ctx->saved_data["fp32_matmul"] = fp32_matmul;
    return f.out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const KernelCall call{static_cast<Variant>(ctx->saved_data["variant"].toInt()),
                          static_cast<FpaBackward>(ctx->saved_data["fpa_backward"].toInt()),
                          ctx->saved_data["tau"].toDouble(), ctx->saved_data["scale"].toDouble(),
                          ctx->saved_data["tile"].toInt(),
                          static_cast<Fp32Matmul>(ctx->saved_data["fp32_matmul"].toInt())};
    Kernels::check_backward(call);
    const typename Kernels::DeviceGuard guard(s[0].device());
    const at::Tensor none;
    if (at::GradMode::is_enabled()) {
      // create_graph=True (double backward): the kernels give first derivatives only.
      const auto g = double_backward_grads(s, call, grads[0]);
      return {g[0], g[1], g[2], g[3], none, none, none, none, none, none};
    }
    const auto q = s[0].contiguous(), k = s[1].contiguous(), v = s[2].contiguous();
    const auto gate = call.variant == Variant::Softmax ? at::Tensor() : s[3].contiguous();
    const auto& out = s[4];
    const std::vector<at::Tensor> saved(s.begin() + 5, s.end());
    auto dout = grads[0].defined() ? grads[0].contiguous() : at::zeros_like(out);
    auto g = Kernels::backward(q, k, v, gate, out, saved, dout, call);
    if (g.dgate.defined()) g.dgate = gate_gradient(g, call.variant, s[3].scalar_type());
    return {g.dq, g.dk, g.dv, g.dgate, none, none, none, none, none, none};
  }
};

// fpa::attention's contract for one device's kernels (the caller has checked the tensors).
template <class Kernels>
at::Tensor kernel_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& gate, const AttentionOptions& opts, int64_t tile) {
  return KernelAttention<Kernels>::apply(q, k, v, gate_argument(q, gate, opts.variant),
                                         static_cast<int64_t>(opts.variant),
                                         static_cast<int64_t>(opts.fpa_backward),
                                         opts.st_temperature, opts.scale, tile,
                                         static_cast<int64_t>(opts.fp32_matmul));
}

}  // namespace fpa
