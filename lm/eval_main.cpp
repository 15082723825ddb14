// lm-eval: validation and test perplexity and bits per byte of a checkpoint, the loss per token
// position (averaged over windows, each starting at a document's start or a window boundary), and
// optionally the one-row summary of SPEC section 7 (with the training run's seed and config file).
// The study itself is run_lm_eval and report_lm_eval (eval_study.h).
#include "experiments/cli.h"
#include "experiments/execution.h"
#include "lm/checkpoint_option.h"
#include "experiments/torch_runtime.h"
#include "lm/checkpoint.h"
#include "lm/corpus.h"
#include "lm/corpus_tokenizer.h"
#include "lm/eval_study.h"
#include "lm/memory.h"

#include <fmt/format.h>

#include <iostream>

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
       "truncate each document to this many tokens (bytes for a byte-level model; 0: whole "
       "documents)");
  cli.range("batch", 1, 1e6);
  cli.range("max-tokens-per-doc", 0, 1e12);
  lm::declare_checkpoint_input(cli);
  declare_execution_options(cli);
  cli.input("corpus", PathKind::Dir);
  cli.output("positions", PathKind::File);
  cli.output("summary", PathKind::File);
  cli.empty_means_none("positions");
  cli.empty_means_none("summary");
  cli.parse(argc, argv);

  LmEvalSettings settings;
  settings.batch = cli.get<int64_t>("batch");
  settings.max_tokens_per_doc = cli.get<int64_t>("max-tokens-per-doc");
  settings.out = cli.out();
  settings.positions = cli.get<std::string>("positions");
  settings.summary = cli.get<std::string>("summary");
  try {
    set_threads(cli.threads());
    const auto execution = execution_of(cli);
    auto loaded = load_model(cli.get<std::string>("checkpoint"));
    loaded.model->use_device(execution.device);
    const auto corpus = load_corpus(cli.get<std::string>("corpus"));
    // The checkpoint's tokenizer, from beside the corpus, checked against its recorded SHA-256.
    settings.tokenizer = recorded_tokenizer(loaded.progress.tokenizer, cli.get<std::string>("corpus"));
    require_forward_memory(loaded.config, settings.batch,
                           fmt::format("lm-eval with --batch {}", settings.batch));
    const auto result = [&] {
      AutocastScope autocast(execution);
      return run_lm_eval(settings, loaded, corpus);
    }();
    auto prov = Provenance::from(cli);
    const auto trained = training_record(cli.get<std::string>("checkpoint"));
    prov.config["train-seed"] = trained.seed;  // recorded in every sidecar
    prov.config["train-config"] = trained.config;
    prov.config["tokenizer"] = settings.tokenizer.identity();
    report_lm_eval(result, settings, loaded, corpus, trained, prov);
    return 0;
  } catch (const UsageError& e) {  // a corrupt checkpoint or corpus, found before evaluating
    fail_usage(e.what());
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::cerr << "error: " << msg.substr(0, msg.find('\n')) << std::endl;
    return 1;
  }
}
