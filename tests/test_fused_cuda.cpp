// fpa::attention with impl 'cuda' on a GPU (the binding, kernels/cuda/cuda_attention.cpp, and
// the kernels cuda_dispatch.h picks) against the CPU float64 reference: outputs and every
// gradient for every variant and FPA mode in float64, float32, bfloat16 and float16, the tiled
// kernels (with and without tensor cores) and the one-thread-per-row kernels past their head
// dimensions, bitwise repeatability of the tiled backward, and the refusals. Skipped, with the
// reason, when this build has no CUDA LibTorch or the machine has no CUDA device
// (kernels/cuda/device-check.sh runs it on a GPU machine). Not run on a GPU yet: the bfloat16 /
// float16 tolerances are those of the tiled kernels' own tests (tiled_test_support.h).
#include "tiled_test_support.h"

#include "kernels/cuda/cuda_dispatch.h"

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

bool is_half(at::ScalarType t) { return t == at::kBFloat16 || t == at::kHalf; }

// Output and gradients of the CUDA implementation, computed on the GPU, returned on the CPU.
Result run_cuda(const Inputs& in, AttentionOptions opts, at::ScalarType dtype) {
  const auto gate_dtype = is_half(dtype) ? at::kFloat : dtype;
  auto leaf = [&](const at::Tensor& t, at::ScalarType type) {
    return t.defined() ? t.to(at::kCUDA, type).detach().requires_grad_(true) : at::Tensor();
  };
  auto q = leaf(in.q, dtype), k = leaf(in.k, dtype), v = leaf(in.v, dtype),
       gate = leaf(in.gate, gate_dtype);
  opts.impl = Impl::Cuda;
  auto out = attention(q, k, v, gate, opts);
  EXPECT_EQ(out.scalar_type(), dtype);
  std::vector<at::Tensor> inputs{q, k, v};
  if (gate.defined()) inputs.push_back(gate);
  auto grads = torch::autograd::grad({(out * in.dout.to(at::kCUDA, dtype)).sum()}, inputs);
  for (size_t i = 0; i < grads.size(); ++i)
    EXPECT_EQ(grads[i].scalar_type(), i < 3 ? dtype : gate_dtype) << "gradient " << i;
  Result r;
  r.out = out.detach().cpu().to(at::kDouble);
  r.dq = grads[0].cpu().to(at::kDouble);
  r.dk = grads[1].cpu().to(at::kDouble);
  r.dv = grads[2].cpu().to(at::kDouble);
  if (gate.defined()) r.dgate = grads[3].cpu().to(at::kDouble);
  return r;
}

double tolerance_of(at::ScalarType t) {
  if (t == at::kBFloat16) return half_precision_tolerance(cuda::tiled::DType::BFloat16);
  if (t == at::kHalf) return half_precision_tolerance(cuda::tiled::DType::Float16);
  return tolerance(t);
}

struct Mode2 {
  Variant variant;
  FpaBackward backward;
};
const Mode2 kModes[] = {{Variant::Softmax, FpaBackward::Exact},
                        {Variant::Fox, FpaBackward::Exact},
                        {Variant::Fpa, FpaBackward::Exact},
                        {Variant::Fpa, FpaBackward::StraightThrough}};

std::string what(const Mode2& m, Field f, const Shape& s, at::ScalarType t) {
  return to_string(m.variant) + (m.backward == FpaBackward::StraightThrough ? "/st" : "") +
         " field " + name(f) + " shape (" + std::to_string(s.batch) + "," +
         std::to_string(s.heads) + "," + std::to_string(s.n) + "," + std::to_string(s.d) + ") " +
         c10::toString(t);
}

// Compares every dtype of `dtypes` at every shape with the float64 reference on the same
// (rounded) inputs. float32 runs with exact products unless fp32_matmul says Tf32 (tolerance
// tf32_tolerance()).
void expect_matches_reference(const std::vector<Shape>& shapes,
                              const std::vector<at::ScalarType>& dtypes,
                              const std::vector<Field>& fields, bool straight_through = true,
                              Fp32Matmul fp32_matmul = Fp32Matmul::Exact) {
  uint64_t seed = 1;
  for (const Mode2& m : kModes) {
    if (!straight_through && m.backward == FpaBackward::StraightThrough) continue;
    for (Field field : fields) {
      for (const Shape& shape : shapes) {
        const Inputs in = make_inputs(shape, m.variant, field, seed++);
        AttentionOptions o{m.variant, Impl::Reference, m.backward, 0.7, 0.0};
        o.fp32_matmul = fp32_matmul;
        const bool tf32 = fp32_matmul == Fp32Matmul::Tf32;
        for (auto dtype : dtypes) {
          const Inputs r = rounded(in, dtype);
          const Errors e = compare(run_cuda(r, o, dtype), run(r, o, at::kDouble), dtype);
          const double tol = tf32 && dtype == at::kFloat ? tf32_tolerance() : tolerance_of(dtype);
          EXPECT_LE(e.worst(), tol) << what(m, field, shape, dtype) << (tf32 ? " tf32" : "")
                                    << ": " << e.str();
        }
      }
    }
  }
}

