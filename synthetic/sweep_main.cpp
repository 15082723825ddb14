// synthetic-sweep: the grid tasks x models x head dims x seeds (FPA once per backward mode) as
// parallel synthetic-run processes, skipping runs whose CSV is complete for the same
// configuration, then summary.csv (SPEC section 7 columns first).
#include "experiments/atomic_file.h"
#include "experiments/cli.h"
#include "experiments/csv_writer.h"
#include "experiments/progress.h"
#include "run_options.h"
#include "sweep.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <iostream>
#include <map>

namespace syn = fpa::synthetic;

namespace {

std::string dir_of_self() {
  char buf[PATH_MAX];
  const ssize_t len = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (len <= 0) return ".";
  std::string path(buf, size_t(len));
  return path.substr(0, path.find_last_of('/'));
}

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

// synthetic-run's options the sweep sets for every run of its grid.
const std::vector<std::string> kSharedRunOptions = {"steps", "length", "heads", "batch", "eval-every",
                                                    "eval-seqs", "impl", "st-temperature"};

std::string fmt_num(double x) { return std::isfinite(x) ? fmt::format("{:.4g}", x) : ""; }

}  // namespace

int main(int argc, char** argv) {
  fpa::Cli cli("synthetic-sweep",
               "run the synthetic grid (tasks x models x head dims x seeds) and summarise it",
               "results/synthetic/summary.csv");
  cli.add()
      ("tasks", fpa::po::value<std::string>()->default_value("dips,brackets,erase"),
       "comma-separated built-in tasks or .task files")
      ("variants", fpa::po::value<std::string>()->default_value("softmax,fox,fpa"), "comma-separated variants")
      ("head-dims", fpa::po::value<std::string>()->default_value("8"), "comma-separated head dimensions")
      ("fpa-backward", fpa::po::value<std::string>()->default_value("exact,straight-through"),
       "comma-separated FPA backward modes (each is its own grid row)")
      ("seeds", fpa::po::value<int>()->default_value(10), "seeds per cell: --seed, --seed+1, ...")
      ("jobs,j", fpa::po::value<int>()->default_value(1), "runs in parallel (processes)")
      ("out-dir", fpa::po::value<std::string>()->default_value("results/synthetic"),
       "per-run CSVs go to OUT_DIR/runs, their logs to OUT_DIR/logs")
      ("run-exe", fpa::po::value<std::string>(), "synthetic-run executable (default: next to this one)")
      ("summarize-only", fpa::po::bool_switch(), "run nothing: summarise the runs already complete")
      ("dump-first-seed", fpa::po::bool_switch(), "runs of the first seed also write <run>.dump.csv (figure data)");
  syn::add_shared_run_options(cli, kSharedRunOptions);
  cli.range("seeds", 1, 100000);
  cli.range("jobs", 1, 256);
  cli.output("out-dir", fpa::PathKind::Dir, {"runs", "logs"});
  cli.input("run-exe", fpa::PathKind::File);
  cli.parse(argc, argv);

  syn::GridSpec spec;
  spec.tasks = fpa::split_unique_list(cli.get<std::string>("tasks"), "tasks");
  spec.models = fpa::split_unique_list(cli.get<std::string>("variants"), "variants");
  spec.fpa_grads = fpa::split_unique_list(cli.get<std::string>("fpa-backward"), "fpa-backward");
  spec.head_dims = fpa::split_int_list(cli.get<std::string>("head-dims"), "head-dims");
  fpa::require_unique(spec.head_dims, "head-dims");
  spec.first_seed = cli.seed();
  spec.seeds = cli.get<int>("seeds");
  spec.shared_args = syn::shared_run_args(cli, kSharedRunOptions);
  spec.shared_args.insert(spec.shared_args.end(), {"--threads", std::to_string(cli.threads())});
  // Each run's sidecar names the study's config file (not part of a run's identity: a run made
  // without it is still reused).
  if (cli.has("config"))
    spec.shared_args.insert(spec.shared_args.end(), {"--study-config", cli.get<std::string>("config")});
  const auto runs = syn::make_grid(spec);  // bad values end here with a one-line error
  for (const auto& r : runs) syn::require_run_memory(r.config);

  const auto exe = cli.has("run-exe") ? cli.get<std::string>("run-exe") : dir_of_self() + "/synthetic-run";
  if (::access(exe.c_str(), X_OK) != 0) fpa::fail_usage(fmt::format("cannot execute '{}'", exe));
  auto provenance = fpa::Provenance::from(cli);
  const auto out_dir = cli.get<std::string>("out-dir");
  const auto runs_dir = out_dir + "/runs", logs_dir = out_dir + "/logs";
  fpa::make_parent_dirs(runs_dir + "/x");
  fpa::make_parent_dirs(logs_dir + "/x");
  auto csv_of = [&](const syn::SweepRun& r) { return runs_dir + "/" + r.name + ".csv"; };

  std::map<std::string, std::map<std::string, std::string>> finals;
  std::vector<const syn::SweepRun*> todo;
  for (const auto& r : runs) {
    auto row = syn::read_final_row(csv_of(r), syn::config_key(r.config));
    if (!row.empty()) finals[r.name] = row;
    else if (!cli.flag("summarize-only")) todo.push_back(&r);
  }
  // Seed-major order: an interrupted sweep leaves every cell of the grid with the same seeds.
  std::stable_sort(todo.begin(), todo.end(), [](const syn::SweepRun* a, const syn::SweepRun* b) {
    return a->config.seed < b->config.seed;
  });
  std::cerr << fmt::format("synthetic-sweep: {} runs in the grid, {} complete, {} to run with -j {}\n",
                           runs.size(), finals.size(), todo.size(), cli.get<int>("jobs"));

  fpa::Progress progress("synthetic-sweep", int64_t(todo.size()), "run");
  std::map<pid_t, const syn::SweepRun*> running;
  size_t next = 0, done = 0, failed = 0;
  while (next < todo.size() || !running.empty()) {
    while (next < todo.size() && int(running.size()) < cli.get<int>("jobs")) {
      const auto* r = todo[next++];
      auto args = r->args;
      args.insert(args.end(), {"--out", csv_of(*r)});
      if (cli.flag("dump-first-seed") && r->config.seed == spec.first_seed)
        args.insert(args.end(), {"--dump", runs_dir + "/" + r->name + ".dump.csv"});
      running[spawn(exe, args, logs_dir + "/" + r->name + ".log")] = r;
    }
    int status = 0;
    const pid_t pid = ::wait(&status);
    if (pid < 0) break;
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const auto* r = it->second;
    running.erase(it);
    ++done;
    auto row = syn::read_final_row(csv_of(*r), syn::config_key(r->config));
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

  fpa::CsvWriter summary(cli.out(), syn::kSummaryColumns);
  for (const auto& s : syn::summarize(runs, finals))
    summary.row(s.task, s.model, s.head_dim, s.seeds_run, s.seeds_converged, fmt_num(s.mass_mean),
                fmt_num(s.mass_std), fmt_num(s.mass2n_mean), fmt_num(s.nmse_mean),
                fmt_num(s.nmse2n_mean), s.fpa_grad, fmt_num(s.mass_best_mean),
                fmt_num(s.steps_to_converge_median), fmt_num(s.wall_s_mean), s.runs_missing, s.n,
                s.best_seed < 0 ? std::string() : std::to_string(s.best_seed),
                fmt_num(s.best_seed_mass), fmt_num(s.best_seed_nmse));
  summary.commit(provenance);
  std::cerr << fmt::format("synthetic-sweep: summary of {} rows in {}\n", summary.rows(), cli.out());
  return failed ? 1 : 0;
}
