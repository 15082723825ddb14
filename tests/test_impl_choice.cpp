// Which implementation runs what (kernels/impl_choice.h): a table, not a probe. `auto` is the
// kernels of the tensors' device (fused on the CPU, for every variant and backward mode; cuda on
// a CUDA device) and draws no random numbers; a named implementation that cannot run a
// combination is refused before any work.
#include "kernels/attention.h"
#include "kernels/impl_choice.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

using namespace fpa;

namespace {
const Variant kVariants[] = {Variant::Softmax, Variant::Fox, Variant::Fpa};
const FpaBackward kModes[] = {FpaBackward::Exact, FpaBackward::StraightThrough};
}  // namespace

TEST(ImplChoice, AutoIsFusedEverywhereAndDrawsNoRandomNumbers) {
  for (auto v : kVariants)
    for (auto g : kModes) {
      torch::manual_seed(11);
      const auto before = torch::rand({1}).item<double>();
      torch::manual_seed(11);
      EXPECT_EQ(choose_impl("auto", v, g), Impl::Fused) << to_string(v) << " " << to_string(g);
      EXPECT_EQ(torch::rand({1}).item<double>(), before);
    }
}

// One meaning of auto, for the command-line tools (choose_impl) and torch.ops.fpa.attention
// (resolve_impl with the tensors' device); a name other than auto is itself on every device.
TEST(ImplChoice, AutoIsTheDevicesKernels) {
  EXPECT_EQ(resolve_impl("auto", c10::DeviceType::CPU), Impl::Fused);
  EXPECT_EQ(resolve_impl("auto", c10::DeviceType::CUDA), Impl::Cuda);
  for (auto device : {c10::DeviceType::CPU, c10::DeviceType::CUDA})
    for (auto impl : {Impl::Reference, Impl::Fused, Impl::Cuda})
      EXPECT_EQ(resolve_impl(to_string(impl), device), impl) << to_string(impl);
  EXPECT_THROW(resolve_impl("nonsense", c10::DeviceType::CPU), std::invalid_argument);
}

// What the table says the fused kernel supports, it runs: forward and backward, every cell.
TEST(ImplChoice, TheTableMatchesWhatTheKernelsRun) {
  for (auto v : kVariants)
    for (auto g : kModes) {
      for (auto impl : {Impl::Reference, Impl::Fused}) {
        ASSERT_EQ(unsupported(impl, v, g), "");
        auto q = torch::randn({1, 2, 5, 4}, torch::kDouble).requires_grad_(true);
        auto gate = v == Variant::Softmax ? at::Tensor() : -torch::rand({1, 2, 5}, torch::kDouble);
        AttentionOptions o;
        o.variant = v;
        o.impl = impl;
        o.fpa_backward = g;
        EXPECT_NO_THROW(attention(q, q, q, gate, o).sum().backward()) << to_string(impl);
      }
    }
}

TEST(ImplChoice, UnsupportedCombinationsAreRefusedByName) {
  // cuda: refused by name only in a build without it (the tiled kernels run every mode).
  for (auto g : kModes) {
    EXPECT_EQ(unsupported(Impl::Cuda, Variant::Fpa, g).empty(), impl_available(Impl::Cuda));
    if (!impl_available(Impl::Cuda))
      EXPECT_THROW(choose_impl("cuda", Variant::Fpa, g), std::invalid_argument);
  }
  EXPECT_THROW(choose_impl("nonsense", Variant::Fpa, FpaBackward::Exact), std::invalid_argument);
  EXPECT_EQ(choose_impl("reference", Variant::Fpa, FpaBackward::StraightThrough), Impl::Reference);
}

TEST(ImplChoice, EachImplementationRunsOnItsDevice) {
  using c10::DeviceType;
  EXPECT_TRUE(runs_on(Impl::Reference, DeviceType::CPU));
  EXPECT_TRUE(runs_on(Impl::Reference, DeviceType::CUDA));
  EXPECT_TRUE(runs_on(Impl::Fused, DeviceType::CPU));
  EXPECT_FALSE(runs_on(Impl::Fused, DeviceType::CUDA));
  EXPECT_FALSE(runs_on(Impl::Cuda, DeviceType::CPU));
  EXPECT_TRUE(runs_on(Impl::Cuda, DeviceType::CUDA));
  EXPECT_THROW(choose_impl("fused", Variant::Fox, FpaBackward::Exact, DeviceType::CUDA),
               std::invalid_argument);
}
