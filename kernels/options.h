// The attention operators' options: the variant, the implementation, FPA's backward rule, and
// their names on command lines and in CSVs. No tensors: a tool that only parses options (or a
// caller that only stores them) needs nothing else. kernels/attention.h includes this header.
#pragma once

#include <string>

namespace fpa {

enum class Variant { Softmax, Fox, Fpa };
enum class Impl { Reference, Fused, Cuda };

// Backward rule of FPA's path minimum (the forward pass is always the exact minimum).
//   Exact          : subgradient; d min / d phi_l = 1 at the attaining position l*.
//                    Ties: l* is the LATEST position attaining the minimum.
//   StraightThrough: the gradient of the soft minimum -tau_s log sum_l exp(-phi_l / tau_s).
enum class FpaBackward { Exact, StraightThrough };

struct AttentionOptions {
  Variant variant = Variant::Softmax;
  Impl impl = Impl::Reference;
  FpaBackward fpa_backward = FpaBackward::Exact;
  double st_temperature = 1.0;  // tau_s of the straight-through soft minimum, > 0
  double scale = 0.0;           // 0 means 1/sqrt(D)
};

// Names used on command lines and in CSVs.
std::string to_string(Variant v);
std::string to_string(Impl i);
std::string to_string(FpaBackward g);
Variant parse_variant(const std::string& s);  // "softmax", "fox", "fpa"; throws on others
Impl parse_impl(const std::string& s);        // "reference", "fused", "cuda"
FpaBackward parse_fpa_backward(const std::string& s); // "exact", "straight-through"

}  // namespace fpa
