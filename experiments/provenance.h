// What every results file records about the run that made it: the program and its command line,
// every option's value, the seed, the code version (git describe, "-dirty" when the tree had
// uncommitted changes), the start time and the wall time.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace fpa {

const char* code_version();  // generated at build time

// The resolved device and precision of a tool that computes ("cpu fp32", "cuda:0 (1 visible)
// bf16"; experiments/execution.h records it): a Provenance made afterwards carries it as
// "execution". Tools that do not compute leave it empty and their sidecars without it.
void record_execution(std::string description);

class Cli;

struct Provenance {
  std::string program;
  std::string command_line;
  std::map<std::string, std::string> config;
  uint64_t seed = 0;
  std::string code_version;
  std::string started_utc;
  std::string execution;  // "" when the tool recorded none
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  static Provenance from(const Cli& cli);
  double wall_seconds() const;
  std::string to_json() const;  // includes wall_s measured at the time of the call
};

}  // namespace fpa
