// --device and --precision (experiments/execution_options.h, experiments/execution.h): the forms
// each takes, the refusals before any work, and the autocast regions.
#include "experiments/execution.h"
#include "experiments/usage_error.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fmt/format.h>
#include <torch/torch.h>

using namespace fpa;

TEST(Execution, DeviceAndPrecisionForms) {
  EXPECT_EQ(parse_device_form("auto"), -2);
  EXPECT_EQ(parse_device_form("cpu"), -1);
  EXPECT_EQ(parse_device_form("cuda"), 0);
  EXPECT_EQ(parse_device_form("cuda:3"), 3);
  for (const char* bad : {"", "gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:0x", "cpu:0", "CUDA", "cuda:12345"})
    EXPECT_THROW(parse_device_form(bad), std::invalid_argument) << bad;
  EXPECT_EQ(parse_precision("fp32"), Precision::Fp32);
  EXPECT_EQ(parse_precision("bf16"), Precision::Bf16);
  for (const char* bad : {"", "fp16", "bfloat16", "FP32"})
    EXPECT_THROW(parse_precision(bad), std::invalid_argument) << bad;
}

// auto is the CPU without a visible GPU; asking for one there is bad input naming --device.
TEST(Execution, ResolvesAutoAndRefusesAMissingGpu) {
  const auto e = resolve_execution("auto", "bf16");
  EXPECT_EQ(e.device.is_cuda(), torch::cuda::is_available());
  EXPECT_TRUE(e.autocast());
  EXPECT_TRUE(resolve_execution("cpu", "fp32").device.is_cpu());
  EXPECT_THROW(resolve_execution("cpu", "fp16"), UsageError);
  const int visible = torch::cuda::is_available() ? int(torch::cuda::device_count()) : 0;
  try {
    resolve_execution(fmt::format("cuda:{}", visible), "fp32");
    FAIL() << "a GPU index past the visible ones was accepted";
  } catch (const UsageError& err) {
    EXPECT_NE(std::string(err.what()).find("--device cuda:"), std::string::npos) << err.what();
  }
  if (visible == 0) EXPECT_THROW(resolve_execution("cuda", "fp32"), UsageError);
}

// Deterministic algorithms are a GPU setting: resolving the CPU leaves LibTorch's global mode as it
// was (the published CPU runs never had it), resolving a GPU turns it on.
TEST(Execution, DeterministicModeOnGpusOnly) {
  auto& context = at::globalContext();
  const bool before = context.deterministicAlgorithms();
  (void)resolve_execution("cpu", "fp32");
  (void)resolve_execution("auto", "fp32");
  EXPECT_EQ(context.deterministicAlgorithms(), before || torch::cuda::is_available());
  if (torch::cuda::is_available()) {
    EXPECT_TRUE(context.deterministicAlgorithmsWarnOnly());
    EXPECT_NE(std::getenv("CUBLAS_WORKSPACE_CONFIG"), nullptr);
  }
}

// bf16 autocast turns a linear layer's output to bfloat16 inside the scope only; a Float32Region
// inside it computes in float32; scopes nest and restore what was before.
TEST(Execution, AutocastScopeAndFloat32Region) {
  torch::nn::Linear linear(4, 3);
  const auto x = torch::randn({2, 4});
  const auto cpu_bf16 = resolve_execution("cpu", "bf16");
  EXPECT_EQ(linear(x).scalar_type(), at::kFloat);
  {
    AutocastScope outer(cpu_bf16);
    EXPECT_EQ(linear(x).scalar_type(), at::kBFloat16);
    {
      Float32Region float32;
      EXPECT_EQ(linear(x).scalar_type(), at::kFloat);
      AutocastScope inner(cpu_bf16);
      EXPECT_EQ(linear(x).scalar_type(), at::kBFloat16);
    }
    EXPECT_EQ(linear(x).scalar_type(), at::kBFloat16);
  }
  EXPECT_EQ(linear(x).scalar_type(), at::kFloat);
  {
    AutocastScope none(resolve_execution("cpu", "fp32"));
    EXPECT_EQ(linear(x).scalar_type(), at::kFloat);
  }
}

// A resumed optimiser's moments follow the model to its device (here the CPU, the one device a
// CI machine has): the tensors keep their values and are on the device asked for.
TEST(Execution, OptimizerStateMovesWithTheModel) {
  torch::nn::Linear linear(4, 3);
  torch::optim::AdamW opt(linear->parameters(), torch::optim::AdamWOptions(1e-2));
  linear(torch::randn({2, 4})).sum().backward();
  opt.step();
  std::vector<at::Tensor> before;
  for (auto& [k, s] : opt.state())
    before.push_back(static_cast<torch::optim::AdamWParamState&>(*s).exp_avg().clone());
  move_optimizer_state(opt, torch::Device(torch::kCPU));
  size_t i = 0;
  for (auto& [k, s] : opt.state()) {
    const auto& m = static_cast<torch::optim::AdamWParamState&>(*s).exp_avg();
    EXPECT_TRUE(m.device().is_cpu());
    EXPECT_TRUE(m.equal(before[i++]));
  }
  EXPECT_EQ(i, opt.state().size());
}

// Each parameter finds its own AdamW state (lm/checkpoint.cpp's checksums of the moments rely on
// it), whichever way this LibTorch keys the state; none before the first step.
TEST(Execution, OptimizerStateIsFoundPerParameter) {
  torch::nn::Linear linear(4, 3);
  torch::optim::AdamW opt(linear->parameters(), torch::optim::AdamWOptions(1e-2));
  for (const auto& p : linear->parameters()) EXPECT_EQ(optimizer_state_of(opt, p), nullptr);
  linear(torch::randn({2, 4})).sum().backward();
  opt.step();
  const auto params = linear->parameters();
  ASSERT_EQ(params.size(), 2u);
  for (const auto& p : params) {
    auto* s = dynamic_cast<torch::optim::AdamWParamState*>(optimizer_state_of(opt, p));
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->exp_avg().sizes(), p.sizes());  // its own moments, not the other parameter's
    EXPECT_EQ(s->step(), 1);
  }
  EXPECT_EQ(optimizer_state_of(opt, torch::zeros({4, 3})), nullptr);
}
