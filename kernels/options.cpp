// Names of the attention options (kernels/options.h).
#include "kernels/options.h"

#include <fmt/format.h>

#include <stdexcept>

namespace fpa {

std::string to_string(Variant v) {
  switch (v) {
    case Variant::Softmax: return "softmax";
    case Variant::Fox: return "fox";
    case Variant::Fpa: return "fpa";
  }
  return "?";
}
std::string to_string(Impl i) {
  switch (i) {
    case Impl::Reference: return "reference";
    case Impl::Fused: return "fused";
    case Impl::Cuda: return "cuda";
  }
  return "?";
}
std::string to_string(FpaBackward g) {
  return g == FpaBackward::Exact ? "exact" : "straight-through";
}
std::string to_string(Fp32Matmul m) { return m == Fp32Matmul::Tf32 ? "tf32" : "exact"; }

Variant parse_variant(const std::string& s) {
  if (s == "softmax") return Variant::Softmax;
  if (s == "fox") return Variant::Fox;
  if (s == "fpa") return Variant::Fpa;
  throw std::invalid_argument(fmt::format("unknown attention variant '{}' (softmax, fox, fpa)", s));
}
Impl parse_impl(const std::string& s) {
  if (s == "reference") return Impl::Reference;
  if (s == "fused") return Impl::Fused;
  if (s == "cuda") return Impl::Cuda;
  throw std::invalid_argument(fmt::format("unknown implementation '{}' (reference, fused, cuda)", s));
}
FpaBackward parse_fpa_backward(const std::string& s) {
  if (s == "exact") return FpaBackward::Exact;
  if (s == "straight-through") return FpaBackward::StraightThrough;
  throw std::invalid_argument(
      fmt::format("unknown FPA backward mode '{}' (exact, straight-through)", s));
}
Fp32Matmul parse_fp32_matmul(const std::string& s) {
  if (s == "tf32") return Fp32Matmul::Tf32;
  if (s == "exact") return Fp32Matmul::Exact;
  throw std::invalid_argument(fmt::format("unknown fp32 matmul mode '{}' (tf32, exact)", s));
}

}  // namespace fpa
