// Where and in what precision a tool computes: the --device and --precision options that every
// tool that computes declares (torch-free: the Cli side; experiments/execution.h resolves them).
//
//   --device auto|cpu|cuda|cuda:N   auto: the first GPU when LibTorch has CUDA and one is visible,
//                                   else the CPU
//   --precision fp32|bf16           bf16: autocast to bfloat16 with float32 master weights; the
//                                   field, gates and softmax statistics stay float32
//
// Both are execution settings: recorded in every sidecar (the option's text and the resolved
// device), never part of a model's identity, so a checkpoint trained on one device evaluates or
// resumes on another.
#pragma once

#include <string>

namespace fpa {

class Cli;

enum class Precision { Fp32, Bf16 };

std::string to_string(Precision p);                  // "fp32", "bf16"
Precision parse_precision(const std::string& text);  // throws std::invalid_argument

// The form of a --device value: "auto", "cpu", "cuda" or "cuda:N" (N a non-negative integer).
// Returns the index N (0 for "cuda"), -1 for cpu and -2 for auto; throws std::invalid_argument.
int parse_device_form(const std::string& text);

// Declares --device (default `default_device`) and --precision (default fp32) with checks of
// their form; whether the device exists is resolve_execution's check (experiments/execution.h).
void declare_execution_options(Cli& cli, const std::string& default_device = "auto");

}  // namespace fpa
