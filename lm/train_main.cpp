// lm-train: trains one language model (one preset, one attention variant) with checkpoints,
// resumption and optional data parallelism (--nproc N starts N ranks on this machine).
#include "experiments/cli.h"
#include "experiments/provenance.h"
#include "experiments/torch_runtime.h"
#include "lm/impl_choice.h"
#include "lm/launcher.h"
#include "lm/memory.h"
#include "lm/presets.h"
#include "lm/text_training.h"

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>

using namespace fpa;
using namespace fpa::lm;

namespace {

// Command-line overrides of the preset (0 keeps the preset's value).
void apply_overrides(const Cli& cli, TrainOptions& o) {
  auto i64 = [&](const char* name, int64_t& field) {
    if (cli.get<int64_t>(name) > 0) field = cli.get<int64_t>(name);
  };
  i64("steps", o.train.steps);
  i64("batch", o.train.batch);
  i64("accum", o.train.accum);
  i64("warmup", o.train.warmup);
  i64("val-every", o.train.val_every);
  i64("val-windows", o.train.val_windows);
  i64("checkpoint-every", o.train.checkpoint_every);
  i64("length", o.model.context);
  i64("hidden", o.model.hidden);
  i64("layers", o.model.layers);
  i64("heads", o.model.heads);
  i64("mlp-hidden", o.model.mlp_hidden);
  i64("vocab-size", o.model.vocab_size);
  if (cli.get<double>("lr") > 0) o.train.lr = cli.get<double>("lr");
  if (o.train.warmup >= o.train.steps) o.train.warmup = std::max<int64_t>(1, o.train.steps / 10);
}

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
  Cli cli("lm-train", "Train a byte-level language model from a preset (configs/lm/<preset>.conf).", "");
  cli.add()
      ("preset", po::value<std::string>()->default_value("tiny"),
       "a preset file's name: configs/lm/<preset>.conf (tiny, small, ...)")
      ("variant", po::value<std::string>()->default_value("fpa"),
       "attention: transformer | softmax-nope | fox | fpa")
      ("corpus", po::value<std::string>()->default_value("data/brown/text"),
       "directory of plain-text documents (lm/fetch_brown.sh makes the Brown one)")
      ("out-dir", po::value<std::string>()->default_value("runs/lm"),
       "run directory: checkpoint.pt and log.csv")
      ("resume", po::bool_switch(), "continue the run in --out-dir from its checkpoint")
      ("steps", po::value<int64_t>()->default_value(0), "optimiser steps (0: the preset's)")
      ("batch", po::value<int64_t>()->default_value(0), "global sequences per step (0: preset)")
      ("accum", po::value<int64_t>()->default_value(0), "gradient-accumulation micro-batches")
      ("lr", po::value<double>()->default_value(0.0), "peak learning rate (0: preset)")
      ("warmup", po::value<int64_t>()->default_value(0), "warm-up steps (0: preset)")
      ("val-every", po::value<int64_t>()->default_value(0), "steps between validations")
      ("val-windows", po::value<int64_t>()->default_value(0), "validation windows per pass")
      ("checkpoint-every", po::value<int64_t>()->default_value(0), "steps between checkpoints")
      ("length", po::value<int64_t>()->default_value(0), "training sequence length, the model's context (0: preset)")
      ("hidden", po::value<int64_t>()->default_value(0), "model width (0: preset)")
      ("layers", po::value<int64_t>()->default_value(0), "layers (0: preset)")
      ("heads", po::value<int64_t>()->default_value(0), "heads (0: preset)")
      ("mlp-hidden", po::value<int64_t>()->default_value(0), "SwiGLU width (0: preset/auto)")
      ("vocab-size", po::value<int64_t>()->default_value(0),
       "vocabulary size (0: preset; this suite's tokenizer is byte-level, 256)")
      ("impl", po::value<std::string>()->default_value("auto"),
       "attention implementation: auto (fused when available) | reference | fused")
      ("fpa-backward", po::value<std::string>()->default_value("straight-through"),
       "FPA backward: straight-through | exact")
      ("st-temperature", po::value<double>()->default_value(1.0), "straight-through tau_s")
      ("nproc", po::value<int>()->default_value(1), "ranks to start on this machine (Gloo)")
      ("master-port", po::value<int>()->default_value(0), "rendezvous port for --nproc (0: free)")
      ("print-params", po::bool_switch(), "print the parameter count of every variant and exit");
  for (const char* n : {"steps", "batch", "accum", "warmup", "val-every", "val-windows",
                        "checkpoint-every", "length", "hidden", "layers", "heads", "mlp-hidden",
                        "vocab-size"})
    cli.range(n, 0, 1e9);
  cli.range("lr", 0, 10);
  cli.range("st-temperature", 1e-6, 1e6);
  cli.range("nproc", 1, 64);
  cli.range("master-port", 0, 65535);
  cli.require([](const po::variables_map& vm) {
    try {
      preset(vm["preset"].as<std::string>());
    } catch (const std::invalid_argument& e) {
      fail_usage(std::string("--preset: ") + e.what());
    }
    return true;
  }, "--preset");
  cli.require([](const po::variables_map& vm) {
    try { parse_attention_kind(vm["variant"].as<std::string>()); return true; } catch (...) { return false; }
  }, "--variant must be transformer, softmax-nope, fox or fpa");
  cli.require([](const po::variables_map& vm) {
    try { parse_min_grad(vm["fpa-backward"].as<std::string>()); return true; } catch (...) { return false; }
  }, "--fpa-backward must be exact or straight-through");
  cli.require([](const po::variables_map& vm) {
    const auto s = vm["impl"].as<std::string>();
    return s == "auto" || s == "reference" || s == "fused" || s == "cuda";
  }, "--impl must be auto, reference, fused or cuda");
  cli.require([](const po::variables_map& vm) {  // what the implementation table says it runs
    std::string why;
    try {
      why = fpa::unsupported(parse_impl(vm["impl"].as<std::string>()),
                             operator_variant(parse_attention_kind(vm["variant"].as<std::string>())),
                             parse_min_grad(vm["fpa-backward"].as<std::string>()));
    } catch (const std::invalid_argument&) {
      return true;  // auto, or a bad name another check reports
    }
    if (!why.empty()) fail_usage("--impl " + vm["impl"].as<std::string>() + ": " + why);
    return true;
  }, "--impl: not supported");
  cli.input("corpus", PathKind::Dir);
  cli.output("out-dir", PathKind::Dir, {"checkpoint.pt", "log.csv.json", ".lock"});
  cli.parse(argc, argv);

