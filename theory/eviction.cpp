// theory-eviction: numeric evidence for T5. Decodes random caches (Gaussian q, k, v; a dips
// program for the field) and near-worst-case caches, dropping every key whose bias falls below
// -(2R + log(N/eps)); records the largest change of any query's output against 2 eps V, the
// fraction of the cache evicted, and that evicted keys stay below the threshold for every later
// query. See theory/THEORY.md. The last line printed is the verdict. The study itself is
// run_eviction_study (eviction_study.h).
#include "experiments/cli.h"
#include "theory/eps_option.h"
#include "theory/eviction_study.h"
#include "theory/study_main.h"

using namespace fpa;
using namespace fpa::theory;

int main(int argc, char** argv) {
  Cli cli("theory-eviction",
          "T5: evicting keys with b_ij < -(2R + log(n/eps)) changes every output by at most "
          "2 eps V, and evicted keys stay dead",
          "results/theory/eviction.csv");
  cli.add()("trials", po::value<int>()->default_value(30), "random caches per epsilon")
      ("eps", po::value<std::string>()->default_value("1e-1,1e-2,1e-3"),
       "epsilons, comma-separated, each in [1e-9, 1)");
  cli.range("trials", 1, 100000);
  require_certifiable_eps(cli);
  cli.parse(argc, argv);
  const auto provenance = Provenance::from(cli);
  EvictionSettings settings;
  settings.trials = cli.get<int>("trials");
  settings.eps = split_double_list(cli.get<std::string>("eps"), "eps", 0.0, 1.0);
  settings.seed = cli.seed();
  settings.out = cli.out();
  return run_theory_study(cli, [&] {
    auto result = run_eviction_study(settings);
    return report_eviction_study(result, settings, provenance);
  });
}
