// The fused CPU kernels behind the kernels' autograd function (kernels/kernel_autograd.h): dtype
// dispatch, the row log-sum-exp saved for the backward, and the reduction of the backward's
// per-chunk slots.
#include "kernels/cpu/fused_cpu.h"

#include "kernels/checks.h"
#include "kernels/cpu/fused_gemm.h"
#include "kernels/cpu/fused_kernels.h"
#include "kernels/kernel_autograd.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

namespace fpa {
namespace {

fused::Problem make_problem(const at::Tensor& q, const at::Tensor& v, const KernelCall& c) {
  auto p = problem_sizes<fused::Problem>(q, v, c);
  p.variant = c.variant;
  p.fpa_backward = c.fpa_backward;
  p.tau = c.tau;
  p.tile = c.tile;
  return p;
}

template <class T>
T* ptr_or_null(const at::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

// The fused CPU kernels in the kernels' autograd function (kernels/kernel_autograd.h).
struct CpuKernels {
  using DeviceGuard = NoDeviceGuard;

  static void check_backward(const KernelCall&) {}  // every variant and backward mode

  static KernelForward forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& gate, const KernelCall& c) {
    const auto p = make_problem(q, v, c);
    auto out = at::empty(v.sizes(), v.options());
    auto lse = at::empty({p.batch, p.heads, p.n}, q.options());
    if (p.n > 0) {
      AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "fused_attention_forward", [&] {
        fused::forward<scalar_t>(p, {q.data_ptr<scalar_t>(), k.data_ptr<scalar_t>(),
                                     v.data_ptr<scalar_t>(), ptr_or_null<scalar_t>(gate),
                                     out.data_ptr<scalar_t>(), lse.data_ptr<scalar_t>()});
      });
    }
    return {out, {lse}};
  }

  // dK, dV and the gate gradient come per chunk of query blocks (`slots`), summed here in a
  // fixed order.
  static KernelGrads backward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const at::Tensor& gate, const at::Tensor& out,
                              const std::vector<at::Tensor>& saved, const at::Tensor& dout,
                              const KernelCall& c) {
    const auto& lse = saved[0];
    const auto p = make_problem(q, v, c);
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
    if (dgate.defined()) dgate = reduce(dgate);
    return {dq, dk, dv, dgate};
  }
};

}  // namespace

at::Tensor fused_attention_cpu(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& gate, const AttentionOptions& opts,
                               int64_t tile) {
  check(tile >= 1 && tile <= 256, "fused attention: tile size must be in [1, 256]");
  check(!q.is_cuda(), "fused attention: CPU tensors only");
  return kernel_attention<CpuKernels>(q, k, v, gate, opts, tile);
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
