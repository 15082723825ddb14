#include "experiments/train_loop.h"

#include "experiments/atomic_file.h"
#include "experiments/cli.h"
#include "experiments/execution.h"
#include "experiments/progress.h"
#include "experiments/provenance.h"
#include "experiments/run_dir.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>

namespace fs = std::filesystem;

namespace fpa {

// min + (peak - min) * (1 + cos(pi p)) / 2, in this order of operations: the published runs'
// learning rates (the lm and passkey logs print them in full) are these doubles.
double learning_rate(const TrainSchedule& s, int64_t step) {
  if (step < s.warmup) return s.lr * double(step + 1) / double(s.warmup);
  const double span = std::max<int64_t>(1, s.steps - s.warmup);
  const double progress = std::min(1.0, double(step - s.warmup) / span);
  const double min_lr = s.lr * s.min_lr_ratio;
  return min_lr + 0.5 * (s.lr - min_lr) * (1.0 + std::cos(M_PI * progress));
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The run directory's log: header and the checkpointed rows, with its provenance sidecar.
class RunLog {
 public:
  RunLog(const TrainRun& run, const TrainTask& task)
      : run_(run), task_(task), path_((fs::path(run.out_dir) / run.log_name).string()) {}

  std::string text(const RunProgress& p) const { return task_.log_header() + "\n" + p.log_rows; }

  // On resume: the invocations that trained the run so far, from the sidecar the log has, go into
  // every sidecar this one writes; a note when one ran other code or on another kind of CPU.
  void record_earlier_invocations() const {
    const auto sidecar = path_ + ".json";
    if (!run_.provenance || !fs::exists(sidecar)) return;
    const auto earlier = invocations_in_sidecar(read_file(sidecar));
    record_resumed_from(earlier);
    if (const auto note = resumed_elsewhere(earlier, code_version(), this_machine()); !note.empty())
      std::cerr << fmt::format("{}: note: {}\n", run_.tool, note);
  }

  void write(const RunProgress& p) const {  // the sidecar first: no log without one
    if (run_.provenance) write_file_atomic(path_ + ".json", run_.provenance());
    write_file_atomic(path_, text(p));
  }

  bool in_sync(const std::string& path, const RunProgress& p) const {
    return read_file(path) == text(p) && (!run_.provenance || fs::exists(path + ".json"));
  }

  // A kill between the checkpoint's rename and the log's leaves the log behind (or absent): the
  // checkpoint holds the rows it covers, so the log is rebuilt from them.
  void sync(const RunProgress& p) const {
    if (in_sync(path_, p)) return;
    write(p);
    std::cerr << fmt::format("{}: {} rebuilt from the checkpoint (step {})\n", run_.tool, path_, p.step);
  }

  // --out, unless empty or the log itself: a copy of the log and its sidecar. After training the
  // log was just written; a run with nothing to do copies its training's log when the copy lags.
  void copy_out(const RunProgress& p) const {
    const auto& out = run_.out_copy;
    if (out.empty() || fs::weakly_canonical(out) == fs::weakly_canonical(path_)) return;
    if (in_sync(out, p) && (!run_.provenance || read_file(out + ".json") == read_file(path_ + ".json")))
      return;
    std::vector<std::pair<std::string, std::string>> files;
    if (run_.provenance) files.emplace_back(out + ".json", read_file(path_ + ".json"));
    files.emplace_back(out, read_file(path_));
    write_files_atomic(files);
  }

 private:
  const TrainRun& run_;
  const TrainTask& task_;
  std::string path_;
};

}  // namespace

TrainOutcome train(Trainee trainee, const TrainSchedule& schedule, TrainTask& task,
                   const TrainRun& run, Communicator& comm) {
  const bool lead = comm.rank() == 0;
  const bool has_dir = !run.out_dir.empty();
  if (has_dir && !trainee.checkpointer)
    throw std::logic_error("train: a run directory needs a checkpoint format");
  auto& optimizer = trainee.optimizer;
  const RunLog log(run, task);
  record_resumed_from({});  // this run's own, once resumed (a process may train several runs)

  // 1. The run directory: resume from its checkpoint, or refuse to overwrite a run.
  RunProgress progress;
  const auto ckpt = has_dir ? (fs::path(run.out_dir) / "checkpoint.pt").string() : std::string();
  const auto seen = has_dir ? file_version(ckpt) : std::string();
  if (!seen.empty()) {
    if (!run.resume)
      throw UsageError(fmt::format(
          "--out-dir '{}' already holds a run; pass --resume to continue it or choose another "
          "--out-dir", run.out_dir));
    progress = trainee.checkpointer->resume(ckpt);
    trainee.model.to(trainee.device);
    move_optimizer_state(optimizer, trainee.device);
    progress.log_rows = task.upgrade_log_rows(progress.log_rows);
    task.set_data_state(progress.sampler_state);
  } else if (has_dir && run.resume && lead) {  // --resume makes a script restart-safe
    std::cerr << fmt::format("{}: --resume: no checkpoint in '{}'; starting a new run\n", run.tool,
                             run.out_dir);
  }
  std::optional<RunLock> lock;  // rank 0 writes the run directory
  if (lead) {
    if (has_dir) {
      lock.emplace(run.out_dir);
      if (file_version(ckpt) != seen)
        throw UsageError(fmt::format("checkpoint '{}' changed while this run started: another "
                                     "process writes --out-dir '{}'", ckpt, run.out_dir));
      remove_stale_temps(run.out_dir);
      if (!seen.empty()) {
        std::cerr << fmt::format("{}: resuming {} at step {}\n", run.tool, run.out_dir, progress.step);
        log.record_earlier_invocations();
        log.sync(progress);
      }
    }
    if (!run.banner.empty()) std::cerr << run.banner << "\n";  // after the checks: bad input gets one line
  }

  TrainOutcome out;
  auto finish = [&](std::string nothing_to_do) {
    if (lead && !nothing_to_do.empty())
      std::cerr << fmt::format("{}: {} {}; nothing to do\n", run.tool, run.out_dir, nothing_to_do);
    if (lead && has_dir) log.copy_out(progress);
    out.steps_done = progress.step;
    out.nothing_to_do = std::move(nothing_to_do);
    out.log_rows = progress.log_rows;
    out.tokens_per_s = progress.tokens / std::max(1e-9, progress.train_time_s);
    return out;
  };
  // A resumed run with nothing left keeps its log and sidecar (the training's provenance).
  if (const auto reached = task.goal_reached_in(progress.log_rows); !reached.empty())
    return finish(reached);
  if (!seen.empty() && progress.step >= schedule.steps)
    return finish(fmt::format("reached the step cap ({})", schedule.steps));

  // 2. The steps.
  Progress bar(run.progress_label, schedule.steps, "step");
  bar.resume_at(progress.step);
  const auto wall_start = Clock::now();
  const double elapsed_before = progress.elapsed_s;
  const int64_t first_step = progress.step;
  const auto params = trainee.model.parameters();
  std::string goal;
  bool stopped = false, killed = false;
  double loss = 0;
  trainee.model.train();
  for (int64_t step = first_step; step < schedule.steps; ++step) {
    const double lr = learning_rate(schedule, step);
    for (auto& g : optimizer.param_groups()) g.options().set_lr(lr);
    optimizer.zero_grad();
    const auto step_start = Clock::now();
    loss = task.forward_backward(step, progress.tokens);
    if (step + 1 == run.fault_nan_at_step) loss = std::nan("");
    if (!std::isfinite(loss)) {  // no optimiser step with it
      out.diverged = true;
      out.steps_done = step;
      const bool saved = has_dir && fs::exists(ckpt);
      out.message = fmt::format(
          "training loss is {} at step {}; stopped. The last good checkpoint is {} (step {})", loss,
          step + 1, saved ? ckpt : std::string("(none yet)"),
          saved ? trainee.checkpointer->saved_step(ckpt) : 0);
      return out;
    }
    if (schedule.clip > 0) torch::nn::utils::clip_grad_norm_(params, schedule.clip);
    optimizer.step();
    const int64_t done = step + 1;

    // 3. Evaluation, the log row and the progress line.
    progress.step = done;
    progress.train_time_s += seconds_since(step_start);
    if (lead) {
      task.evaluate(done);
      goal = task.goal_reached();
    }
    progress.elapsed_s = elapsed_before + seconds_since(wall_start);
    const StepRecord r{done, progress.tokens, loss, lr, progress.elapsed_s, progress.train_time_s};
    progress.log_rows += task.log_row(r) + "\n";
    if (lead && run.show_progress) bar.update(done, task.progress_note(r));
    if (done == run.kill_after_steps) {  // tests: as if killed here (no checkpoint, no --out)
      killed = true;
      break;
    }

    // 4. Checkpoints: every checkpoint_every steps, at the end, and when the run stops early.
    stopped = !goal.empty() || (run.stop_after > 0 && done - first_step >= run.stop_after);
    if (lead && has_dir && (done % run.checkpoint_every == 0 || done == schedule.steps || stopped)) {
      progress.sampler_state = task.data_state();
      trainee.checkpointer->save(ckpt, progress);
      log.write(progress);
    }
    if (stopped) break;
  }
  if (killed) {
    out.steps_done = progress.step;
    return out;
  }
  if (lead && run.show_progress) bar.finish();
  if (lead) {
    if (!goal.empty())
      std::cerr << fmt::format("{}: {}\n", run.tool, goal);
    else if (stopped)
      std::cerr << fmt::format("{}: stopped after step {} (--stop-after)\n", run.tool, progress.step);
  }
  comm.barrier();  // every rank ends after the final checkpoint exists
  return finish("");
}

}  // namespace fpa
