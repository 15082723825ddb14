#include "experiments/execution.h"

#include "experiments/cli.h"
#include "experiments/provenance.h"
#include "experiments/usage_error.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>
#include <fmt/format.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <type_traits>

namespace fpa {
namespace {

// LibTorch 2.4 replaced autocast's per-device functions by functions taking the device type.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool autocast_enabled(at::DeviceType t) { return at::autocast::is_autocast_enabled(t); }
void set_autocast(at::DeviceType t, bool on) {
  at::autocast::set_autocast_dtype(t, at::kBFloat16);
  at::autocast::set_autocast_enabled(t, on);
}
#else
bool autocast_enabled(at::DeviceType t) {
  return t == at::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
void set_autocast(at::DeviceType t, bool on) {
  if (t == at::kCUDA) {
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(on);
  } else {
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(on);
  }
}
#endif

// LibTorch 1.13 keys an optimiser's state by the text of the parameter's TensorImpl address
// (c10::guts::to_string, which is this ostream output); later ones (2.6, 2.14 seen) by the
// address itself.
template <class Key>
Key optimizer_state_key(c10::TensorImpl* impl) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;
    text << static_cast<const void*>(impl);
    return text.str();
  } else {
    return impl;
  }
}

// One seed, one run on a given GPU: LibTorch's deterministic algorithms (an op that has none
// warns once instead of failing the run), cuDNN's deterministic, non-benchmarked kernels, and
// cuBLAS's fixed workspace (CUBLAS_WORKSPACE_CONFIG, unless already set; read when cuBLAS first
// starts, which is after this). Never for the CPU, whose kernels are deterministic already and
// whose published runs must not change.
void make_gpu_deterministic() {
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  auto& context = at::globalContext();
  context.setDeterministicAlgorithms(true, /*warn_only=*/true);
  context.setDeterministicCuDNN(true);
  context.setBenchmarkCuDNN(false);
}

}  // namespace

std::string Execution::describe() const {
  std::string name = device.str();
  if (device.is_cuda()) {
    // The GPU's name needs the CUDA runtime, which a CPU LibTorch lacks: the index says enough.
    name += fmt::format(" ({} visible)", torch::cuda::device_count());
  }
  return fmt::format("{} {}", name, to_string(precision));
}

Execution resolve_execution(const std::string& device, const std::string& precision,
                            int local_rank) {
  Execution e;
  try {
    e.precision = parse_precision(precision);
    int index = parse_device_form(device);
    const bool has_cuda = torch::cuda::is_available();
    const int visible = has_cuda ? int(torch::cuda::device_count()) : 0;
    if (index == -2) index = has_cuda ? 0 : -1;  // auto
    if (index == -1) return e;                   // cpu
    if (!has_cuda)
      throw UsageError(fmt::format(
          "--device {}: {}", device,
          torch::hasCUDA() ? "no GPU is visible (CUDA_VISIBLE_DEVICES, driver)"
                           : "this build's LibTorch has no CUDA (build against a PyTorch with "
                             "CUDA: kernels/README.md)"));
    if (local_rank >= 0 && (device == "auto" || device == "cuda")) index = local_rank;
    if (index >= visible)
      throw UsageError(fmt::format("--device {}: cuda:{} asked for, {} GPU(s) visible", device,
                                   index, visible));
    e.device = torch::Device(torch::kCUDA, int8_t(index));
    make_gpu_deterministic();
    return e;
  } catch (const std::invalid_argument& err) {
    throw UsageError(err.what());
  }
}

Execution execution_of(const Cli& cli, int local_rank) {
  const auto e = resolve_execution(cli.get<std::string>("device"),
                                   cli.get<std::string>("precision"), local_rank);
  record_execution(e.describe());
  return e;
}

Execution fp32_execution_of(const Cli& cli, const std::string& why) {
  const auto e = resolve_execution(cli.get<std::string>("device"), cli.get<std::string>("precision"));
  if (e.autocast())
    throw UsageError(fmt::format("{}: --precision {}: {}", cli.program(), to_string(e.precision), why));
  record_execution(e.describe());
  return e;
}

void move_optimizer_state(torch::optim::Optimizer& optimizer, const torch::Device& device) {
  for (auto& [key, state] : optimizer.state()) {
    (void)key;
    if (auto* a = dynamic_cast<torch::optim::AdamWParamState*>(state.get())) {
      a->exp_avg(a->exp_avg().to(device));
      a->exp_avg_sq(a->exp_avg_sq().to(device));
      if (a->max_exp_avg_sq().defined()) a->max_exp_avg_sq(a->max_exp_avg_sq().to(device));
    }
  }
}

torch::optim::OptimizerParamState* optimizer_state_of(torch::optim::Optimizer& optimizer,
                                                      const torch::Tensor& parameter) {
  auto& state = optimizer.state();
  using Key = std::decay_t<decltype(state)>::key_type;
  const auto it = state.find(optimizer_state_key<Key>(parameter.unsafeGetTensorImpl()));
  return it == state.end() ? nullptr : it->second.get();
}

AutocastScope::AutocastScope(const Execution& e) : active_(e.autocast()) {
  if (!active_) return;
  was_cpu_ = autocast_enabled(at::kCPU);
  was_cuda_ = autocast_enabled(at::kCUDA);
  at::autocast::increment_nesting();
  set_autocast(e.device.type(), true);
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  set_autocast(at::kCPU, was_cpu_);
  set_autocast(at::kCUDA, was_cuda_);
  // Casts of the weights are cached while autocast is on; drop them when the outermost scope ends.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
}

Float32Region::Float32Region()
    : was_cpu_(autocast_enabled(at::kCPU)), was_cuda_(autocast_enabled(at::kCUDA)) {
  if (was_cpu_) set_autocast(at::kCPU, false);
  if (was_cuda_) set_autocast(at::kCUDA, false);
}

Float32Region::~Float32Region() {
  if (was_cpu_) set_autocast(at::kCPU, true);
  if (was_cuda_) set_autocast(at::kCUDA, true);
}

}  // namespace fpa
