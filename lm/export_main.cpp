// lm-export: an lm-train checkpoint's parameters and model configuration as a file that Python's
// torch.load reads (torch::pickle_save), for using the models from PyTorch (lm/python/).
//
// The file holds one dict:
//   "state_dict": parameter name -> tensor (the names of lm/model.h's modules, e.g.
//                 "block0.attn.q_proj.weight"; tied embeddings have no "lm_head.weight")
//   "config":     the model configuration as `name = value` lines (lm/checkpoint.h)
//   "step":       optimiser steps the checkpoint was trained for
//   "preset":     the preset the run started from
//
// With --format weights it writes instead the suite's own weights file (lm/checkpoint.h's
// save_weights): what results/weights/ publishes, loadable by every evaluator's --checkpoint.
#include "experiments/atomic_file.h"
#include "experiments/cli.h"
#include "lm/checkpoint_option.h"
#include "lm/checkpoint.h"
#include "lm/settings.h"

#include <fmt/format.h>
#include <torch/serialize.h>

#include <filesystem>
#include <iostream>

using namespace fpa;
using namespace fpa::lm;

int main(int argc, char** argv) {
  Cli cli("lm-export",
          "Writes a checkpoint's parameters and configuration as a dict that Python's torch.load "
          "reads (see lm/python/), or as a published weights file (--format weights).",
          "");
  cli.add()("checkpoint", po::value<std::string>(),
            "run directory (or checkpoint file) of lm-train or passkey-train")
      ("format", po::value<std::string>()->default_value("torch-pickle"),
       "torch-pickle (a dict for Python's torch.load) or weights (results/weights/'s format)");
  lm::declare_checkpoint_input(cli);  // first: the checks below read --checkpoint
  cli.require([](const po::variables_map& vm) { return !vm["out"].as<std::string>().empty(); },
              "--out is required (the .pt file to write)");
  cli.require(
      [](const po::variables_map& vm) {
        std::error_code ec;
        const auto p = vm["checkpoint"].as<std::string>();
        return std::filesystem::is_regular_file(
            std::filesystem::is_directory(p, ec) ? checkpoint_path(p) : p, ec);
      },
      "--checkpoint names no checkpoint (a run directory with checkpoint.pt, or the file)");
  cli.require(
      [](const po::variables_map& vm) {
        const auto f = vm["format"].as<std::string>();
        return f == "torch-pickle" || f == "weights";
      },
      "--format must be torch-pickle or weights");
  cli.parse(argc, argv);

  try {
    auto loaded = load_model(cli.get<std::string>("checkpoint"));
    if (cli.get<std::string>("format") == "weights") {
      save_weights(cli.out(), loaded.model, loaded.progress,
                   training_record(cli.get<std::string>("checkpoint")));
      std::cerr << fmt::format("lm-export: {} weights ({} parameters, step {}) -> {}\n",
                               to_string(loaded.config.kind), loaded.model->parameter_count(),
                               loaded.step, cli.out());
      return 0;
    }
    c10::Dict<std::string, at::Tensor> state;
    for (const auto& p : loaded.model->named_parameters())
      state.insert(p.key(), p.value().detach().contiguous());
    c10::impl::GenericDict file(c10::StringType::get(), c10::AnyType::get());
    file.insert("state_dict", state);
    file.insert("config", model_text(loaded.config));
    file.insert("step", loaded.step);
    file.insert("preset", loaded.progress.preset);
    const auto bytes = torch::pickle_save(file);
    write_file_atomic(cli.out(), std::string(bytes.begin(), bytes.end()));
    std::cerr << fmt::format("lm-export: {} ({} parameters, step {}) -> {}\n",
                             to_string(loaded.config.kind), loaded.model->parameter_count(),
                             loaded.step, cli.out());
    return 0;
  } catch (const UsageError& e) {  // a corrupt checkpoint: bad input, exit 2
    fail_usage(e.what());
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::cerr << "error: " << msg.substr(0, msg.find('\n')) << std::endl;
    return 1;
  }
}
