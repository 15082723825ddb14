// The --eps option of the theory executables that certify an outside mass (eviction,
// realization): a comma-separated list of distinct epsilons, each in [kMinCertifiableEps, 1).
#pragma once

#include "experiments/cli.h"
#include "theory/fpa_theory.h"

#include <fmt/format.h>

namespace fpa::theory {

inline void require_certifiable_eps(Cli& cli) {
  cli.require([](const po::variables_map& vm) {
    const auto eps = split_double_list(vm["eps"].as<std::string>(), "eps", 0.0, 1.0);
    require_unique(eps, "eps");
    for (double e : eps)
      if (e < kMinCertifiableEps) return false;  // split_double_list exits 2 on a bad item
    return true;
  }, fmt::format("--eps: every epsilon must be in [{}, 1): float64 cannot certify a smaller one",
                 kMinCertifiableEps));
}

}  // namespace fpa::theory
