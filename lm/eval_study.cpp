#include "lm/eval_study.h"

#include "experiments/csv_writer.h"
#include "experiments/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace fpa::lm {

LmEvalResult run_lm_eval(const LmEvalSettings& s, LoadedModel& loaded, const Corpus& corpus) {
  Progress bar("lm-eval " + to_string(loaded.config.kind), 2, "split");
  LmEvalResult r;
  r.validation = evaluate_documents(loaded.model, corpus.validation, s.batch, s.max_tokens_per_doc,
                                    s.tokenizer);
  bar.update(1);
  r.test = evaluate_documents(loaded.model, corpus.test, s.batch, s.max_tokens_per_doc,
                              s.tokenizer);
  bar.finish();
  return r;
}

void report_lm_eval(const LmEvalResult& r, const LmEvalSettings& s, const LoadedModel& loaded,
                    const Corpus& corpus, const TrainingRecord& trained, const Provenance& prov) {
  const auto& c = loaded.config;
  const auto variant = to_string(c.kind);
  const auto& val = r.validation;
  const auto& test = r.test;
  CsvWriter eval(s.out, {"variant", "split", "documents", "tokens", "nll_per_token", "ppl", "bpb",
                         "step"});
  eval.row(variant, "validation", corpus.validation.size(), val.tokens,
           val.nll / double(val.tokens), val.perplexity(), val.bits_per_byte(), loaded.step);
  eval.row(variant, "test", corpus.test.size(), test.tokens, test.nll / double(test.tokens),
           test.perplexity(), test.bits_per_byte(), loaded.step);
  eval.commit(prov);

  if (!s.positions.empty()) {
    CsvWriter pos(s.positions, {"variant", "position", "val_loss", "test_loss", "val_windows",
                                "test_windows"});
    for (int64_t t = 0; t < c.context; ++t) {
      auto mean = [&](const DocumentEval& e) {
        return e.position_count[t] ? e.position_nll[t] / double(e.position_count[t]) : 0.0;
      };
      pos.row(variant, t, mean(val), mean(test), val.position_count[t], test.position_count[t]);
    }
    pos.commit(prov);
  }
  if (!s.summary.empty()) {
    const auto& p = loaded.progress;
    CsvWriter sum(s.summary, {"preset", "variant", "seed", "params", "train_tokens", "tokens_per_s",
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
}

}  // namespace fpa::lm
