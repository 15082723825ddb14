#include "run_options.h"

#include "experiments/settings_table.h"
#include "experiments/execution.h"
#include "kernels/impl_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace fpa::synthetic {

namespace {

// The field table of one run (experiments/settings_table.h): flag, role, type, range, help and
// member. The task (a built-in name or a file) and the seed (--seed) are read beside it.
using R = SettingRole;
using T = SettingType;
const SettingsTable<RunConfig> kTable({
    {"variant", "", R::Identity, T::Text, 0, 0, "attention variant: softmax, fox, fpa",
     [](const RunConfig& c) { return to_string(c.model.attention.variant); },
     [](RunConfig& c, const std::string& v) { c.model.attention.variant = parse_variant(v); }},
    {"fpa-backward", "", R::Identity, T::Text, 0, 0, "FPA backward of the path minimum: exact, straight-through",
     [](const RunConfig& c) { return to_string(c.model.attention.fpa_backward); },
     [](RunConfig& c, const std::string& v) { c.model.attention.fpa_backward = parse_fpa_backward(v); }},
    {"st-temperature", "", R::Identity, T::Real, 1e-6, 1e6, "tau_s of the straight-through soft minimum",
     FPA_REAL_SETTING(RunConfig, model.attention.st_temperature)},
    {"impl", "", R::Execution, T::Text, 0, 0,
     "attention implementation: auto (the device's kernels: fused on the CPU), reference, fused, cuda",
     [](const RunConfig& c) { return to_string(c.model.attention.impl); },
     [](RunConfig& c, const std::string& v) {
       auto& a = c.model.attention;
       a.impl = choose_impl(v, a.variant, a.fpa_backward);
     }},
    {"heads", "", R::Identity, T::Int, 1, 64, "attention heads", FPA_INT_SETTING(RunConfig, model.heads)},
    {"head-dim", "", R::Identity, T::Int, 1, 1024, "head dimension (same for every model)", FPA_INT_SETTING(RunConfig, model.head_dim)},
    {"hidden", "", R::Identity, T::Int, 1, 4096, "model width (embeddings and attention input)", FPA_INT_SETTING(RunConfig, model.embed)},
    {"payload-values", "", R::Identity, T::Int, 1, 1 << 20, "number of payload values", FPA_INT_SETTING(RunConfig, model.payload_values)},
    {"payload-dim", "", R::Identity, T::Int, 1, 4096, "dimension of the payload vectors", FPA_INT_SETTING(RunConfig, model.payload_dim)},
    {"increment-bias-init", "", R::Identity, T::Real, -1e3, 1e3, "FPA: initial increment bias c_p",
     FPA_REAL_SETTING(RunConfig, model.increment_bias_init)},
    {"fox-gate-bias-init", "", R::Identity, T::Text, 0, 0,
     "FoX: initial gate bias c_f in [-1000, 1000] (empty: LibTorch's Linear init)",
     [](const RunConfig& c) { return c.model.fox_gate_bias_set ? setting_text(c.model.fox_gate_bias_init) : std::string(); },
     [](RunConfig& c, const std::string& v) {
       c.model.fox_gate_bias_set = !v.empty();
       if (v.empty()) return;
       const double x = setting_real(v);
       if (x < -1e3 || x > 1e3) throw std::invalid_argument(fmt::format("fox-gate-bias-init must be in [-1000, 1000], got {}", v));
       c.model.fox_gate_bias_init = x;
     }},
    {"length", "", R::Run, T::Int, 1, 1 << 16, "training sequence length n (held-out: n and 2n)", FPA_INT_SETTING(RunConfig, n)},
    {"batch", "", R::Run, T::Int, 1, 1 << 16, "sequences per step", FPA_INT_SETTING(RunConfig, batch)},
    {"steps", "", R::Run, T::Int, 1, 1 << 24, "optimiser steps", FPA_INT_SETTING(RunConfig, steps)},
    {"lr", "", R::Run, T::Real, 1e-12, 10, "peak AdamW learning rate", FPA_REAL_SETTING(RunConfig, lr)},
    {"warmup", "", R::Run, T::Int, 0, 1 << 24, "linear warm-up steps", FPA_INT_SETTING(RunConfig, warmup)},
    {"lr-final", "", R::Run, T::Real, 0, 1, "final learning rate as a fraction of --lr (cosine decay)", FPA_REAL_SETTING(RunConfig, min_lr_ratio)},
    {"weight-decay", "", R::Run, T::Real, 0, 10, "AdamW weight decay", FPA_REAL_SETTING(RunConfig, weight_decay)},
    {"eval-every", "", R::Run, T::Int, 1, 1 << 24, "steps between held-out evaluations (training curve)", FPA_INT_SETTING(RunConfig, eval_every)},
    {"eval-seqs", "", R::Run, T::Int, 1, 1 << 20, "held-out sequences at n and at 2n", FPA_INT_SETTING(RunConfig, eval_seqs)},
}, "synthetic-run setting");

const ToolSettings kOptions{{{"variant", "fpa"}, {"fpa-backward", "straight-through"}, {"st-temperature", "1"},
                             {"impl", "auto"}, {"heads", "1"}, {"head-dim", "8"}, {"hidden", "32"},
                             {"payload-values", "16"}, {"payload-dim", "8"}, {"increment-bias-init", "-1"},
                             {"fox-gate-bias-init", ""}, {"length", "64"}, {"batch", "32"}, {"steps", "1000"},
                             {"lr", "0.01"}, {"warmup", "100"}, {"lr-final", "0.1"}, {"weight-decay", "0.01"},
                             {"eval-every", "50"}, {"eval-seqs", "256"}}};

// synthetic-run's options named by `flags`, with its defaults.
ToolSettings run_options_named(const std::vector<std::string>& flags) {
  ToolSettings t;
  for (const auto& f : flags) {
    const auto it = std::find_if(kOptions.options.begin(), kOptions.options.end(),
                                 [&](const auto& o) { return o.first == f; });
    if (it == kOptions.options.end()) throw std::logic_error("'" + f + "' is not a synthetic-run option");
    t.options.push_back(*it);
  }
  return t;
}

}  // namespace

