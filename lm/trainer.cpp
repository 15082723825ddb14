#include "lm/trainer.h"

#include "experiments/atomic_file.h"
#include "experiments/cli.h"
#include "experiments/progress.h"
#include "experiments/run_dir.h"
#include "lm/train_loop.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>

namespace fs = std::filesystem;

namespace fpa::lm {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The run directory's log: header and the checkpointed rows, with its provenance sidecar.
class RunLog {
 public:
  RunLog(const RunSettings& run, const TrainTask& task)
      : run_(run), task_(task), path_((fs::path(run.out_dir) / run.log_name).string()) {}

  std::string text(const TrainProgress& p) const { return task_.log_header() + "\n" + p.log_rows; }

  void write(const TrainProgress& p) const {  // the sidecar first: no log without one
    if (run_.provenance) write_file_atomic(path_ + ".json", run_.provenance());
    write_file_atomic(path_, text(p));
  }

  bool in_sync(const std::string& path, const TrainProgress& p) const {
    return read_file(path) == text(p) && (!run_.provenance || fs::exists(path + ".json"));
  }

  // A kill between the checkpoint's rename and the log's leaves the log behind (or absent): the
  // checkpoint holds the rows it covers, so the log is rebuilt from them.
  void sync(const TrainProgress& p) const {
    if (in_sync(path_, p)) return;
    write(p);
    std::cerr << fmt::format("{}: {} rebuilt from the checkpoint (step {})\n", run_.tool, path_, p.step);
  }

  // --out, unless empty or the log itself: a copy of the log and its sidecar. After training the
  // log was just written; a run with nothing to do copies its training's log when the copy lags.
  void copy_out(const TrainProgress& p) const {
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
  const RunSettings& run_;
  const TrainTask& task_;
  std::string path_;
};

}  // namespace

TrainOutcome run_training(LanguageModel& model, const TrainConfig& t, TrainTask& task,
                          const RunSettings& run, Communicator& comm) {
  const bool lead = comm.rank() == 0;
  auto optimizer = make_optimizer(model, t);
  const RunLog log(run, task);

  TrainProgress progress;
  progress.preset = run.preset;
  const auto ckpt = checkpoint_path(run.out_dir);
  const auto seen = file_version(ckpt);
  if (!seen.empty()) {
    if (!run.resume)
      throw UsageError(fmt::format(
          "--out-dir '{}' already holds a run; pass --resume to continue it or choose another "
          "--out-dir", run.out_dir));
    progress = resume_checkpoint(ckpt, model, *optimizer);
    progress.log_rows = task.upgrade_log_rows(progress.log_rows);
    task.set_data_state(progress.sampler_state);
  } else if (run.resume && lead) {  // --resume makes a script restart-safe: it starts what is not there
    std::cerr << fmt::format("{}: --resume: no checkpoint in '{}'; starting a new run\n", run.tool,
                             run.out_dir);
  }
  std::optional<RunLock> lock;  // rank 0 writes the run directory
  if (lead) {
    lock.emplace(run.out_dir);
    if (file_version(ckpt) != seen)
      throw UsageError(fmt::format("checkpoint '{}' changed while this run started: another "
                                   "process writes --out-dir '{}'", ckpt, run.out_dir));
    remove_stale_temps(run.out_dir);
    if (!seen.empty()) {
      std::cerr << fmt::format("{}: resuming {} at step {}\n", run.tool, run.out_dir, progress.step);
      log.sync(progress);
    }
    if (!run.banner.empty()) std::cerr << run.banner << "\n";  // after the checks: bad input gets one line
  }

  TrainOutcome out;
  out.params = model->parameter_count();
  auto finish = [&](std::string nothing_to_do) {
    if (lead && !nothing_to_do.empty())
      std::cerr << fmt::format("{}: {} {}; nothing to do\n", run.tool, run.out_dir, nothing_to_do);
    if (lead) log.copy_out(progress);
    out.steps_done = progress.step;
    out.nothing_to_do = std::move(nothing_to_do);
    out.log_rows = progress.log_rows;
    out.tokens_per_s = progress.tokens / std::max(1e-9, progress.train_time_s);
    return out;
  };
  // A resumed run with nothing left keeps its log and sidecar (the training's provenance).
  if (const auto reached = task.goal_reached_in(progress.log_rows); !reached.empty())
    return finish(reached);
  if (!seen.empty() && progress.step >= t.steps)
    return finish(fmt::format("reached the step cap ({})", t.steps));

  Progress bar(run.progress_label, t.steps, "step");
  bar.resume_at(progress.step);
  const auto wall_start = Clock::now();
  const double elapsed_before = progress.elapsed_s;
  const int64_t first_step = progress.step;
  Clock::time_point step_start;
  std::string goal;
  model->train();

  TrainLoopHooks hooks;
  hooks.forward_backward = [&](int64_t step) {
    step_start = Clock::now();
    const double loss = task.forward_backward(model, step, progress.tokens);
    return step + 1 == run.fault_nan_at_step ? std::nan("") : loss;
  };
  hooks.after_step = [&](int64_t done, double loss, double lr) {
    progress.step = done;
    progress.train_time_s += seconds_since(step_start);
    if (lead) {
      task.evaluate(model, done);
      goal = task.goal_reached();
    }
    progress.elapsed_s = elapsed_before + seconds_since(wall_start);
    const StepRecord r{done, progress.tokens, loss, lr, progress.elapsed_s, progress.train_time_s};
    progress.log_rows += task.log_row(r) + "\n";
    if (lead && run.show_progress) bar.update(done, task.progress_note(r));
    if (done == run.kill_after_steps) return true;  // tests: as if killed here
    const bool stop = !goal.empty() || (run.stop_after > 0 && done - first_step >= run.stop_after);
    if (lead && (done % t.checkpoint_every == 0 || done == t.steps || stop)) {
      progress.sampler_state = task.data_state();
      save_checkpoint(ckpt, model, *optimizer, progress);
      log.write(progress);
    }
    return stop;
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
  if (loop.steps_done == run.kill_after_steps) {  // tests: no final checkpoint, no --out
    out.steps_done = loop.steps_done;
    return out;
  }
  if (lead && run.show_progress) bar.finish();
  if (lead) {
    if (!goal.empty())
      std::cerr << fmt::format("{}: {}\n", run.tool, goal);
    else if (loop.stopped)
      std::cerr << fmt::format("{}: stopped after step {} (--stop-after)\n", run.tool, progress.step);
  }
  comm.barrier();  // every rank ends after the final checkpoint exists
  return finish("");
}

}  // namespace fpa::lm
