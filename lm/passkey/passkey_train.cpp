// passkey-train: trains an lm/ model on sequences of length L only, passkey prompts mixed with
// optional corpus text (lm/passkey/batch.h). The study is lm/passkey/train_task.h; the training
// (resume, log, checkpoints in lm/'s format, exit codes) is the suite's one training loop,
// experiments/train_loop.h, as lm-train's. This file maps the command line to the model, the
// training and the task.
#include "experiments/cli.h"
#include "experiments/execution.h"
#include "kernels/impl_choice.h"
#include "experiments/run_dir.h"
#include "experiments/provenance.h"
#include "experiments/torch_runtime.h"
#include "lm/memory.h"
#include "lm/passkey/filler.h"
#include "lm/passkey/train_run.h"
#include "lm/settings.h"

#include <fmt/format.h>

#include <iostream>

using namespace fpa;

namespace {

// The model and training settings passkey-train takes (lm/settings.h), with its defaults. The
// token embedding is not decayed (decay-embeddings false): every published passkey run was trained
// so (lm-train decays it); weights start at N(0, 0.05) (lm: 0.02; passkey models stay at chance
// with it, see README).
const lm::ToolSettings kSettings{{{"variant", "fpa"}, {"steps", "900"}, {"batch", "8"},
                                  {"length", "512"}, {"lr", "0.003"}, {"warmup", "50"},
                                  {"min-lr-ratio", "0.1"}, {"hidden", "128"}, {"layers", "2"},
                                  {"heads", "4"}, {"fpa-backward", "straight-through"},
                                  {"st-temperature", "1"}, {"impl", "auto"}, {"init-std", "0.05"},
                                  {"untie-embeddings", "false"}, {"decay-embeddings", "false"},
                                  {"checkpoint-every", "50"}}};

}  // namespace

