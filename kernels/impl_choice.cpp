#include "kernels/impl_choice.h"

#include <fmt/format.h>

#include <stdexcept>

namespace fpa {

std::string unsupported(Impl impl, Variant variant, FpaBackward fpa_backward) {
  switch (impl) {
    case Impl::Reference:
    case Impl::Fused:  // every variant and backward mode (tests/test_fused.cpp checks each)
      return "";
    case Impl::Cuda:
#ifndef FPA_WITH_CUDA
      return "cuda: not in this build (LibTorch without CUDA)";
#endif
      // Every variant and mode: the tiled kernels run FPA's straight-through backward. Past their
      // head dimensions the call itself refuses it (kernels/cuda/cuda_dispatch.h).
      (void)variant;
      (void)fpa_backward;
      return "";
  }
  return "unknown implementation";
}

Impl resolve_impl(const std::string& name, c10::DeviceType device) {
  if (name == "auto") return device == c10::DeviceType::CUDA ? Impl::Cuda : Impl::Fused;
  return parse_impl(name);
}

bool runs_on(Impl impl, c10::DeviceType device) {
  const bool gpu = device == c10::DeviceType::CUDA;
  return impl == Impl::Reference || (impl == Impl::Fused) != gpu;
}

Impl choose_impl(const std::string& name, Variant variant, FpaBackward fpa_backward,
                 c10::DeviceType device) {
  const Impl impl = resolve_impl(name, device);
  if (const auto why = unsupported(impl, variant, fpa_backward); !why.empty())
    throw std::invalid_argument(fmt::format("--impl {} with variant {}: {}", name, to_string(variant), why));
  const bool gpu = device == c10::DeviceType::CUDA;
  if (!runs_on(impl, device))
    throw std::invalid_argument(fmt::format("--impl {} runs on {} tensors; --device is {} (use --impl "
                                            "auto)", name, gpu ? "CPU" : "CUDA",
                                            gpu ? "a GPU" : "the CPU"));
  return impl;
}

}  // namespace fpa