void add_shared_run_options(Cli& cli, const std::vector<std::string>& flags) {
  kTable.add_options(cli, run_options_named(flags));
}

std::vector<std::string> shared_run_args(const Cli& cli, const std::vector<std::string>& flags) {
  std::vector<std::string> args;
  for (const auto& f : flags)
    args.insert(args.end(), {"--" + f, settings_detail::given_text(cli.variables(), f, kTable.row(f).type)});
  return args;
}

void add_run_options(Cli& cli) {
  cli.add()
      ("task", po::value<std::string>()->default_value("dips"),
       "built-in task: dips, brackets, erase (or a path to a .task file)")
      ("task-file", po::value<std::string>(), "task table file (overrides --task); see synthetic/tasks/");
  cli.input("task-file", PathKind::File);
  cli.input("--task", PathKind::File, [](const Cli& c) {
    const auto task = c.get<std::string>("task");
    return is_task_path(task) ? std::vector<std::string>{task} : std::vector<std::string>{};
  });
  kTable.add_options(cli, kOptions);
  declare_execution_options(cli);
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
  c.model.num_types = int64_t(c.task.types.size());
  try {
    c.execution = execution_of(cli);
  } catch (const UsageError& e) {
    fail_usage(e.what());
  }
  try {
    kTable.apply_options(cli, kOptions, c);
    auto& a = c.model.attention;
    a.impl = choose_impl(cli.get<std::string>("impl"), a.variant, a.fpa_backward,
                         c.execution.device.type());
  } catch (const std::invalid_argument& e) {
    fail_usage(e.what());
  }
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

std::string config_key(const RunConfig& c) {
  std::string task = c.task.name + "[";
  for (const auto& t : c.task.types) {
    task += fmt::format("{}:{}:{}:{}:{}", t.name, t.increment, t.weight, t.min_level, t.max_level);
    for (const auto& a : t.after) task += "<" + a;  // only tables with `after` constraints
    task += ";";
  }
  task += "]";
  return fmt::format("task={} {} seed={}", task, kTable.identity_line(c), c.seed);
}

std::string fpa_grad_label(const RunConfig& c) {
  return c.model.attention.variant == Variant::Fpa ? to_string(c.model.attention.fpa_backward) : "n/a";
}

}  // namespace fpa::synthetic
