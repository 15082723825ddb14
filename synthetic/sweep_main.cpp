// synthetic-sweep: the grid tasks x models x head dims x seeds (FPA once per backward mode) as
// parallel synthetic-run processes, skipping runs whose CSV is complete for the same
// configuration, then summary.csv (SPEC section 7 columns first). The study itself is
// run_sweep (sweep_runner.h).
#include "experiments/cli.h"
#include "experiments/execution_options.h"
#include "experiments/run_dir.h"
#include "run_options.h"
#include "sweep.h"
#include "sweep_runner.h"
#include "task.h"

#include <fmt/format.h>

#include <unistd.h>

#include <climits>
#include <iostream>

namespace syn = fpa::synthetic;

namespace {

std::string dir_of_self() {
  char buf[PATH_MAX];
  const ssize_t len = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (len <= 0) return ".";
  std::string path(buf, size_t(len));
  return path.substr(0, path.find_last_of('/'));
}

// synthetic-run's options the sweep sets for every run of its grid.
const std::vector<std::string> kSharedRunOptions = {"steps", "length", "heads", "batch", "eval-every",
                                                    "eval-seqs", "impl", "st-temperature"};

void declare_options(fpa::Cli& cli) {
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
  fpa::declare_execution_options(cli);  // passed to every run
  cli.range("seeds", 1, 100000);
  cli.range("jobs", 1, 256);
  cli.output("out-dir", fpa::PathKind::Dir, fpa::kSweepOwnEntries);
  cli.input("--tasks", fpa::PathKind::File, [](const fpa::Cli& c) {
    std::vector<std::string> files;
    for (const auto& t : fpa::split_unique_list(c.get<std::string>("tasks"), "tasks"))
      if (syn::is_task_path(t)) files.push_back(t);
    return files;
  });
  cli.input("run-exe", fpa::PathKind::File);
}

// The grid of the tasks, variants, backward modes, head dimensions and seeds asked for, with the
// synthetic-run options every run shares.
syn::GridSpec grid_spec_from(const fpa::Cli& cli) {
  syn::GridSpec spec;
  spec.tasks = fpa::split_unique_list(cli.get<std::string>("tasks"), "tasks");
  spec.models = fpa::split_unique_list(cli.get<std::string>("variants"), "variants");
  spec.fpa_grads = fpa::split_unique_list(cli.get<std::string>("fpa-backward"), "fpa-backward");
  spec.head_dims = fpa::split_int_list(cli.get<std::string>("head-dims"), "head-dims");
  fpa::require_unique(spec.head_dims, "head-dims");
  spec.first_seed = cli.seed();
  spec.seeds = cli.get<int>("seeds");
  spec.shared_args = syn::shared_run_args(cli, kSharedRunOptions);
  spec.shared_args.insert(spec.shared_args.end(), {"--threads", std::to_string(cli.threads()),
                                                   "--device", cli.get<std::string>("device"),
                                                   "--precision", cli.get<std::string>("precision")});
  // Each run's sidecar names the study's config file (not part of a run's identity: a run made
  // without it is still reused).
  if (cli.has("config"))
    spec.shared_args.insert(spec.shared_args.end(), {"--study-config", cli.get<std::string>("config")});
  return spec;
}

}  // namespace

int main(int argc, char** argv) {
  fpa::Cli cli("synthetic-sweep",
               "run the synthetic grid (tasks x models x head dims x seeds) and summarise it",
               "results/synthetic/summary.csv");
  declare_options(cli);
  cli.parse(argc, argv);
  const auto spec = grid_spec_from(cli);
  const auto runs = syn::make_grid(spec);  // bad values end here with a one-line error
  for (const auto& r : runs) syn::require_run_memory(r.config);

  const auto exe = cli.has("run-exe") ? cli.get<std::string>("run-exe") : dir_of_self() + "/synthetic-run";
  if (::access(exe.c_str(), X_OK) != 0) fpa::fail_usage(fmt::format("cannot execute '{}'", exe));
  auto provenance = fpa::Provenance::from(cli);
  syn::SweepSettings settings;
  settings.run_exe = exe;
  settings.out_dir = cli.get<std::string>("out-dir");
  settings.jobs = cli.get<int>("jobs");
  settings.summarize_only = cli.flag("summarize-only");
  settings.dump_first_seed = cli.flag("dump-first-seed");
  settings.first_seed = spec.first_seed;
  settings.out = cli.out();
  auto outcome = syn::run_sweep(settings, runs);
  auto& summary = outcome.summary;
  summary.commit(provenance);
  std::cerr << fmt::format("synthetic-sweep: summary of {} rows in {}\n", summary.rows(), cli.out());
  return outcome.failed ? 1 : 0;
}
