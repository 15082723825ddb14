// The LibTorch side of --device and --precision (experiments/execution_options.h): resolving the
// device, moving a model's optimiser state, and the autocast regions, the one place that knows
// how LibTorch 1.13 and 2.x spell autocast and key an optimiser's state.
#pragma once

#include "experiments/execution_options.h"

#include <torch/torch.h>

#include <string>

namespace fpa {

struct Execution {
  torch::Device device{torch::kCPU};
  Precision precision = Precision::Fp32;
  // "cpu", "cuda:0 (NVIDIA H200)": the resolved device, for sidecars and banners.
  std::string describe() const;
  bool autocast() const { return precision == Precision::Bf16; }
};

// "auto" -> cuda:0 when this LibTorch has CUDA and a GPU is visible, else cpu. Throws UsageError
// (one line, exit 2 before any work) for cuda on a LibTorch without CUDA, on a machine without a
// visible GPU, or an index past the visible GPUs. `local_rank` >= 0 (a rank of a data-parallel
// run, LOCAL_RANK) picks cuda:local_rank for "auto" and "cuda". A GPU also turns on LibTorch's
// deterministic algorithms (warn-only), deterministic cuDNN and cuBLAS's fixed workspace; the
// CPU changes nothing.
Execution resolve_execution(const std::string& device, const std::string& precision,
                            int local_rank = -1);
// The same from a tool's parsed --device and --precision; records the resolved device for the
// tool's sidecars (Provenance's "execution").
Execution execution_of(const Cli& cli, int local_rank = -1);

// For a tool that computes in float32 (or its own --dtype) with no autocast, on any device: the
// KV-cache decoders (lm/cache: passkey-eval, passkey-probe, lm-compress; the caches follow the
// model's weights to the device) and attention-bench. --device resolved as execution_of does
// (auto picks a GPU when there is one), and UsageError (exit 2, before any work) for bf16,
// saying `why`.
Execution fp32_execution_of(const Cli& cli, const std::string& why);

// An optimiser's state tensors (AdamW's moments) moved to `device`, after a checkpoint was read
// on the CPU (checkpoints are read to the CPU, so they load on any machine).
void move_optimizer_state(torch::optim::Optimizer& optimizer, const torch::Device& device);

// The optimiser's state of one parameter, or nullptr before its first step (LibTorch 1.13 and 2.x
// key the state differently).
torch::optim::OptimizerParamState* optimizer_state_of(torch::optim::Optimizer& optimizer,
                                                      const torch::Tensor& parameter);

// Autocast to bfloat16 on `e.device` while alive, when e.precision is bf16; nothing for fp32.
class AutocastScope {
 public:
  explicit AutocastScope(const Execution& e);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  bool was_cpu_ = false, was_cuda_ = false;
};

// Autocast off while alive (a float32 region inside an AutocastScope: FPA's field, FoX's gates).
class Float32Region {
 public:
  Float32Region();
  ~Float32Region();
  Float32Region(const Float32Region&) = delete;
  Float32Region& operator=(const Float32Region&) = delete;

 private:
  bool was_cpu_, was_cuda_;
};

}  // namespace fpa
