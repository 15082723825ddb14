// theory-fox-special-case: numeric evidence for T1 (FoX is FPA with a non-increasing field) and
// T2 (FoX alive sets are suffix windows; FPA keeps key 1 while killing key 2 with three tokens).
// See theory/THEORY.md. Writes one CSV row per check; the last line printed is the verdict.
// The study itself is run_fox_special_case (fox_special_case_study.h).
#include "experiments/cli.h"
#include "theory/fox_special_case_study.h"
#include "theory/study_main.h"

using namespace fpa;
using namespace fpa::theory;

int main(int argc, char** argv) {
  Cli cli("theory-fox-special-case",
          "T1/T2: FPA equals FoX on non-increasing fields, differs on non-monotone ones; FoX "
          "alive sets are suffix windows",
          "results/theory/fox_special_case.csv");
  cli.add()("trials", po::value<int>()->default_value(5),
            "random fields per length and check (lengths up to 512)")
      ("long-trials", po::value<int>()->default_value(1), "random fields per length above 512")
      ("lengths", po::value<std::string>()->default_value("1,2,3,8,64,512,4096"),
       "sequence lengths (each in [1, 8192])")
      ("head-dim", po::value<int>()->default_value(16), "head dimension of the output check");
  cli.range("trials", 1, 100000);
  cli.range("long-trials", 1, 100000);
  cli.range("head-dim", 1, 1024);
  cli.int_list_range("lengths", 1, 8192);
  cli.parse(argc, argv);
  const auto provenance = Provenance::from(cli);
  FoxSpecialCaseSettings settings;
  settings.trials = cli.get<int>("trials");
  settings.long_trials = cli.get<int>("long-trials");
  settings.lengths = split_int_list(cli.get<std::string>("lengths"), "lengths");
  settings.head_dim = cli.get<int>("head-dim");
  settings.seed = cli.seed();
  settings.out = cli.out();
  return run_theory_study(cli, [&] {
    auto result = run_fox_special_case(settings);
    return report_fox_special_case(result, settings, provenance);
  });
}