  try {
    const auto& p = preset(cli.get<std::string>("preset"));
    TrainOptions o;
    o.preset_name = p.name;
    o.model = p.model;
    o.train = p.train;
    o.model.kind = parse_attention_kind(cli.get<std::string>("variant"));
    o.model.min_grad = parse_min_grad(cli.get<std::string>("fpa-backward"));
    o.model.st_temperature = cli.get<double>("st-temperature");
    apply_overrides(cli, o);
    try {
      o.model.validate();
    } catch (const std::invalid_argument& e) {
      fail_usage(e.what());
    }
    set_threads(cli.threads());
    if (cli.flag("print-params")) {
      const double params = parameter_count_of(o.model);  // each variant is built in turn
      require_memory(4 * params, "lm-train --print-params",
                     fmt::format("float32 weights of {:.3g} parameters", params));
      print_param_counts(o.model);
      return 0;
    }
    const int nproc = cli.get<int>("nproc");
    o.model.impl = choose_impl(cli.get<std::string>("impl"), operator_variant(o.model.kind),
                               o.model.min_grad);
    if (!std::getenv("RANK"))  // the launching process checks for all ranks
      require_training_memory(o.model, std::max<int64_t>(1, o.train.batch / nproc / o.train.accum),
                              nproc > 1 ? fmt::format("lm-train with {} ranks (each)", nproc)
                                        : std::string("lm-train"));
    if (nproc > 1 && !std::getenv("RANK")) {
      if (!distributed_available()) fail_usage("--nproc > 1 needs a build with Gloo");
      return launch_ranks(nproc, args_without(argc, argv, "nproc"), cli.get<int>("master-port"));
    }
    o.corpus_dir = cli.get<std::string>("corpus");
    o.out_dir = cli.get<std::string>("out-dir");
    o.seed = cli.seed();
    o.resume = cli.flag("resume");
    o.out_copy = cli.out();
    o.provenance = [&cli] { return Provenance::from(cli).to_json(); };
    auto comm = communicator_from_env();
    const bool lead = comm->rank() == 0;
    const auto outcome = train(o, *comm);
    if (outcome.diverged) {
      std::cerr << "error: " << outcome.message << std::endl;
      return 3;
    }
    if (lead) {
      std::cerr << fmt::format("lm-train: {} steps, final validation loss {:.4f} ({:.3f} bits/byte), "
                               "{:.0f} tokens/s\n",
                               outcome.steps_done, outcome.final_val_loss,
                               outcome.final_val_loss / std::log(2.0), outcome.tokens_per_s);
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
