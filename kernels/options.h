// The attention operators' options: the variant, the implementation, FPA's backward rule, the
// float32 products on the GPU, and their names on command lines and in CSVs. No tensors: a tool that only parses options (or a
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

// float32 inputs on the GPU (impl 'cuda', tiled kernels, D and Dv multiples of 16):
//   Tf32 : the matrix products on TF32 tensor cores (sm_80+): q, k, v, dO, p and dS rounded to
//          TF32's 10-bit mantissa, fp32 accumulation; the field, gates, running minima and
//          log-sum-exps stay fp32. Relative errors ~1e-3 (kernels/README.md). The default, as
//          for the field's fp32 attention kernels on these GPUs.
//   Exact: exact fp32 products (the scalar tiles; errors ~1e-6).
// Every other dtype and implementation ignores it (the CPU kernels are exact fp32).
enum class Fp32Matmul { Tf32, Exact };

struct AttentionOptions {
  Variant variant = Variant::Softmax;
  Impl impl = Impl::Reference;
  FpaBackward fpa_backward = FpaBackward::Exact;
  double st_temperature = 1.0;  // tau_s of the straight-through soft minimum, > 0
  double scale = 0.0;           // 0 means 1/sqrt(D)
  Fp32Matmul fp32_matmul = Fp32Matmul::Tf32;  // float32 on the GPU: TF32 or exact products
};

// Names used on command lines and in CSVs.
std::string to_string(Variant v);
std::string to_string(Impl i);
std::string to_string(FpaBackward g);
std::string to_string(Fp32Matmul m);
Variant parse_variant(const std::string& s);  // "softmax", "fox", "fpa"; throws on others
Impl parse_impl(const std::string& s);        // "reference", "fused", "cuda"
FpaBackward parse_fpa_backward(const std::string& s); // "exact", "straight-through"
Fp32Matmul parse_fp32_matmul(const std::string& s);   // "tf32", "exact"

}  // namespace fpa
