#include "lm/text_training.h"

#include "experiments/cli.h"
#include "lm/corpus.h"
#include "lm/corpus_tokenizer.h"
#include "lm/data.h"
#include "lm/evaluate.h"
#include "lm/checkpoint.h"
#include "lm/optimizer.h"

#include <fmt/format.h>

#include <cmath>
#include <sstream>
#include <vector>

namespace fpa::lm {

const char* train_log_header() { return "step,tokens,train_loss,val_loss,lr,elapsed_s"; }

namespace {

void check_options(const TrainOptions& o, int world) {
  const auto& t = o.train;
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw UsageError(what);
  };
  need(t.steps > 0 && t.batch > 0 && t.accum > 0, "steps, batch and accum must be positive");
  need(t.batch % world == 0,
       fmt::format("batch {} must be divisible by the number of ranks {}", t.batch, world));
  need((t.batch / world) % t.accum == 0,
       fmt::format("per-rank batch {} must be divisible by accum {}", t.batch / world, t.accum));
  if (o.tokenizer.kind() == TokenizerKind::Bytes)
    need(o.model.vocab_size == 256,
         fmt::format("the bytes tokenizer has 256 tokens; the model has vocab_size {} (a larger "
                     "vocabulary needs tokenizer = sentencepiece, see lm/README.md)",
                     o.model.vocab_size));
  else
    need(o.model.vocab_size == o.tokenizer.vocab_size(),
         fmt::format("the tokenizer ({}) does not have the model's vocab_size {}",
                     o.tokenizer.identity(), o.model.vocab_size));
}

// The last validation loss in the log rows (a run resumed with nothing left to train).
double last_val_loss(const std::string& rows) {
  double last = std::nan("");
  std::istringstream in(rows);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream fields(line);
    for (std::string c; std::getline(fields, c, ',');) cells.push_back(c);
    if (cells.size() > 3 && !cells[3].empty()) last = std::stod(cells[3]);
  }
  return last;
}

// A corpus whose splits hold no window of the context is bad input (exit 2), named by its folder.
template <class Make>
auto naming_corpus(const std::string& dir, Make&& make) {
  try {
    return make();
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("--corpus '{}': {}", dir, e.what()));
  }
}

class TextTask final : public TrainTask {
 public:
  TextTask(const TrainOptions& o, LanguageModel& model, Communicator& comm)
      : t_(o.train),
        exec_(o.execution),
        model_(model),
        comm_(comm),
        corpus_(load_corpus(o.corpus_dir)),
        sampler_(naming_corpus(o.corpus_dir, [&] {
          return WindowSampler(split_stream(o.tokenizer, corpus_.train), o.model.context + 1,
                               o.seed);
        })),
        val_windows_(naming_corpus(o.corpus_dir, [&] {
          return leading_windows(split_stream(o.tokenizer, corpus_.validation), o.model.context + 1,
                                 t_.val_windows);
        })),
        context_(o.model.context) {}

  std::string log_header() const override { return train_log_header(); }
  std::string data_state() const override { return sampler_.state(); }
  void set_data_state(const std::string& s) override { sampler_.set_state(s); }

  double forward_backward(int64_t, int64_t& tokens) override {
    const int world = comm_.world_size();
    const int64_t per_rank = t_.batch / world, micro = per_rank / t_.accum;
    // The whole global batch is drawn on every rank, so the data order is a single process's.
    const auto rows = sampler_.next_batch(t_.batch)
                          .narrow(0, comm_.rank() * per_rank, per_rank)
                          .to(exec_.device);
    auto loss_sum = torch::zeros({1}, torch::TensorOptions(exec_.device));
    for (int64_t a = 0; a < t_.accum; ++a) {
      const auto loss = [&] {
        AutocastScope autocast(exec_);  // the forward only: backward runs outside autocast
        return model_->loss(rows.narrow(0, a * micro, micro)) / double(t_.accum);
      }();
      loss.backward();
      loss_sum += loss.detach();
    }
    if (params_.empty()) params_ = model_->parameters();  // once: the model does not change
    std::vector<at::Tensor> to_reduce;
    for (auto& p : params_) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      to_reduce.push_back(p.grad());
    }
    to_reduce.push_back(loss_sum);
    comm_.all_reduce_mean(to_reduce);
    tokens += t_.batch * context_;
    return loss_sum.item<double>();
  }

  void evaluate(int64_t done) override {
    val_cell_.clear();
    if (done % t_.val_every != 0 && done != t_.steps) return;
    model_->eval();
    {
      AutocastScope autocast(exec_);
      last_val_ = mean_window_loss(model_, val_windows_, t_.batch);
    }
    model_->train();
    val_cell_ = fmt::format("{:.6f}", last_val_);
  }

  std::string log_row(const StepRecord& r) const override {
    return fmt::format("{},{},{:.6f},{},{:.6g},{:.3f}", r.step, r.tokens, r.loss, val_cell_, r.lr,
                       r.elapsed_s);
  }
  std::string progress_note(const StepRecord& r) const override {
    return fmt::format("loss {:.4f} {:.0f} tok/s", r.loss,
                       r.tokens / std::max(1e-9, r.train_time_s));
  }
  double last_val() const { return last_val_; }

 private:
  const TrainConfig& t_;
  Execution exec_;
  LanguageModel& model_;
  Communicator& comm_;
  Corpus corpus_;
  WindowSampler sampler_;
  at::Tensor val_windows_;
  int64_t context_;
  std::vector<at::Tensor> params_;
  std::string val_cell_;
  double last_val_ = std::nan("");
};

}  // namespace

TextOutcome train(const TrainOptions& o, Communicator& comm) {
  check_options(o, comm.world_size());
  // The task reads the corpus before the seed is set and the model drawn, as the published runs.
  LanguageModel model{nullptr};
  TextTask task(o, model, comm);
  torch::manual_seed(o.seed);
  model = LanguageModel(o.model);  // drawn on the CPU: the same weights on every device
  model->to(o.execution.device);
  auto optimizer = make_optimizer(model, o.train);
  CheckpointFormat checkpoints(model, *optimizer, o.preset_name, checkpoint_tokenizer(o.tokenizer));

  TrainRun run = o.run;
  run.tool = "lm-train";
  run.log_name = "log.csv";
  run.progress_label = fmt::format("lm-train {}", to_string(o.model.kind));
  run.banner = fmt::format(
      "lm-train: preset {} variant {} impl {} fpa-backward {} ranks {} on {}: {} parameters "
      "(gate/increment projections {}){}",
      o.preset_name, to_string(o.model.kind), fpa::to_string(o.model.impl),
      fpa::to_string(o.model.fpa_backward), comm.world_size(), o.execution.describe(),
      model->parameter_count(), model->gate_parameter_count(),
      o.tokenizer.kind() == TokenizerKind::Bytes ? "" : "; tokenizer " + o.tokenizer.identity());
  run.checkpoint_every = o.train.checkpoint_every;
  TextOutcome out;
  static_cast<TrainOutcome&>(out) =
      fpa::train({*model, *optimizer, &checkpoints, o.execution.device}, o.train, task, run, comm);
  out.final_val_loss = std::isnan(task.last_val()) ? last_val_loss(out.log_rows) : task.last_val();
  return out;
}

}  // namespace fpa::lm
