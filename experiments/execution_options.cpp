#include "experiments/execution_options.h"

#include "experiments/cli.h"

#include <fmt/format.h>

#include <cctype>
#include <stdexcept>

namespace fpa {

std::string to_string(Precision p) { return p == Precision::Bf16 ? "bf16" : "fp32"; }

Precision parse_precision(const std::string& text) {
  if (text == "fp32") return Precision::Fp32;
  if (text == "bf16") return Precision::Bf16;
  throw std::invalid_argument(fmt::format("--precision must be fp32 or bf16, got '{}'", text));
}

int parse_device_form(const std::string& text) {
  if (text == "auto") return -2;
  if (text == "cpu") return -1;
  if (text == "cuda") return 0;
  const std::string prefix = "cuda:";
  if (text.rfind(prefix, 0) == 0 && text.size() > prefix.size() && text.size() <= prefix.size() + 4) {
    bool digits = true;
    for (size_t i = prefix.size(); i < text.size(); ++i)
      digits = digits && std::isdigit(static_cast<unsigned char>(text[i]));
    if (digits) return std::stoi(text.substr(prefix.size()));
  }
  throw std::invalid_argument(
      fmt::format("--device must be auto, cpu, cuda or cuda:N, got '{}'", text));
}

void declare_execution_options(Cli& cli, const std::string& default_device) {
  cli.add()
      ("device", po::value<std::string>()->default_value(default_device),
       "where to compute: auto (a GPU when this LibTorch has CUDA and one is visible, else the "
       "CPU), cpu, cuda, cuda:N")
      ("precision", po::value<std::string>()->default_value("fp32"),
       "fp32, or bf16 (autocast to bfloat16 with float32 weights; field, gates and softmax "
       "statistics in float32)");
  auto form_ok = [](auto parse, const std::string& name) {
    return [parse, name](const po::variables_map& vm) {
      if (!vm.count(name)) return true;
      try {
        parse(vm[name].as<std::string>());
        return true;
      } catch (const std::invalid_argument&) {
        return false;
      }
    };
  };
  cli.require(form_ok(parse_device_form, "device"), "--device must be auto, cpu, cuda or cuda:N");
  cli.require(form_ok(parse_precision, "precision"), "--precision must be fp32 or bf16");
}

}  // namespace fpa
