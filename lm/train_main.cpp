// lm-train: trains one language model (one preset, one attention variant) with checkpoints,
// resumption and optional data parallelism (--nproc N starts N ranks on this machine).
#include "experiments/cli.h"
#include "experiments/execution.h"
#include "experiments/run_dir.h"
#include "experiments/provenance.h"
#include "experiments/torch_runtime.h"
#include "kernels/impl_choice.h"
#include "lm/corpus_tokenizer.h"
#include "lm/launcher.h"
#include "lm/memory.h"
#include "lm/presets.h"
#include "lm/settings.h"
#include "lm/text_training.h"

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>

using namespace fpa;
using namespace fpa::lm;

namespace {

// The model and training settings lm-train takes (lm/settings.h), over the preset's: a number
// given as 0 keeps the preset's value.
const ToolSettings kSettings{{{"variant", "fpa"}, {"length", "0"}, {"hidden", "0"}, {"layers", "0"},
                              {"heads", "0"}, {"mlp-hidden", "0"}, {"vocab-size", "0"},
                              {"fpa-backward", "straight-through"}, {"st-temperature", "1"},
                              {"impl", "auto"}, {"steps", "0"}, {"batch", "0"}, {"accum", "0"},
                              {"lr", "0"}, {"warmup", "0"}, {"val-every", "0"}, {"val-windows", "0"},
                              {"checkpoint-every", "0"}, {"tokenizer", ""}},
                             /*keep_on_zero=*/true};

void print_param_counts(const ModelConfig& base) {
  for (auto k : {AttentionKind::Transformer, AttentionKind::SoftmaxNope, AttentionKind::Fox,
                 AttentionKind::Fpa}) {
    ModelConfig c = base;
    c.kind = k;
    LanguageModel m(c);
    std::cout << fmt::format("{:<13} params {:>12} (gate/increment projections {})\n",
                             to_string(k), m->parameter_count(), m->gate_parameter_count());
  }
}

}  // namespace

