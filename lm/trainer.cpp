#include "lm/trainer.h"

#include "experiments/atomic_file.h"
#include "experiments/cli.h"
#include "experiments/progress.h"
#include "experiments/run_dir.h"
#include "lm/checkpoint.h"
#include "lm/corpus.h"
#include "lm/data.h"
#include "lm/evaluate.h"
#include "lm/train_loop.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <sstream>
#include <iostream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace fpa::lm {

const char* train_log_header() { return "step,tokens,train_loss,val_loss,lr,elapsed_s"; }

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

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
  need(o.model.vocab_size == 256,
       fmt::format("this suite's tokenizer is byte-level (256 tokens); the model has vocab_size {} "
                   "(the paper preset needs a sub-word tokenizer, see lm/README.md)",
                   o.model.vocab_size));
}

std::string log_text(const TrainProgress& p) { return std::string(train_log_header()) + "\n" + p.log_rows; }

void write_log(const TrainOptions& o, const TrainProgress& p) {
  const auto log = (fs::path(o.out_dir) / "log.csv").string();
  if (!o.log_provenance.empty()) write_file_atomic(log + ".json", o.log_provenance);
  write_file_atomic(log, log_text(p));
}

// A kill between the checkpoint's rename and the log's leaves the log behind (or absent): the
// checkpoint holds the rows it covers, so the log is rebuilt from them.
void sync_log(const TrainOptions& o, const TrainProgress& p) {
  const auto log = (fs::path(o.out_dir) / "log.csv").string();
  if (read_file(log) == log_text(p) && (o.log_provenance.empty() || fs::exists(log + ".json"))) return;
  write_log(o, p);
  std::cerr << fmt::format("lm-train: {} rebuilt from the checkpoint (step {})\n", log, p.step);
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

}  // namespace

