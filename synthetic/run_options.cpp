#include "run_options.h"

#include "kernels/impl_choice.h"

#include <fmt/format.h>

#include <algorithm>

namespace fpa::synthetic {

void add_run_options(Cli& cli) {
  cli.add()
      ("task", po::value<std::string>()->default_value("dips"),
       "built-in task: dips, brackets, erase (or a path to a .task file)")
      ("task-file", po::value<std::string>(), "task table file (overrides --task); see synthetic/tasks/")
      ("variant", po::value<std::string>()->default_value("fpa"), "attention variant: softmax, fox, fpa")
      ("fpa-backward", po::value<std::string>()->default_value("straight-through"),
       "FPA backward of the path minimum: exact, straight-through")
      ("st-temperature", po::value<double>()->default_value(1.0), "tau_s of the straight-through soft minimum")
      ("impl", po::value<std::string>()->default_value("auto"),
       "attention implementation: auto (fused when available), reference, fused, cuda")
      ("heads", po::value<int>()->default_value(1), "attention heads")
      ("head-dim", po::value<int>()->default_value(8), "head dimension (same for every model)")
      ("hidden", po::value<int>()->default_value(32), "model width (embeddings and attention input)")
      ("payload-values", po::value<int>()->default_value(16), "number of payload values")
      ("payload-dim", po::value<int>()->default_value(8), "dimension of the payload vectors")
      ("increment-bias-init", po::value<double>()->default_value(-1.0), "FPA: initial increment bias c_p")
      ("fox-gate-bias-init", po::value<double>(), "FoX: initial gate bias c_f (default: LibTorch's Linear init)")
      ("length", po::value<int>()->default_value(64), "training sequence length n (held-out: n and 2n)")
      ("batch", po::value<int>()->default_value(32), "sequences per step")
      ("steps", po::value<int>()->default_value(1000), "optimiser steps")
      ("lr", po::value<double>()->default_value(1e-2), "peak AdamW learning rate")
      ("warmup", po::value<int>()->default_value(100), "linear warm-up steps")
      ("lr-final", po::value<double>()->default_value(0.1), "final learning rate as a fraction of --lr (cosine decay)")
      ("weight-decay", po::value<double>()->default_value(0.01), "AdamW weight decay")
      ("eval-every", po::value<int>()->default_value(50), "steps between held-out evaluations (training curve)")
      ("eval-seqs", po::value<int>()->default_value(256), "held-out sequences at n and at 2n");
  cli.range("st-temperature", 1e-6, 1e6);
  cli.range("heads", 1, 64);
  cli.range("head-dim", 1, 1024);
  cli.range("hidden", 1, 4096);
  cli.range("payload-values", 1, 1 << 20);
  cli.range("payload-dim", 1, 4096);
  cli.range("increment-bias-init", -1e3, 1e3);
  cli.range("fox-gate-bias-init", -1e3, 1e3);
  cli.range("length", 1, 1 << 16);
  cli.range("batch", 1, 1 << 16);
  cli.range("steps", 1, 1 << 24);
  cli.range("lr", 1e-12, 10);
  cli.range("warmup", 0, 1 << 24);
  cli.range("lr-final", 0, 1);
  cli.range("weight-decay", 0, 10);
  cli.range("eval-every", 1, 1 << 24);
  cli.range("eval-seqs", 1, 1 << 20);
  cli.require([](const po::variables_map& vm) { parse_variant(vm["variant"].as<std::string>()); return true; },
              "--variant must be softmax, fox or fpa");
  cli.require([](const po::variables_map& vm) { parse_min_grad(vm["fpa-backward"].as<std::string>()); return true; },
              "--fpa-backward must be exact or straight-through");
  cli.require([](const po::variables_map& vm) {
                const auto s = vm["impl"].as<std::string>();
                return s == "auto" || impl_available(parse_impl(s));
              },
              "--impl must be auto, reference, fused or (in a CUDA build) cuda");
  cli.input("task-file", PathKind::File);
}

void require_run_memory(const RunConfig& c) {
  // The reference kernel's (batch, heads, n, n) bias, logits and weights and their gradients in
  // training; held-out evaluation at 2n over --eval-seqs sequences (forward only, kept at once).
  const double f = 4, h = double(c.model.heads), n = double(c.n);
  const double square = c.model.attention.impl == Impl::Reference ? 1 : 0;
  const double train = 6 * square * double(c.batch) * h * n * n * f +
                       8 * double(c.batch) * n * double(c.model.embed + h * c.model.head_dim) * f;
  const double eval = 3 * square * double(c.eval_seqs) * h * 4 * n * n * f +
                      4 * double(c.eval_seqs) * 2 * n * double(c.model.embed + h * c.model.head_dim) * f;
  require_memory(std::max(train, eval), "synthetic-run",
                 fmt::format("training {} x {} tokens {}, held-out evaluation {} x {} tokens {}",
                             c.batch, c.n, human_bytes(train), c.eval_seqs, 2 * c.n, human_bytes(eval)));
}

RunConfig run_config_from(const Cli& cli) {
  RunConfig c;
  try {
    c.task = cli.has("task-file") ? load_task_file(cli.get<std::string>("task-file"))
                                  : resolve_task(cli.get<std::string>("task"));
  } catch (const std::exception& e) {
    fail_usage(e.what());
  }
  auto& m = c.model;
  m.num_types = int64_t(c.task.types.size());
  m.payload_values = cli.get<int>("payload-values");
  m.payload_dim = cli.get<int>("payload-dim");
  m.embed = cli.get<int>("hidden");
  m.heads = cli.get<int>("heads");
  m.head_dim = cli.get<int>("head-dim");
  m.attention.variant = parse_variant(cli.get<std::string>("variant"));
  m.attention.min_grad = parse_min_grad(cli.get<std::string>("fpa-backward"));
  m.attention.st_temperature = cli.get<double>("st-temperature");
  m.attention.impl = choose_impl(cli.get<std::string>("impl"), m.attention.variant, m.attention.min_grad);
  m.increment_bias_init = cli.get<double>("increment-bias-init");
  m.fox_gate_bias_set = cli.has("fox-gate-bias-init");
  if (m.fox_gate_bias_set) m.fox_gate_bias_init = cli.get<double>("fox-gate-bias-init");
  c.n = cli.get<int>("length");
  c.batch = cli.get<int>("batch");
  c.steps = cli.get<int>("steps");
  c.lr = cli.get<double>("lr");
  c.warmup = cli.get<int>("warmup");
  c.lr_final = cli.get<double>("lr-final");
  c.weight_decay = cli.get<double>("weight-decay");
  c.eval_every = cli.get<int>("eval-every");
  c.eval_seqs = cli.get<int>("eval-seqs");
  c.seed = cli.seed();
  return c;
}

RunConfig run_config_from_args(const std::vector<std::string>& args) {
  Cli cli("synthetic-run", "", "run.csv");
  add_run_options(cli);
  std::vector<std::string> storage = {"synthetic-run"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  cli.parse(int(argv.size()), argv.data());
  return run_config_from(cli);
}

std::string fpa_grad_label(const RunConfig& c) {
  return c.model.attention.variant == Variant::Fpa ? to_string(c.model.attention.min_grad) : "n/a";
}

}  // namespace fpa::synthetic
