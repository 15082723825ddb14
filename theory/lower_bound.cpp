// theory-lower-bound: numeric evidence for T4. For n keys in general position (Gaussian) in R^d,
// decides for every subset S by LP feasibility with a margin (GLPK) whether a softmax head, a
// FoX head, and the free-weight relaxation of FoX can select S; compares the counts with
// Cover's and the hyperplane-arrangement formulas, reports per d the largest n each can shatter,
// and checks that an FPA head of dimension 1 realises every subset of n <= 12 keys.
// See theory/THEORY.md. The last line printed is the verdict. The study itself is
// run_lower_bound (lower_bound_study.h).
#include "experiments/cli.h"
#include "theory/lower_bound_study.h"
#include "theory/study_main.h"

using namespace fpa;
using namespace fpa::theory;

int main(int argc, char** argv) {
  Cli cli("theory-lower-bound",
          "T4: which subsets of n keys a softmax / FoX head of dimension d can select (GLPK LP "
          "with a margin) against Cover's count; FPA at d = 1 realises every subset",
          "results/theory/lower_bound.csv");
  cli.add()("trials", po::value<int>()->default_value(1), "independent draws of the keys per (n, d)")
      ("max-n", po::value<int>()->default_value(12), "largest number of keys, in [1, 16]")
      ("max-d", po::value<int>()->default_value(8), "largest head dimension, in [1, 14]");
  cli.range("trials", 1, 1000);
  cli.range("max-n", 1, 16);
  cli.range("max-d", 1, 14);
  cli.parse(argc, argv);
  const auto provenance = Provenance::from(cli);
  LowerBoundSettings settings;
  settings.trials = cli.get<int>("trials");
  settings.max_n = cli.get<int>("max-n");
  settings.max_d = cli.get<int>("max-d");
  settings.seed = cli.seed();
  settings.out = cli.out();
  return run_theory_study(cli, [&] {
    auto result = run_lower_bound(settings);
    return report_lower_bound(result, settings, provenance);
  });
}
