#include "lm/passkey/train_run.h"

#include "experiments/torch_runtime.h"
#include "lm/checkpoint.h"
#include "lm/corpus.h"
#include "lm/optimizer.h"
#include "lm/passkey/batch.h"
#include "lm/passkey/heldout.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <stdexcept>

namespace fpa::passkey {
namespace {

// Held-out prompts use their own key stream: neither the training data's (seed * 7919 + 17)
// nor passkey-eval's (its --seed, 1000 in the studies).
uint64_t heldout_seed(uint64_t seed) { return seed * 7919 + 424242; }

// Per-head initial bias of the gate/increment projection in every layer, e.g. FoX with
// forget gates near 1 on some heads ("0,0,5,5").
void set_gate_bias(lm::LanguageModel& model, const std::vector<double>& bias) {
  torch::NoGradGuard no_grad;
  for (auto& b : model->blocks) {
    auto& g = b->attn->gate_proj;
    if (!g) throw std::invalid_argument("--gate-bias needs a variant with a gate (fox, fpa)");
    if (int64_t(bias.size()) != g->bias.numel())
      throw std::invalid_argument(fmt::format("--gate-bias needs {} values (one per head)", g->bias.numel()));
    for (size_t h = 0; h < bias.size(); ++h) g->bias[int64_t(h)].fill_(bias[h]);
  }
}

}  // namespace

TrainOutcome train_passkey(const TrainSettings& s) {
  const auto& mc = s.model;
  // The implementation comes from a table and draws no random numbers (until 2026-12-02 a
  // probe did, so the seed is set after it as then): the same --seed gives the same run
  // whatever --impl resolves to. Runs trained before 2026-12-02 (the first c6 fpa-s1 and
  // fpa-s3) were seeded before that probe.
  seed_everything(s.seed);
  at::Tensor corpus;
  if (s.corpus_fraction > 0) corpus = lm::token_stream(lm::load_corpus(s.corpus_dir).train);
  BatchMaker data(s.prompt, mc.context, s.train.batch, s.corpus_fraction, corpus, s.seed * 7919 + 17);

  lm::LanguageModel model(mc);
  if (!s.gate_bias.empty()) set_gate_bias(model, s.gate_bias);
  if (s.embed_std > 0) {
    torch::NoGradGuard no_grad;
    model->embed->weight.normal_(0.0, s.embed_std);
  }
  const auto heldout = s.task.check_every > 0
                           ? make_heldout(s.prompt, mc.context, s.check_keys, heldout_seed(s.seed))
                           : HeldOutSet{};
  model->to(s.execution.device);  // drawn on the CPU: the same weights on every device
  auto task_options = s.task;
  task_options.execution = s.execution;
  PasskeyTask task(task_options, model, data, heldout);
  auto optimizer = lm::make_optimizer(model, s.train);
  lm::CheckpointFormat checkpoints(model, *optimizer, /*preset=*/"");

  TrainRun run = s.run;
  run.tool = "passkey-train";
  // The log lives in the run directory (its sidecar names the run's seed and --config for
  // passkey-eval and passkey-probe, lm::training_record); --out gets a copy.
  run.log_name = "train_log.csv";
  run.progress_label = "passkey-train " + run.out_dir;
  run.banner = fmt::format("passkey-train: {} params, {} of {} rows corpus, L = {}, filler {}{}",
                           model->parameter_count(), data.corpus_rows(), s.train.batch, mc.context,
                           s.prompt.filler_source,
                           s.execution.device.is_cpu() && !s.execution.autocast()
                               ? std::string()
                               : ", on " + s.execution.describe());
  run.checkpoint_every = s.train.checkpoint_every;
  SingleProcess one;
  return train({*model, *optimizer, &checkpoints, s.execution.device}, s.train, task, run, one);
}

}  // namespace fpa::passkey
