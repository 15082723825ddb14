#include "sweep_runner.h"

#include "experiments/atomic_file.h"
#include "experiments/progress.h"
#include "experiments/run_dir.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <utility>

namespace fpa::synthetic {
namespace {

// Starts `exe args` with stdout and stderr to `log`; its process id.
pid_t spawn(const std::string& exe, const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> storage = {exe};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    ::execv(exe.c_str(), argv.data());
    std::fprintf(stderr, "error: cannot execute %s\n", exe.c_str());
    ::_exit(127);
  }
  return pid;
}

std::string fmt_num(double x) { return std::isfinite(x) ? fmt::format("{:.4g}", x) : ""; }

}  // namespace

SweepOutcome run_sweep(const SweepSettings& s, const std::vector<SweepRun>& runs) {
  const auto runs_dir = s.out_dir + "/runs", logs_dir = s.out_dir + "/logs";
  make_parent_dirs(runs_dir + "/x");
  make_parent_dirs(logs_dir + "/x");
  mark_sweep_folder(s.out_dir);  // no other tool's output goes into runs/ or logs/ (run_dir.h)
  auto csv_of = [&](const SweepRun& r) { return runs_dir + "/" + r.name + ".csv"; };

  std::map<std::string, std::map<std::string, std::string>> finals;
  std::vector<const SweepRun*> todo;
  for (const auto& r : runs) {
    auto row = read_final_row(csv_of(r), config_key(r.config));
    if (!row.empty()) finals[r.name] = row;
    else if (!s.summarize_only) todo.push_back(&r);
  }
  // Seed-major order: an interrupted sweep leaves every cell of the grid with the same seeds.
  std::stable_sort(todo.begin(), todo.end(), [](const SweepRun* a, const SweepRun* b) {
    return a->config.seed < b->config.seed;
  });
  std::cerr << fmt::format("synthetic-sweep: {} runs in the grid, {} complete, {} to run with -j {}\n",
                           runs.size(), finals.size(), todo.size(), s.jobs);

  Progress progress("synthetic-sweep", int64_t(todo.size()), "run");
  std::map<pid_t, const SweepRun*> running;
  size_t next = 0, done = 0, failed = 0;
  while (next < todo.size() || !running.empty()) {
    while (next < todo.size() && int(running.size()) < s.jobs) {
      const auto* r = todo[next++];
      auto args = r->args;
      args.insert(args.end(), {"--out", csv_of(*r)});
      if (s.dump_first_seed && r->config.seed == s.first_seed)
        args.insert(args.end(), {"--dump", runs_dir + "/" + r->name + ".dump.csv"});
      running[spawn(s.run_exe, args, logs_dir + "/" + r->name + ".log")] = r;
    }
    int status = 0;
    const pid_t pid = ::wait(&status);
    if (pid < 0) break;
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const auto* r = it->second;
    running.erase(it);
    ++done;
    auto row = read_final_row(csv_of(*r), config_key(r->config));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !row.empty()) {
      finals[r->name] = row;
      std::cerr << fmt::format("[{}/{}] {}: mass {} nmse {} (2n: {} {}) converged {} in {} s\n", done,
                               todo.size(), r->name, row["mass"], row["nmse"], row["mass2n"],
                               row["nmse2n"], row["converged"] == "1" ? "yes" : "no", row["wall_s"]);
    } else {
      ++failed;
      std::cerr << fmt::format("[{}/{}] {}: FAILED (exit {}), see {}/{}.log\n", done, todo.size(),
                               r->name, WIFEXITED(status) ? WEXITSTATUS(status) : -1, logs_dir, r->name);
    }
    progress.update(int64_t(done));
  }
  progress.finish(fmt::format("{} failed", failed));

  CsvWriter summary(s.out, kSummaryColumns);
  for (const auto& row : summarize(runs, finals))
    summary.row(row.task, row.model, row.head_dim, row.seeds_run, row.seeds_converged,
                fmt_num(row.mass_mean), fmt_num(row.mass_std), fmt_num(row.mass2n_mean),
                fmt_num(row.nmse_mean), fmt_num(row.nmse2n_mean), row.fpa_grad,
                fmt_num(row.mass_best_mean), fmt_num(row.steps_to_converge_median),
                fmt_num(row.wall_s_mean), row.runs_missing, row.n,
                row.best_seed < 0 ? std::string() : std::to_string(row.best_seed),
                fmt_num(row.best_seed_mass), fmt_num(row.best_seed_nmse));
  return {std::move(summary), failed};
}

}  // namespace fpa::synthetic
