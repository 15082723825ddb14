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

Batch held_out(const RunConfig& c, int64_t n) {
  auto rng = stream(c.seed, kHeldOutStream + uint32_t(n) * 16);
  return sample_batch(c.task, payload_table(c), c.eval_seqs, n, rng);
}

Batch on_device(const Batch& b, const torch::Device& device) {
  return {b.types.to(device), b.payloads.to(device), b.field.to(device), b.targets.to(device),
          b.y.to(device)};
}

Metrics evaluate(TargetSetModel& model, const Batch& batch, const Execution& execution) {
  torch::NoGradGuard no_grad;
  model->eval();
  const auto data = on_device(batch, execution.device);
  AutocastScope autocast(execution);
  auto out = model->forward(data.types, data.payloads);
  auto weights = model->attention_weights(out).to(at::kFloat);          // (B, H, N, N)
  auto on_target = (weights * data.targets.unsqueeze(1).to(weights.scalar_type())).sum(-1);
  auto per_head = on_target.mean(at::IntArrayRef{0, 2});                               // (H)
  Metrics m;
  m.mass = per_head.mean().item<double>();
  m.mass_best = per_head.max().item<double>();
  m.mse = (out.y.to(at::kFloat) - data.y).pow(2).mean().item<double>();
  const auto flat = data.y.reshape({-1, data.y.size(-1)});
  const double var = flat.var(0, /*unbiased=*/false).mean().item<double>();
  m.nmse = m.mse / var;
  model->train();
  return m;
}

namespace {

// The loop's task: fresh sequences each step, the MSE, and the training curve (the held-out
// metrics at n every eval_every steps, with the mean training loss since the previous point).
class TargetSetTask final : public TrainTask {
 public:
  TargetSetTask(const RunConfig& c, TargetSetModel& model, RunResult& r)
      : c_(c), model_(model), r_(r), table_(payload_table(c)), eval_n_(held_out(c, c.n)),
        rng_(stream(c.seed, kTrainStream)) {
    record(0, std::numeric_limits<double>::quiet_NaN());
  }

  double forward_backward(int64_t, int64_t& tokens) override {
    const auto batch = on_device(sample_batch(c_.task, table_, c_.batch, c_.n, rng_), c_.execution.device);
    const auto loss = [&] {
      AutocastScope autocast(c_.execution);  // the forward only: backward runs outside autocast
      auto out = model_->forward(batch.types, batch.payloads);
      return torch::mse_loss(out.y.to(at::kFloat), batch.y);
    }();
    const double value = loss.item<double>();
    if (!std::isfinite(value)) return value;
    loss.backward();
    tokens += c_.batch * c_.n;
    loss_sum_ += value;
    ++loss_count_;
    return value;
  }

  void evaluate(int64_t done) override {
    if (done % c_.eval_every != 0 && done != c_.steps) return;
    record(done, loss_sum_ / double(loss_count_));
    loss_sum_ = 0;
    loss_count_ = 0;
  }

  std::string log_header() const override { return "step,loss"; }
  std::string log_row(const StepRecord& r) const override { return fmt::format("{},{}", r.step, r.loss); }
  std::string progress_note(const StepRecord& r) const override { return fmt::format("loss {:.4f}", r.loss); }

 private:
  void record(int64_t step, double loss) {
    CurvePoint p{step, step > 0 ? learning_rate(c_, step - 1) : 0.0, loss,
                 synthetic::evaluate(model_, eval_n_, c_.execution)};
    if (r_.steps_to_converge < 0 && converged(p.held_out)) r_.steps_to_converge = step;
    r_.curve.push_back(p);
  }

  const RunConfig& c_;
  TargetSetModel& model_;
  RunResult& r_;
  at::Tensor table_;
  Batch eval_n_;
  std::mt19937_64 rng_;
  double loss_sum_ = 0;
  int64_t loss_count_ = 0;
};

}  // namespace

RunResult train_run(const RunConfig& c, TargetSetModel& model, const std::string& progress_label) {
  const auto start = std::chrono::steady_clock::now();
  RunResult r;
  model->to(c.execution.device);  // built on the CPU: the same weights on every device
  TargetSetTask task(c, model, r);
  torch::optim::AdamW opt(model->parameters(),
                          torch::optim::AdamWOptions(c.lr).weight_decay(c.weight_decay));
  TrainRun run;
  run.tool = "synthetic-run";
  run.progress_label = progress_label;
  run.show_progress = !progress_label.empty();
  SingleProcess one;
  const auto outcome = fpa::train({*model, opt, nullptr, c.execution.device}, c, task, run, one);
  if (outcome.diverged)
    throw std::runtime_error(outcome.message.substr(0, outcome.message.find(';')));
  r.final_n = r.curve.back().held_out;
  r.final_2n = evaluate(model, held_out(c, 2 * c.n), c.execution);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace fpa::synthetic
