// The shared tail of the theory executables' mains: the threads set, the study run, its tables
// committed and its summary printed by `study` (which returns whether every check passed).
// Exit code 0 when all passed, 1 when one failed or on an error ("error: ..." on stderr).
#pragma once

#include "experiments/cli.h"
#include "experiments/torch_runtime.h"

#include <exception>
#include <iostream>

namespace fpa::theory {

template <class Study>
int run_theory_study(const Cli& cli, Study&& study) {
  try {
    set_threads(cli.threads());
    return study() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}

}  // namespace fpa::theory
