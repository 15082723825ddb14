#include "lm/compress/compress_study.h"

#include "experiments/progress.h"
#include "lm/corpus_tokenizer.h"
#include "lm/decode.h"

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <stdexcept>
#include <utility>

namespace fpa::lm {

CompressResult run_compress(const CompressSettings& s, LoadedModel& loaded,
                            const std::vector<at::Tensor>& windows,
                            const std::vector<std::unique_ptr<cache::Policy>>& policies) {
  const auto variant = to_string(loaded.config.kind);
  IncrementalDecoder decoder(loaded.model);
  Progress bar("lm-compress " + s.run, int64_t(policies.size() * windows.size()), "window");
  int64_t done = 0;
  std::vector<CompressedLoss> results;
  std::optional<double> full_ppl;
  for (const auto& p : policies) {
    CompressedLoss total;
    for (const auto& window : windows) {
      total.add(score_window(decoder, window, *p, s.evict_every));
      bar.update(++done, fmt::format("{} {}", p->csv_name(), p->budgeted() ? fmt::format("{}", p->settings().budget) : ""));
    }
    if (!std::isfinite(total.nll))
      throw std::runtime_error(fmt::format("the loss under {} is {}", p->name(), total.nll));
    if (p->keeps_everything()) full_ppl = total.perplexity();
    results.push_back(total);
  }
  bar.finish();
  // Every policy scores the same windows: one count of bytes (= tokens for the bytes kind).
  int64_t bytes = 0;
  for (const auto& window : windows) bytes += predicted_bytes(s.tokenizer, window);

  const bool subword = s.tokenizer.kind() != TokenizerKind::Bytes;
  std::vector<std::string> compress_columns = {
      "variant", "run", "split", "policy", "budget", "epsilon", "per_head", "occupancy",
      "nll_per_token", "ppl", "bpb", "ppl_increase", "windows", "tokens",
      "decode_cpu_ms_per_token", "evict_every", "step"};
  if (subword) compress_columns.push_back("tokenizer");
  CsvWriter out(s.out, compress_columns);
  const auto row = [&](const auto&... values) {
    if (subword) out.row(values..., s.tokenizer.identity());
    else out.row(values...);
  };
  for (size_t k = 0; k < policies.size(); ++k) {
    const auto& p = *policies[k];
    const auto& r = results[k];
    const auto budget = p.keeps_everything() ? std::string("1")
                        : p.budgeted()       ? fmt::format("{}", p.settings().budget)
                                             : std::string();
    const auto eps = p.reads_epsilon() ? fmt::format("{}", p.settings().epsilon) : std::string();
    const double rise = full_ppl ? r.perplexity() / *full_ppl - 1 : NAN;
    const auto increase = full_ppl ? fmt::format("{}", rise) : std::string();
    // nll / bytes / ln 2: for the bytes kind bytes == tokens, so this is nll_per_token / ln 2.
    row(variant, s.run, s.split, p.csv_name(), budget, eps, int(p.per_head()), r.occupancy(),
        r.nll_per_token(), r.perplexity(), r.nll / double(bytes) / std::log(2.0), increase,
        windows.size(), r.tokens, r.decode_cpu_ms / double(r.tokens), s.evict_every, loaded.step);
    std::cerr << fmt::format("{} {} {}: ppl {:.4f}{}, occupancy {:.3f}\n", s.run, p.name(), budget,
                             r.perplexity(), full_ppl ? fmt::format(" ({:+.3f}%)", 100 * rise) : "",
                             r.occupancy());
  }
  return {std::move(out), std::move(results), full_ppl, bytes};
}

}  // namespace fpa::lm