// The tiled kernels: D, Dv <= 128 (64 in float64), tensor cores for bf16 / fp16 (and TF32 for
// float32) at multiples of 16 (d 16, 64, 128), scalar tiles elsewhere (d 1, 40); n across
// several 64-key tiles.
TEST(FusedCuda, TiledKernelsMatchReference) {
  SKIP_WITHOUT_GPU();
  expect_matches_reference({{1, 1, 1, 16}, {2, 3, 5, 1}, {1, 2, 100, 64}, {2, 2, 130, 16},
                            {1, 1, 200, 40}},
                           {at::kDouble, at::kFloat, at::kBFloat16, at::kHalf},
                           {Field::Random, Field::Integer, Field::Flat, Field::Steep});
  expect_matches_reference({{1, 1, 300, 128}}, {at::kFloat, at::kBFloat16, at::kHalf},
                           {Field::Random, Field::Integer});
  // float32 on TF32 tensor cores (fp32_matmul's default; D multiples of 16; n > 1, since at
  // n = 1 dq and dk are zero in exact arithmetic and TF32 leaves noise: test_tiled_emulated).
  expect_matches_reference({{1, 2, 100, 64}, {2, 2, 130, 16}, {1, 1, 300, 128}}, {at::kFloat},
                           {Field::Random, Field::Integer, Field::Flat, Field::Steep}, true,
                           Fp32Matmul::Tf32);
}

// Past the tiled kernels: the one-thread-per-row kernels (fp32 / fp64; bf16 / fp16 computed in
// fp32), exact modes only. float64 at D = 256 used to fail at launch (263 KB of shared memory).
TEST(FusedCuda, RowKernelsCoverTheOtherHeadDimensions) {
  SKIP_WITHOUT_GPU();
  expect_matches_reference({{1, 1, 70, 128}}, {at::kDouble}, {Field::Integer}, false);
  expect_matches_reference({{1, 2, 70, 160}, {1, 1, 130, 256}},
                           {at::kDouble, at::kFloat, at::kBFloat16}, {Field::Integer}, false);
}

TEST(FusedCuda, TiledBackwardIsBitwiseRepeatable) {
  SKIP_WITHOUT_GPU();
  for (const Mode2& m : kModes) {
    const Inputs in = make_inputs({2, 2, 333, 64}, m.variant, Field::Integer, 5);
    const AttentionOptions o{m.variant, Impl::Reference, m.backward, 0.7, 0.0};
    for (auto dtype : {at::kFloat, at::kBFloat16, at::kDouble}) {
      const Result a = run_cuda(in, o, dtype), b = run_cuda(in, o, dtype);
      const std::string w = what(m, Field::Integer, {2, 2, 333, 64}, dtype);
      EXPECT_TRUE(at::equal(a.out, b.out)) << w;
      EXPECT_TRUE(at::equal(a.dq, b.dq)) << w;
      EXPECT_TRUE(at::equal(a.dk, b.dk)) << w;
      EXPECT_TRUE(at::equal(a.dv, b.dv)) << w;
      if (a.dgate.defined()) EXPECT_TRUE(at::equal(a.dgate, b.dgate)) << w;
    }
  }
}

TEST(FusedCuda, StraightThroughBackwardIsRefusedOnlyPastTheTiledKernels) {
  SKIP_WITHOUT_GPU();
  const AttentionOptions st{Variant::Fpa, Impl::Reference, FpaBackward::StraightThrough, 1.0, 0.0};
  const Inputs small = make_inputs({1, 1, 8, 64}, Variant::Fpa, Field::Random, 3);
  EXPECT_NO_THROW(run_cuda(small, st, at::kFloat));
  const Inputs wide = make_inputs({1, 1, 8, 160}, Variant::Fpa, Field::Random, 3);
  try {
    run_cuda(wide, st, at::kFloat);
    ADD_FAILURE() << "straight-through backward at D = 160 ran";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("straight-through backward on the GPU needs"),
              std::string::npos)
        << e.what();
  }
}

// N = 0: an empty output and empty gradients, as on the CPU.
TEST(FusedCuda, EmptySequenceGivesEmptyOutputAndGradients) {
  SKIP_WITHOUT_GPU();
  for (auto dtype : {at::kFloat, at::kBFloat16})
    for (Variant variant : {Variant::Softmax, Variant::Fox, Variant::Fpa}) {
      const Inputs in = make_inputs({2, 3, 0, 16}, variant, Field::Random, 1);
      const AttentionOptions o{variant, Impl::Reference, FpaBackward::Exact, 1.0, 0.0};
      const Result r = run_cuda(in, o, dtype);
      EXPECT_EQ(r.out.sizes(), in.v.sizes()) << to_string(variant);
      EXPECT_EQ(r.dq.sizes(), in.q.sizes()) << to_string(variant);
      if (in.gate.defined()) EXPECT_EQ(r.dgate.sizes(), in.gate.sizes()) << to_string(variant);
    }
}

}  // namespace
}  // namespace fpa::testing
