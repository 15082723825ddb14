#include "train.h"

#include "generator.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace fpa::synthetic {
namespace {

// Independent random streams of one run, all functions of the seed.
std::mt19937_64 stream(uint64_t seed, uint32_t which) {
  std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), which, 0x53594eu};
  return std::mt19937_64(seq);
}
constexpr uint32_t kPayloadStream = 1, kTrainStream = 2, kHeldOutStream = 3;

at::Tensor payload_table(const RunConfig& c) {
  auto rng = stream(c.seed, kPayloadStream);
  return make_payload_table(int(c.model.payload_values), int(c.model.payload_dim), rng);
}

}  // namespace

double learning_rate(const RunConfig& c, int64_t step) {
  if (step < c.warmup) return c.lr * double(step + 1) / double(c.warmup);
  const double span = double(std::max<int64_t>(1, c.steps - c.warmup));
  const double p = std::min(1.0, double(step - c.warmup) / span);
  return c.lr * (c.lr_final + (1 - c.lr_final) * 0.5 * (1 + std::cos(M_PI * p)));
}

Batch held_out(const RunConfig& c, int64_t n) {
  auto rng = stream(c.seed, kHeldOutStream + uint32_t(n) * 16);
  return sample_batch(c.task, payload_table(c), c.eval_seqs, n, rng);
}

Metrics evaluate(TargetSetModel& model, const Batch& data) {
  torch::NoGradGuard no_grad;
  model->eval();
  auto out = model->forward(data.types, data.payloads);
  auto weights = model->attention_weights(out);                         // (B, H, N, N)
  auto on_target = (weights * data.targets.unsqueeze(1).to(weights.scalar_type())).sum(-1);
  auto per_head = on_target.mean(at::IntArrayRef{0, 2});                               // (H)
  Metrics m;
  m.mass = per_head.mean().item<double>();
  m.mass_best = per_head.max().item<double>();
  m.mse = (out.y - data.y).pow(2).mean().item<double>();
  const auto flat = data.y.reshape({-1, data.y.size(-1)});
  const double var = flat.var(0, /*unbiased=*/false).mean().item<double>();
  m.nmse = m.mse / var;
  model->train();
  return m;
}

RunResult train_run(const RunConfig& c, TargetSetModel& model,
                    const std::function<void(int64_t, double)>& on_step) {
  const auto start = std::chrono::steady_clock::now();
  const auto table = payload_table(c);
  const auto eval_n = held_out(c, c.n);
  auto train_rng = stream(c.seed, kTrainStream);
  torch::optim::AdamW opt(model->parameters(),
                          torch::optim::AdamWOptions(c.lr).weight_decay(c.weight_decay));
  RunResult r;
  auto record = [&](int64_t step, double loss) {
    CurvePoint p{step, step > 0 ? learning_rate(c, step - 1) : 0.0, loss, evaluate(model, eval_n)};
    if (r.steps_to_converge < 0 && converged(p.held_out)) r.steps_to_converge = step;
    r.curve.push_back(p);
  };
  record(0, std::numeric_limits<double>::quiet_NaN());
  double loss_sum = 0;
  int64_t loss_count = 0;
  for (int64_t step = 0; step < c.steps; ++step) {
    for (auto& group : opt.param_groups())
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(learning_rate(c, step));
    const auto batch = sample_batch(c.task, table, c.batch, c.n, train_rng);
    auto out = model->forward(batch.types, batch.payloads);
    auto loss = torch::mse_loss(out.y, batch.y);
    const double value = loss.item<double>();
    if (!std::isfinite(value))
      throw std::runtime_error(fmt::format("training loss is {} at step {}", value, step + 1));
    opt.zero_grad();
    loss.backward();
    opt.step();
    loss_sum += value;
    ++loss_count;
    if (on_step) on_step(step + 1, value);
    if ((step + 1) % c.eval_every == 0 || step + 1 == c.steps) {
      record(step + 1, loss_sum / double(loss_count));
      loss_sum = 0;
      loss_count = 0;
    }
  }
  r.final_n = r.curve.back().held_out;
  r.final_2n = evaluate(model, held_out(c, 2 * c.n));
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace fpa::synthetic
