// The CUDA kernels against the CPU float64 reference. Skipped, with the reason, when this build
// has no CUDA LibTorch or the machine has no CUDA device (kernels/cuda/device-check.sh runs
// them on a GPU machine).
#include "test_fused_support.h"

#include <ATen/Context.h>
#include <gtest/gtest.h>

namespace fpa::testing {
namespace {

// Why the GPU tests cannot run here, or "" when they can.
std::string no_gpu_reason() {
  if (!impl_available(Impl::Cuda))
    return "this build has no CUDA LibTorch (impl 'cuda' not compiled in)";
  if (!at::hasCUDA()) return "no CUDA device on this machine";
  return "";
}

#define SKIP_WITHOUT_GPU() \
  if (const auto reason = no_gpu_reason(); !reason.empty()) GTEST_SKIP() << reason

// Output and gradients of the CUDA implementation, computed on the GPU, returned on the CPU.
Result run_cuda(const Inputs& in, AttentionOptions opts, at::ScalarType dtype) {
  auto leaf = [&](const at::Tensor& t) {
    return t.defined() ? t.to(at::kCUDA, dtype).detach().requires_grad_(true) : at::Tensor();
  };
  auto q = leaf(in.q), k = leaf(in.k), v = leaf(in.v), gate = leaf(in.gate);
  opts.impl = Impl::Cuda;
  auto out = attention(q, k, v, gate, opts);
  std::vector<at::Tensor> inputs{q, k, v};
  if (gate.defined()) inputs.push_back(gate);
  auto grads = torch::autograd::grad({(out * in.dout.to(at::kCUDA, dtype)).sum()}, inputs);
  Result r;
  r.out = out.detach().cpu().to(at::kDouble);
  r.dq = grads[0].cpu().to(at::kDouble);
  r.dk = grads[1].cpu().to(at::kDouble);
  r.dv = grads[2].cpu().to(at::kDouble);
  if (gate.defined()) r.dgate = grads[3].cpu().to(at::kDouble);
  return r;
}

TEST(FusedCuda, MatchesReference) {
  SKIP_WITHOUT_GPU();
  const std::vector<Shape> shapes{{1, 1, 1, 16}, {2, 3, 5, 1}, {1, 2, 100, 64}, {2, 2, 130, 16},
                                  {1, 1, 300, 128}};
  uint64_t seed = 1;
  for (Variant variant : {Variant::Softmax, Variant::Fox, Variant::Fpa}) {
    for (Field field : {Field::Random, Field::Integer, Field::Flat, Field::Increasing}) {
      for (const Shape& shape : shapes) {
        const Inputs in = make_inputs(shape, variant, field, seed++);
        const AttentionOptions ref{variant, Impl::Reference, FpaBackward::Exact, 1.0, 0.0};
        const Result want = run(in, ref, at::kDouble);
        for (auto dtype : {at::kDouble, at::kFloat}) {
          const Errors e = compare(run_cuda(in, ref, dtype), want, dtype);
          EXPECT_LE(e.worst(), tolerance(dtype))
              << to_string(variant) << " field " << name(field) << " shape (" << shape.batch
              << "," << shape.heads << "," << shape.n << "," << shape.d << ") "
              << c10::toString(dtype) << ": " << e.str();
        }
      }
    }
  }
}

TEST(FusedCuda, StraightThroughBackwardIsRefusedWithAClearError) {
  SKIP_WITHOUT_GPU();
  const Inputs in = make_inputs({1, 1, 8, 4}, Variant::Fpa, Field::Random, 3);
  const AttentionOptions st{Variant::Fpa, Impl::Reference, FpaBackward::StraightThrough, 1.0, 0.0};
  EXPECT_THROW(run_cuda(in, st, at::kFloat), std::exception);
}

// N = 0: an empty output and empty gradients, as on the CPU (the kernels used to refuse the
// missing gate pointer of an empty FoX or FPA gate).
TEST(FusedCuda, EmptySequenceGivesEmptyOutputAndGradients) {
  SKIP_WITHOUT_GPU();
  for (Variant variant : {Variant::Softmax, Variant::Fox, Variant::Fpa}) {
    const Inputs in = make_inputs({2, 3, 0, 4}, variant, Field::Random, 1);
    const AttentionOptions o{variant, Impl::Reference, FpaBackward::Exact, 1.0, 0.0};
    const Result r = run_cuda(in, o, at::kFloat);
    EXPECT_EQ(r.out.sizes(), in.v.sizes()) << to_string(variant);
    EXPECT_EQ(r.dq.sizes(), in.q.sizes()) << to_string(variant);
    if (in.gate.defined()) EXPECT_EQ(r.dgate.sizes(), in.gate.sizes()) << to_string(variant);
  }
}

}  // namespace
}  // namespace fpa::testing
