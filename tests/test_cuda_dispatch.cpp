// The choice of CUDA kernel for impl 'cuda' (kernels/cuda/cuda_dispatch.h), on the CPU: which
// kernel runs for each dtype, head dimension and mode, where tensor cores are used, and the
// one-line refusals. The GPU tests (test_fused_cuda) run the same calls on a device.
#include "kernels/cuda/cuda_dispatch.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace fpa::cuda {
namespace {

using tiled::DType;

CudaPlan plan(DType t, int64_t d, int64_t dv = -1, Variant v = Variant::Fpa,
              FpaBackward b = FpaBackward::Exact, int64_t bh = 8) {
  return plan_cuda_attention(t, bh, d, dv < 0 ? d : dv, v, b);
}

TEST(CudaDispatch, HalfPrecisionRunsTiledOnTensorCoresAtMultiplesOf16) {
  for (DType t : {DType::BFloat16, DType::Float16}) {
    for (int64_t d : {16, 64, 128}) {
      const auto p = plan(t, d);
      EXPECT_EQ(p.kernel, CudaKernel::Tiled) << d;
      EXPECT_TRUE(p.tensor_cores) << d;
      EXPECT_FALSE(p.compute_in_fp32) << d;
    }
    // Not multiples of 16: the tiled kernels' scalar tiles, still fp32 accumulation.
    for (auto [d, dv] : {std::pair<int64_t, int64_t>{1, 1}, {40, 40}, {64, 24}, {100, 128}}) {
      const auto p = plan(t, d, dv);
      EXPECT_EQ(p.kernel, CudaKernel::Tiled) << d << " " << dv;
      EXPECT_FALSE(p.tensor_cores) << d << " " << dv;
    }
  }
}

// float32: TF32 tensor cores by default (D, Dv multiples of 16), exact fp32 on request
// (fp32_matmul "exact") and at other head dimensions; float64 never on tensor cores.
TEST(CudaDispatch, Float32RunsOnTf32TensorCoresByDefaultAndExactOnRequest) {
  for (int64_t d : {16, 64, 128}) {
    const auto tf32 = plan(DType::Float32, d);  // the default
    EXPECT_EQ(tf32.kernel, CudaKernel::Tiled) << d;
    EXPECT_TRUE(tf32.tensor_cores) << d;
    EXPECT_FALSE(tf32.compute_in_fp32) << d;
    const auto exact = plan_cuda_attention(DType::Float32, 8, d, d, Variant::Fpa,
                                           FpaBackward::Exact, Fp32Matmul::Exact);
    EXPECT_EQ(exact.kernel, CudaKernel::Tiled) << d;
    EXPECT_FALSE(exact.tensor_cores) << d;
    EXPECT_TRUE(plan_cuda_attention(DType::Float32, 8, d, d, Variant::Fpa, FpaBackward::Exact,
                                    Fp32Matmul::Tf32)
                    .tensor_cores)
        << d;
  }
  // Not multiples of 16: the scalar tiles, exact fp32, whatever the option.
  for (auto [d, dv] : {std::pair<int64_t, int64_t>{1, 1}, {40, 40}, {64, 24}, {100, 128}})
    for (Fp32Matmul m : {Fp32Matmul::Tf32, Fp32Matmul::Exact}) {
      const auto p =
          plan_cuda_attention(DType::Float32, 8, d, dv, Variant::Fox, FpaBackward::Exact, m);
      EXPECT_EQ(p.kernel, CudaKernel::Tiled) << d << " " << dv;
      EXPECT_FALSE(p.tensor_cores) << d << " " << dv;
    }
  // The option is for float32 only: bf16 / fp16 stay on tensor cores, float64 off them.
  for (Fp32Matmul m : {Fp32Matmul::Tf32, Fp32Matmul::Exact}) {
    for (DType t : {DType::BFloat16, DType::Float16})
      EXPECT_TRUE(
          plan_cuda_attention(t, 8, 64, 64, Variant::Fpa, FpaBackward::Exact, m).tensor_cores);
    EXPECT_FALSE(plan_cuda_attention(DType::Float64, 8, 64, 64, Variant::Fpa, FpaBackward::Exact,
                                     m)
                     .tensor_cores);
  }
}

TEST(CudaDispatch, Float64RunsTiledWithoutTensorCoresUpTo64) {
  EXPECT_EQ(plan(DType::Float64, 64).kernel, CudaKernel::Tiled);
  EXPECT_FALSE(plan(DType::Float64, 64).tensor_cores);
  EXPECT_EQ(plan(DType::Float64, 64, 65).kernel, CudaKernel::RowPerThread);
  // fp64 at D = 128: the tiled forward tile would need ~234 KB of shared memory.
  EXPECT_EQ(plan(DType::Float64, 128).kernel, CudaKernel::RowPerThread);
}

// The option's names (command lines, torch.ops.fpa.attention's fp32_matmul) and its default.
TEST(CudaDispatch, Fp32MatmulNamesAndDefault) {
  EXPECT_EQ(AttentionOptions{}.fp32_matmul, Fp32Matmul::Tf32);
  for (Fp32Matmul m : {Fp32Matmul::Tf32, Fp32Matmul::Exact})
    EXPECT_EQ(parse_fp32_matmul(to_string(m)), m);
  EXPECT_EQ(to_string(Fp32Matmul::Tf32), "tf32");
  EXPECT_EQ(to_string(Fp32Matmul::Exact), "exact");
  EXPECT_THROW(parse_fp32_matmul("fp32"), std::invalid_argument);
}

TEST(CudaDispatch, HeadDimensionsPast128RunOnTheRowKernels) {
  for (DType t : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16}) {
    for (auto [d, dv] : {std::pair<int64_t, int64_t>{129, 64}, {64, 129}, {256, 256}}) {
      const auto p = plan(t, d, dv);
      EXPECT_EQ(p.kernel, CudaKernel::RowPerThread) << d << " " << dv;
      EXPECT_TRUE(p.refusal.empty()) << p.refusal;
      const bool half = t == DType::BFloat16 || t == DType::Float16;
      EXPECT_EQ(p.compute_in_fp32, half) << d << " " << dv;  // the row kernels: float, double
      EXPECT_FALSE(p.tensor_cores);
    }
  }
}

