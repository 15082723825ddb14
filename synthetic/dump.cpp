#include "dump.h"

#include "experiments/csv_writer.h"
#include "generator.h"

#include <fmt/format.h>

namespace fpa::synthetic {

void write_dump(const std::string& path, const RunConfig& c, TargetSetModel& model,
                const Provenance& provenance) {
  torch::NoGradGuard no_grad;
  model->eval();
  const auto full = held_out(c, c.n);
  auto types = full.types.slice(0, 0, 1), payloads = full.payloads.slice(0, 0, 1);
  auto out = model->forward(types, payloads);
  auto weights = model->attention_weights(out)[0].to(at::kDouble);  // (H, N, N)
  auto W = weights.accessor<double, 3>();
  const auto targets = full.targets[0].contiguous(), field = full.field[0].contiguous();
  const auto seq_types = full.types[0].contiguous();
  auto T = targets.accessor<bool, 2>();
  auto F = field.accessor<double, 1>();
  auto Y = seq_types.accessor<int64_t, 1>();
  const int64_t n = c.n, heads = weights.size(0);
  CsvWriter csv(path, {"kind", "head", "i", "j", "value", "label"});
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j) csv.row("attention", h, i, j, fmt::format("{:.6g}", W[h][i][j]), "");
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j)
      if (T[i][j]) csv.row("target", "", i, j, 1, "");
  if (out.gate.defined()) {
    const auto g = out.gate[0].to(at::kDouble).contiguous();
    auto G = g.accessor<double, 2>();
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t j = 0; j < n; ++j) csv.row("field", h, "", j, fmt::format("{:.6g}", G[h][j]), "");
  }
  for (int64_t j = 0; j < n; ++j) {
    csv.row("true_field", "", "", j, F[j], "");
    csv.row("type", "", "", j, Y[j], c.task.types[Y[j]].name);
  }
  csv.commit(provenance);
  model->train();
}

}  // namespace fpa::synthetic
