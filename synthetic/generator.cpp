#include "generator.h"

#include "kernels/attention.h"

#include <fmt/format.h>

#include <stdexcept>

namespace fpa::synthetic {

at::Tensor make_payload_table(int values, int dim, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  auto table = at::empty({values, dim}, at::kFloat);
  auto t = table.accessor<float, 2>();
  for (int v = 0; v < values; ++v)
    for (int d = 0; d < dim; ++d) t[v][d] = float(normal(rng));
  return table;
}

Batch make_batch(const Task& task, const at::Tensor& payload_table,
                 const std::vector<std::vector<int64_t>>& types,
                 const std::vector<std::vector<int64_t>>& payloads) {
  const int64_t b = int64_t(types.size());
  if (b == 0 || payloads.size() != types.size())
    throw std::invalid_argument("make_batch: need equal, non-zero numbers of sequences");
  const int64_t n = int64_t(types[0].size());
  Batch out;
  out.types = at::empty({b, n}, at::kLong);
  out.payloads = at::empty({b, n}, at::kLong);
  out.field = at::empty({b, n}, at::kDouble);
  auto T = out.types.accessor<int64_t, 2>();
  auto P = out.payloads.accessor<int64_t, 2>();
  auto F = out.field.accessor<double, 2>();
  for (int64_t r = 0; r < b; ++r) {
    if (int64_t(types[r].size()) != n || int64_t(payloads[r].size()) != n)
      throw std::invalid_argument("make_batch: sequences must have equal lengths");
    double level = 0;
    for (int64_t t = 0; t < n; ++t) {
      const auto type = types[r][t];
      if (type < 0 || type >= int64_t(task.types.size()))
        throw std::invalid_argument(fmt::format("make_batch: type index {} out of range", type));
      if (payloads[r][t] < 0 || payloads[r][t] >= payload_table.size(0))
        throw std::invalid_argument("make_batch: payload index out of range");
      level += task.types[type].increment;
      T[r][t] = type;
      P[r][t] = payloads[r][t];
      F[r][t] = level;
    }
  }
  // Target sets: the tau = 0 alive sets of the ground-truth field, through the theory's own
  // functions. The field is float64, so integer levels compare exactly.
  out.targets = fpa::alive_sets(fpa::fpa_bias(out.field), 0.0);
  auto weights = out.targets.to(at::kFloat);
  weights = weights / weights.sum(-1, /*keepdim=*/true);  // i is always in S_i: no zero rows
  out.y = at::matmul(weights, payload_table.index_select(0, out.payloads.reshape(-1))
                                  .reshape({b, n, payload_table.size(1)}));
  return out;
}

Batch sample_batch(const Task& task, const at::Tensor& payload_table, int64_t batch, int64_t n,
                   std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> payload(0, payload_table.size(0) - 1);
  std::vector<std::vector<int64_t>> types(batch, std::vector<int64_t>(n));
  std::vector<std::vector<int64_t>> payloads(batch, std::vector<int64_t>(n));
  for (int64_t r = 0; r < batch; ++r) {
    double level = 0;
    int previous = -1;
    for (int64_t t = 0; t < n; ++t) {
      const int64_t c = draw_type(task, level, previous, rng);
      types[r][t] = c;
      previous = int(c);
      level += task.types[c].increment;
      payloads[r][t] = payload(rng);
    }
  }
  return make_batch(task, payload_table, types, payloads);
}

}  // namespace fpa::synthetic
