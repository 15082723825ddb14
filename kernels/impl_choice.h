// Which attention implementation a caller uses: "reference", "fused", "cuda", or "auto". Every
// tool's --impl and torch.ops.fpa.attention's `impl` take these names, with the default "auto".
//
// "auto" has one meaning, decided in one place (resolve_impl): the kernels of the device the
// tensors are on, `cuda` for a CUDA device and `fused` for the CPU. The command-line tools pass
// their --device (experiments/execution.h): on the CPU their auto is `fused` (which runs every
// variant and backward mode).
//
// What each implementation supports is a table (impl_choice.cpp), answered without running a
// kernel, so choosing draws no random numbers and a tool can refuse an unsupported combination
// when it parses its options instead of at the first backward pass.
#pragma once

#include "kernels/options.h"

#include <c10/core/DeviceType.h>

#include <string>

namespace fpa {

// Empty when `impl` in this build runs `variant`'s forward pass and its backward pass with
// `fpa_backward`; otherwise why not, as one line ("cuda: not in this build"). Limits that depend
// on the tensors (cuda's head dimensions, kernels/cuda/cuda_dispatch.h) are checked per call.
std::string unsupported(Impl impl, Variant variant, FpaBackward fpa_backward);

// The implementation a name stands for on `device`: "auto" -> Cuda on a CUDA device, Fused
// otherwise; any other name -> parse_impl(name) (throws std::invalid_argument if unknown).
Impl resolve_impl(const std::string& name, c10::DeviceType device);

// Whether `impl` computes on tensors of `device`: fused on the CPU, cuda on a CUDA device, the
// reference on both.
bool runs_on(Impl impl, c10::DeviceType device);

// The command-line tools' choice on their --device (the CPU unless told): resolve_impl(name,
// device), which must support the combination and run on that device (fused: CPU tensors; cuda:
// CUDA tensors; reference: both). Throws std::invalid_argument on an unknown name, an
// unsupported combination or an implementation of another device.
Impl choose_impl(const std::string& name, Variant variant, FpaBackward fpa_backward,
                 c10::DeviceType device = c10::DeviceType::CPU);

}  // namespace fpa
