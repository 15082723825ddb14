// theory-realization: numeric evidence for T3.
//   (a) random target sets S (query in S): the constructed field's alive set is exactly S, with
//       every non-member at least the gap g below the running minimum;
//   (b) task families as increment tables (dips, brackets, erase, random): the kernel's alive
//       sets equal the first-passage ground truth (stack rule) at every query, with bias 0 on
//       alive keys and <= -1 on dead ones;
//   (c) a head of dimension 1 (q.k = 0) with the field scaled by beta: the mass outside the
//       target set against ((i - |A_i|)/|A_i|) exp(-beta g), and whether beta = log(n/eps)
//       reaches 1 - eps on every query.
// See theory/THEORY.md. The last line printed is the verdict. The study itself is
// run_realization (realization_study.h).
#include "experiments/cli.h"
#include "theory/eps_option.h"
#include "theory/realization_study.h"
#include "theory/study_main.h"

using namespace fpa;
using namespace fpa::theory;

int main(int argc, char** argv) {
  Cli cli("theory-realization",
          "T3: constructed fields realise any target set; task families' alive sets with gap 1; "
          "target mass of a dimension-1 head with field scale beta",
          "results/theory/realization.csv");
  cli.add()("trials", po::value<int>()->default_value(1),
            "sequences per (family, length); part (a) draws 300 x trials target sets")
      ("lengths", po::value<std::string>()->default_value("128,1024,4096"),
       "sequence lengths of parts (b, c), each in [1, 8192]")
      ("eps", po::value<std::string>()->default_value("1e-2,1e-3,1e-6"),
       "target outside masses epsilon, comma-separated, each in [1e-9, 1)")
      ("kernel-check-max-n", po::value<int>()->default_value(1024),
       "compare the weights with fpa::attention's on sequences up to this length");
  cli.range("kernel-check-max-n", 0, 8192);
  cli.range("trials", 1, 10000);
  cli.int_list_range("lengths", 1, 8192);
  require_certifiable_eps(cli);
  cli.parse(argc, argv);
  const auto provenance = Provenance::from(cli);
  RealizationSettings settings;
  settings.trials = cli.get<int>("trials");
  settings.lengths = split_int_list(cli.get<std::string>("lengths"), "lengths");
  settings.eps = split_double_list(cli.get<std::string>("eps"), "eps", 0.0, 1.0);
  settings.kernel_check_max_n = cli.get<int>("kernel-check-max-n");
  settings.seed = cli.seed();
  settings.out = cli.out();
  return run_theory_study(cli, [&] {
    auto result = run_realization(settings);
    return report_realization(result, settings, provenance);
  });
}