int main(int argc, char** argv) {
  Cli cli("lm-train", "Train a language model from a preset (configs/lm/<preset>.conf).", "");
  cli.add()
      ("preset", po::value<std::string>()->default_value("tiny"),
       "a preset file's name: configs/lm/<preset>.conf (tiny, small, ...)")
      ("corpus", po::value<std::string>()->default_value("data/brown/text"),
       "directory of plain-text documents (lm/fetch_brown.sh makes the Brown one)")
      ("out-dir", po::value<std::string>()->default_value("runs/lm"),
       "run directory: checkpoint.pt and log.csv")
      ("resume", po::bool_switch(), "continue the run in --out-dir from its checkpoint")
      ("stop-after", po::value<int64_t>()->default_value(0),
       "stop with a checkpoint after this many steps of this invocation (0: train to --steps); "
       "--resume continues, with any --nproc that divides --batch")
      ("nproc", po::value<int>()->default_value(1), "ranks to start on this machine (Gloo)")
      ("master-port", po::value<int>()->default_value(0), "rendezvous port for --nproc (0: free)")
      ("print-params", po::bool_switch(), "print the parameter count of every variant and exit");
  add_options(cli, kSettings);
  declare_execution_options(cli);
  cli.range("nproc", 1, 64);
  cli.range("stop-after", 0, 1e12);
  cli.range("master-port", 0, 65535);
  cli.input("corpus", PathKind::Dir);
  cli.input("--preset's folder", PathKind::Dir, [](const Cli&) {
    try {
      return std::vector<std::string>{preset_dir()};  // preset() reads every file in it
    } catch (const std::invalid_argument&) {
      return std::vector<std::string>{};  // refused with its own message below
    }
  });
  cli.output("out-dir", PathKind::Dir, {"checkpoint.pt", "log.csv.json", kRunLockName});
  cli.parse(argc, argv);
  const Preset* chosen = nullptr;
  try {
    chosen = &preset(cli.get<std::string>("preset"));
  } catch (const std::invalid_argument& e) {
    fail_usage(std::string("--preset: ") + e.what());
  }

  try {
    const auto& p = *chosen;
    TrainOptions o;
    o.preset_name = p.name;
    o.model = p.model;
    o.train = p.train;
    // Where it trains: this rank's GPU in a data-parallel run (LOCAL_RANK), before any work.
    o.execution = execution_of(cli, local_rank_from_env());
    try {
      apply_options(cli, kSettings, o.model, o.train);
      o.model.impl = choose_impl(cli.get<std::string>("impl"), operator_variant(o.model.kind),
                                 o.model.fpa_backward, o.execution.device.type());
      o.model.validate();
    } catch (const std::invalid_argument& e) {
      fail_usage(e.what());
    }
    if (o.train.warmup >= o.train.steps) o.train.warmup = std::max<int64_t>(1, o.train.steps / 10);
    set_threads(cli.threads());
    if (cli.flag("print-params")) {
      const double params = parameter_count_of(o.model);  // each variant is built in turn
      require_memory(4 * params, "lm-train --print-params",
                     fmt::format("float32 weights of {:.3g} parameters", params));
      print_param_counts(o.model);
      return 0;
    }
    // Before the ranks start: the launching process trains a missing SentencePiece model once.
    o.corpus_dir = cli.get<std::string>("corpus");
    o.tokenizer = run_tokenizer(o.train.tokenizer, o.corpus_dir, o.model.vocab_size);
    const int nproc = cli.get<int>("nproc");
    if (!std::getenv("RANK"))  // the launching process checks for all ranks
      require_training_memory(o.model, std::max<int64_t>(1, o.train.batch / nproc / o.train.accum),
                              nproc > 1 ? fmt::format("lm-train with {} ranks (each)", nproc)
                                        : std::string("lm-train"));
    const bool gpu = o.execution.device.is_cuda();
    if (nproc > 1 && !std::getenv("RANK")) {
      if (!distributed_available(gpu))
        fail_usage(gpu ? "--nproc > 1 on GPUs needs a build with NCCL"
                       : "--nproc > 1 needs a build with Gloo");
      return launch_ranks(nproc, args_without(argc, argv, "nproc"), cli.get<int>("master-port"));
    }
    o.seed = cli.seed();
    o.run.out_dir = cli.get<std::string>("out-dir");
    o.run.resume = cli.flag("resume");
    o.run.stop_after = cli.get<int64_t>("stop-after");
    o.run.out_copy = cli.out();
    const auto tokenizer = o.tokenizer.identity();  // the sidecar names the model's SHA-256
    o.run.provenance = [&cli, tokenizer] {
      auto p = Provenance::from(cli);
      p.config["tokenizer"] = tokenizer;
      return p.to_json();
    };
    auto comm = communicator_from_env(gpu);
    const bool lead = comm->rank() == 0;
    const auto outcome = train(o, *comm);
    if (outcome.diverged) {
      std::cerr << "error: " << outcome.message << std::endl;
      return 3;
    }
    if (lead) {
      std::cerr << fmt::format("lm-train: {} steps, final validation loss {:.4f} ({:.3f} bits/{}), "
                               "{:.0f} tokens/s\n",
                               outcome.steps_done, outcome.final_val_loss,
                               outcome.final_val_loss / std::log(2.0),
                               o.tokenizer.kind() == TokenizerKind::Bytes ? "byte" : "token",
                               outcome.tokens_per_s);
    }
    return 0;
  } catch (const UsageError& e) {  // found before any training step: bad input, exit 2
    fail_usage(e.what());
  } catch (const std::exception& e) {
    const std::string msg = e.what();  // LibTorch errors carry a backtrace after the first line
    std::cerr << "error: " << msg.substr(0, msg.find('\n')) << std::endl;
    return 1;
  }
}