int main(int argc, char** argv) {
  Cli cli("passkey-train",
          "train an FPA/FoX/Transformer model on length-L passkey prompts (optionally mixed with "
          "corpus text), with atomic checkpoints and --resume",
          "");
  lm::add_options(cli, kSettings);
  cli.add()
      ("out-dir", po::value<std::string>(), "run directory (checkpoint.pt, train_log.csv); required")
      ("embed-std", po::value<double>()->default_value(0.0), "std of the token embedding's normal initialisation; 0: --init-std")
      ("gate-bias", po::value<std::string>()->default_value(""), "initial per-head gate/increment bias, e.g. 0,0,5,5 (default: lm's init)")
      ("answer-weight", po::value<double>()->default_value(1.0), "weight of the answer-digit CE added to the mean CE")
      ("corpus", po::value<std::string>()->default_value(""), "directory of text documents for the mixture (lm corpus format)")
      ("corpus-fraction", po::value<double>()->default_value(0.0), "fraction of each batch that is corpus text")
      ("key-digits", po::value<int>()->default_value(5), "passkey length in digits")
      ("curriculum", po::value<std::string>()->default_value(""), "shorter sequences first: LENGTH:STEPS[,LENGTH:STEPS...] before --length (e.g. 320:400)")
      ("check-every", po::value<int64_t>()->default_value(0), "steps between held-out checks of the answer at --length (greedy, full cache); 0: none")
      ("check-keys", po::value<int64_t>()->default_value(40), "held-out prompts per check (depths spread over the prompt)")
      ("learned-accuracy", po::value<double>()->default_value(0.95), "held-out accuracy at which a run has learned the task")
      ("stop-when-learned", po::bool_switch()->default_value(false), "stop (with a checkpoint) at the first check that reaches --learned-accuracy; --steps is then a cap")
      ("stop-after", po::value<int64_t>()->default_value(0), "stop (with a checkpoint) after this many steps in this invocation; 0: run to --steps (tests of --resume)")
      ("resume", po::bool_switch()->default_value(false), "continue from <out-dir>/checkpoint.pt if present");
  cli.range("answer-weight", 0, 1e6);
  cli.range("embed-std", 0, 10);
  cli.range("corpus-fraction", 0, 1);
  cli.range("key-digits", 1, 18);
  cli.range("check-every", 0, 1e9);
  cli.range("check-keys", 1, 1e5);
  cli.range("learned-accuracy", 0, 1);
  cli.require([](const po::variables_map& vm) {
    return !vm["stop-when-learned"].as<bool>() || vm["check-every"].as<int64_t>() > 0;
  }, "--stop-when-learned needs --check-every > 0");
  cli.range("stop-after", 0, 1e9);
  cli.require([](const po::variables_map& vm) { return vm.count("out-dir") > 0; }, "--out-dir is required");
  cli.require([](const po::variables_map& vm) {
    return vm["corpus-fraction"].as<double>() == 0 || !vm["corpus"].as<std::string>().empty();
  }, "--corpus-fraction > 0 needs --corpus");
  cli.input("corpus", PathKind::Dir);
  passkey::add_filler_options(cli, {"repeated", "corpus-train"}, /*declare_corpus=*/false);
  declare_execution_options(cli);
  cli.output("out-dir", PathKind::Dir, {"checkpoint.pt", "train_log.csv.json", kRunLockName});
  cli.parse(argc, argv);
  passkey::PromptConfig pc;
  pc.key_digits = cli.get<int>("key-digits");
  const int64_t final_length = cli.get<int64_t>("length");
  if (final_length < pc.fixed_bytes() || final_length > lm::kMaxSequenceLength)
    fail_usage(fmt::format("--length must be in [{}, 1e7]: the prompt's fixed parts take {} bytes "
                           "with --key-digits {}", pc.fixed_bytes(), pc.fixed_bytes(), pc.key_digits));
  const auto gate_bias = cli.get<std::string>("gate-bias").empty()
                             ? std::vector<double>{}
                             : split_double_list(cli.get<std::string>("gate-bias"), "gate-bias", -1e3, 1e3);

  try {
    passkey::TrainSettings s;
    s.task.curriculum =
        passkey::parse_curriculum(cli.get<std::string>("curriculum"), final_length, pc.fixed_bytes());
    set_threads(cli.threads());
    s.execution = execution_of(cli);
    lm::apply_options(cli, kSettings, s.model, s.train);  // lm's AdamW and clipping otherwise
    s.model.impl = choose_impl(cli.get<std::string>("impl"), lm::operator_variant(s.model.kind),
                               s.model.fpa_backward, s.execution.device.type());
    s.model.validate();
    lm::require_training_memory(s.model, s.train.batch, "passkey-train");
    passkey::apply_filler_options(cli, pc);
    s.prompt = pc;
    s.task.final_length = final_length;
    s.task.batch = s.train.batch;
    s.task.answer_weight = cli.get<double>("answer-weight");
    s.task.check_every = cli.get<int64_t>("check-every");
    s.task.learned_accuracy = cli.get<double>("learned-accuracy");
    s.task.stop_when_learned = cli.flag("stop-when-learned");
    s.check_keys = cli.get<int64_t>("check-keys");
    s.corpus_dir = cli.get<std::string>("corpus");
    s.corpus_fraction = cli.get<double>("corpus-fraction");
    s.embed_std = cli.get<double>("embed-std");
    s.gate_bias = gate_bias;
    s.seed = cli.seed();
    s.run.out_dir = cli.get<std::string>("out-dir");
    s.run.out_copy = cli.out();
    s.run.resume = cli.flag("resume");
    s.run.provenance = [&cli] { return Provenance::from(cli).to_json(); };
    s.run.stop_after = cli.get<int64_t>("stop-after");

    const auto outcome = passkey::train_passkey(s);
    if (outcome.diverged) {  // exit code 3, as lm-train's (lm/README.md)
      std::cerr << "error: " << outcome.message << "\n";
      return 3;
    }
    if (outcome.nothing_to_do.empty())
      std::cerr << fmt::format("passkey-train: done, {} steps, {}\n", outcome.steps_done,
                               cli.out().empty() ? s.run.out_dir + "/train_log.csv" : cli.out());
  } catch (const UsageError& e) {  // bad input found before training: exit 2
    fail_usage(e.what());
  } catch (const std::invalid_argument& e) {
    fail_usage(e.what());
  } catch (const std::exception& e) {
    std::cerr << "error: " << one_line(e.what()) << "\n";
    return 1;
  }
  return 0;
}
