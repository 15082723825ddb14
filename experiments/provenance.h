// What every results file records about the run that made it: the program and its command line,
// every option's value, the seed, the code version (git describe, "-dirty" when the tree had
// uncommitted changes), the machine's CPU, the start time and the wall time.
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

// The CPU a run computed on, as /proc/cpuinfo names it. Float results are bitwise repeatable on
// one kind of CPU only: LibTorch and OpenBLAS pick their kernels (and so their summation order)
// by vendor, family and instruction set, and sessions of this project have run on Intel Xeon and
// AMD EPYC machines alike. Empty where there is no /proc/cpuinfo.
struct MachineDescription {
  std::string cpu_model;  // "model name", e.g. "AMD EPYC"
  std::string cpu_id;     // "AuthenticAMD family 25 model 1"
  std::string simd;       // those of the deciding extensions it has: "avx avx2 fma"
  bool empty() const { return cpu_model.empty() && cpu_id.empty() && simd.empty(); }
};
MachineDescription parse_cpuinfo(const std::string& cpuinfo);  // its first processor
const MachineDescription& this_machine();                        // read once

struct Provenance {
  std::string program;
  std::string command_line;
  std::map<std::string, std::string> config;
  uint64_t seed = 0;
  std::string code_version;
  std::string started_utc;
  std::string execution;  // "" when the tool recorded none
  MachineDescription machine;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  static Provenance from(const Cli& cli);
  double wall_seconds() const;
  std::string to_json() const;  // includes wall_s measured at the time of the call
};

}  // namespace fpa