TrainOutcome train(const TrainOptions& o, Communicator& comm) {
  const int rank = comm.rank(), world = comm.world_size();
  const bool lead = rank == 0;
  check_options(o, world);
  const auto& t = o.train;
  const int64_t context = o.model.context;

  const auto corpus = load_corpus(o.corpus_dir);
  WindowSampler sampler(token_stream(corpus.train), context + 1, o.seed);
  const auto val_windows = leading_windows(token_stream(corpus.validation), context + 1,
                                           t.val_windows);

  torch::manual_seed(o.seed);
  LanguageModel model(o.model);
  auto optimizer = make_optimizer(model, t);

  TrainProgress progress;
  progress.preset = o.preset_name;
  const auto ckpt = checkpoint_path(o.out_dir);
  const auto seen = file_version(ckpt);
  if (!seen.empty()) {
    if (!o.resume)
      throw UsageError(fmt::format(
          "--out-dir '{}' already holds a run; pass --resume to continue it or choose another "
          "--out-dir", o.out_dir));
    progress = resume_checkpoint(ckpt, model, *optimizer);
    sampler.set_state(progress.sampler_state);
  } else if (o.resume && lead) {  // --resume makes a script restart-safe: it starts what is not there
    std::cerr << fmt::format("lm-train: --resume: no checkpoint in '{}'; starting a new run\n",
                             o.out_dir);
  }
  std::optional<RunLock> lock;  // rank 0 writes the run directory
  if (lead) {
    lock.emplace(o.out_dir);
    if (file_version(ckpt) != seen)
      throw UsageError(fmt::format("checkpoint '{}' changed while this run started: another "
                                   "process writes --out-dir '{}'", ckpt, o.out_dir));
    remove_stale_temps(o.out_dir);
    if (!seen.empty()) {
      std::cerr << fmt::format("resuming {} at step {}\n", o.out_dir, progress.step);
      sync_log(o, progress);
    }
    std::cerr << fmt::format(  // after the checks above, so that bad input gets one line only
        "lm-train: preset {} variant {} impl {} fpa-backward {} ranks {}: {} parameters "
        "(gate/increment projections {})\n",
        o.preset_name, to_string(o.model.kind), fpa::to_string(o.model.impl),
        fpa::to_string(o.model.min_grad), world, model->parameter_count(),
        model->gate_parameter_count());
  }

  TrainOutcome out;
  out.params = model->parameter_count();
  const int64_t per_rank = t.batch / world, micro = per_rank / t.accum;
  std::vector<torch::Tensor> params = model->parameters();
  Progress bar(fmt::format("lm-train {}", to_string(o.model.kind)), t.steps, "step");
  bar.resume_at(progress.step);
  const auto wall_start = Clock::now();
  const double elapsed_before = progress.elapsed_s;
  double last_val = std::nan("");

  Clock::time_point step_start;
  TrainLoopHooks hooks;
  hooks.forward_backward = [&](int64_t step) {
    step_start = Clock::now();
    const auto rows = sampler.next_batch(t.batch).narrow(0, rank * per_rank, per_rank);
    auto loss_sum = torch::zeros({1});
    for (int64_t a = 0; a < t.accum; ++a) {
      const auto loss = model->loss(rows.narrow(0, a * micro, micro)) / double(t.accum);
      loss.backward();
      loss_sum += loss.detach();
    }
    std::vector<at::Tensor> to_reduce;
    for (auto& p : params) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      to_reduce.push_back(p.grad());
    }
    to_reduce.push_back(loss_sum);
    comm.all_reduce_mean(to_reduce);
    return step + 1 == o.fault_nan_at_step ? std::nan("") : loss_sum.item<double>();
  };
  hooks.after_step = [&](int64_t done, double train_loss, double lr) {
    progress.step = done;
    progress.tokens += t.batch * context;
    progress.train_time_s += seconds_since(step_start);
    std::string val_cell;
    if (lead && (progress.step % t.val_every == 0 || progress.step == t.steps)) {
      model->eval();
      last_val = mean_window_loss(model, val_windows, t.batch);
      model->train();
      val_cell = fmt::format("{:.6f}", last_val);
    }
    progress.elapsed_s = elapsed_before + seconds_since(wall_start);
    progress.log_rows += fmt::format("{},{},{:.6f},{},{:.6g},{:.3f}\n", progress.step,
                                     progress.tokens, train_loss, val_cell, lr,
                                     progress.elapsed_s);
    if (lead && o.show_progress)
      bar.update(progress.step,
                 fmt::format("loss {:.4f} {:.0f} tok/s", train_loss,
                             progress.tokens / std::max(1e-9, progress.train_time_s)));
    if (progress.step == o.stop_after_steps) return true;  // tests: as if killed here
    if (lead && (progress.step % t.checkpoint_every == 0 || progress.step == t.steps)) {
      progress.sampler_state = sampler.state();
      save_checkpoint(ckpt, model, *optimizer, progress);
      write_log(o, progress);
    }
    return false;
  };
  const auto loop = run_train_loop(model, *optimizer, t, progress.step, hooks);
  if (loop.diverged) {
    out.diverged = true;
    out.steps_done = loop.steps_done;
    out.message = fmt::format(
        "training loss is {} at step {}; stopped. The last good checkpoint is {} (step {})",
        loop.loss, loop.steps_done + 1, fs::exists(ckpt) ? ckpt : std::string("(none yet)"),
        fs::exists(ckpt) ? read_checkpoint_progress(ckpt, nullptr).step : 0);
    return out;
  }
  if (loop.stopped) {  // tests: --stop-after, no final checkpoint
    out.steps_done = loop.steps_done;
    return out;
  }
  if (lead && o.show_progress) bar.finish();
  comm.barrier();  // every rank ends after the final checkpoint exists
  out.steps_done = progress.step;
  out.final_val_loss = std::isnan(last_val) ? last_val_loss(progress.log_rows) : last_val;
  out.tokens_per_s = progress.tokens / std::max(1e-9, progress.train_time_s);
  return out;
}

}  // namespace fpa::lm
