// lm-eval: validation and test perplexity and bits per byte of a checkpoint, the loss per token
// position (averaged over windows, each starting at a document's start or a window boundary), and
// optionally the one-row summary of SPEC section 7 (with the training run's seed and config file).
#include "experiments/cli.h"
#include "experiments/csv_writer.h"
#include "experiments/progress.h"
#include "experiments/torch_runtime.h"
#include "lm/checkpoint.h"
#include "lm/corpus.h"
#include "lm/evaluate.h"
#include "lm/memory.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace fpa;
using namespace fpa::lm;

int main(int argc, char** argv) {
  Cli cli("lm-eval", "Perplexity, bits per byte and loss per position of an lm-train checkpoint.",
          "results/lm/eval.csv");
  cli.add()
      ("checkpoint", po::value<std::string>(), "run directory (or checkpoint file) of lm-train")
      ("corpus", po::value<std::string>()->default_value("data/brown/text"),
       "directory of plain-text documents (the same one the model was trained on)")
      ("positions", po::value<std::string>()->default_value(""),
       "CSV of loss per position (position, val_loss, test_loss); empty: none")
      ("summary", po::value<std::string>()->default_value(""),
       "one-row CSV with the columns of results/lm/summary.csv; empty: none")
      ("batch", po::value<int64_t>()->default_value(16), "windows per forward pass")
      ("max-tokens-per-doc", po::value<int64_t>()->default_value(0),
       "truncate each document to this many bytes (0: whole documents)");
  cli.range("batch", 1, 1e6);
  cli.range("max-tokens-per-doc", 0, 1e12);
  cli.require([](const po::variables_map& vm) { return vm.count("checkpoint") > 0; },
              "--checkpoint is required");
  cli.input("checkpoint", PathKind::Any);
  cli.input("corpus", PathKind::Dir);
  cli.output("positions", PathKind::File);
  cli.output("summary", PathKind::File);
  cli.parse(argc, argv);

  try {
    set_threads(cli.threads());
    auto loaded = load_model(cli.get<std::string>("checkpoint"));
    const auto corpus = load_corpus(cli.get<std::string>("corpus"));
    const auto batch = cli.get<int64_t>("batch"), cap = cli.get<int64_t>("max-tokens-per-doc");
    const auto& c = loaded.config;
    require_forward_memory(c, batch, fmt::format("lm-eval with --batch {}", batch));
    const auto variant = to_string(c.kind);

    Progress bar("lm-eval " + variant, 2, "split");
    const auto val = evaluate_documents(loaded.model, corpus.validation, batch, cap);
    bar.update(1);
    const auto test = evaluate_documents(loaded.model, corpus.test, batch, cap);
    bar.finish();

    auto prov = Provenance::from(cli);
    const auto trained = training_record(cli.get<std::string>("checkpoint"));
    prov.config["train-seed"] = trained.seed;      // recorded in every sidecar below
    prov.config["train-config"] = trained.config;
    CsvWriter eval(cli.out(), {"variant", "split", "documents", "tokens", "nll_per_token", "ppl",
                               "bpb", "step"});
    eval.row(variant, "validation", corpus.validation.size(), val.tokens,
             val.nll / double(val.tokens), val.perplexity(), val.bits_per_byte(), loaded.step);
    eval.row(variant, "test", corpus.test.size(), test.tokens, test.nll / double(test.tokens),
             test.perplexity(), test.bits_per_byte(), loaded.step);
    eval.commit(prov);

    if (const auto path = cli.get<std::string>("positions"); !path.empty()) {
      CsvWriter pos(path, {"variant", "position", "val_loss", "test_loss", "val_windows",
                           "test_windows"});
      for (int64_t t = 0; t < c.context; ++t) {
        auto mean = [&](const DocumentEval& e) {
          return e.position_count[t] ? e.position_nll[t] / double(e.position_count[t]) : 0.0;
        };
        pos.row(variant, t, mean(val), mean(test), val.position_count[t], test.position_count[t]);
      }
      pos.commit(prov);
    }
    if (const auto path = cli.get<std::string>("summary"); !path.empty()) {
      const auto& p = loaded.progress;
      CsvWriter sum(path, {"preset", "variant", "seed", "params", "train_tokens", "tokens_per_s",
                           "val_ppl", "test_ppl", "test_bpb", "val_bpb", "steps", "impl",
                           "fpa_backward", "gate_params", "config"});
      sum.row(p.preset, variant, trained.seed, loaded.model->parameter_count(), p.tokens,
              fmt::format("{:.1f}", p.tokens / std::max(1e-9, p.train_time_s)),
              fmt::format("{:.4f}", val.perplexity()), fmt::format("{:.4f}", test.perplexity()),
              fmt::format("{:.4f}", test.bits_per_byte()),
              fmt::format("{:.4f}", val.bits_per_byte()), p.step, to_string(c.impl),
              has_gate(c.kind) && c.kind == AttentionKind::Fpa ? to_string(c.fpa_backward) : "",
              loaded.model->gate_parameter_count(), trained.config);
      sum.commit(prov);
    }
    std::cerr << fmt::format("lm-eval {}: val ppl {:.4f} ({:.4f} bpb), test ppl {:.4f} ({:.4f} bpb)\n",
                             variant, val.perplexity(), val.bits_per_byte(), test.perplexity(),
                             test.bits_per_byte());
    return 0;
  } catch (const UsageError& e) {  // a corrupt checkpoint or corpus, found before evaluating
    fail_usage(e.what());
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::cerr << "error: " << msg.substr(0, msg.find('\n')) << std::endl;
    return 1;
  }
}