// Every mode runs forward everywhere; the backward is refused only for FPA's straight-through
// mode on the row kernels, with the limits in the message.
TEST(CudaDispatch, StraightThroughBackwardIsRefusedOnlyOnTheRowKernels) {
  for (Variant v : {Variant::Softmax, Variant::Fox, Variant::Fpa})
    for (FpaBackward b : {FpaBackward::Exact, FpaBackward::StraightThrough}) {
      EXPECT_TRUE(plan(DType::BFloat16, 64, 64, v, b).backward_refusal.empty());
      EXPECT_TRUE(plan(DType::Float64, 64, 64, v, b).backward_refusal.empty());
      const bool refused = v == Variant::Fpa && b == FpaBackward::StraightThrough;
      EXPECT_EQ(plan(DType::Float32, 200, 200, v, b).backward_refusal.empty(), !refused);
    }
  const auto p = plan(DType::Float64, 128, 128, Variant::Fpa, FpaBackward::StraightThrough);
  EXPECT_EQ(p.backward_refusal, row_kernels_straight_through_refusal());
  EXPECT_NE(p.backward_refusal.find("<= 128 (64 in float64)"), std::string::npos)
      << p.backward_refusal;
}

TEST(CudaDispatch, RefusesHeadDimensionsPast256AndTooManyHeads) {
  const auto big = plan(DType::Float32, 257, 64);
  EXPECT_NE(big.refusal.find("head dimensions must be <= 256"), std::string::npos) << big.refusal;
  EXPECT_FALSE(plan(DType::Float16, 64, 300).refusal.empty());
  EXPECT_TRUE(plan(DType::Float32, 64, 64, Variant::Fox, FpaBackward::Exact, 65535).refusal.empty());
  const auto heads = plan(DType::Float32, 64, 64, Variant::Fox, FpaBackward::Exact, 65536);
  EXPECT_NE(heads.refusal.find("batch x heads must be <= 65535"), std::string::npos)
      << heads.refusal;
  for (const auto& r : {big.refusal, heads.refusal, row_kernels_straight_through_refusal()})
    EXPECT_EQ(r.find('\n'), std::string::npos) << r;  // one line
}

TEST(CudaDispatch, KernelNames) {
  EXPECT_EQ(to_string(CudaKernel::Tiled), "tiled");
  EXPECT_EQ(to_string(CudaKernel::RowPerThread), "row-per-thread");
}

}  // namespace
}  // namespace fpa::cuda
