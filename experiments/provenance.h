// What every results file records about the run that made it: the program and its command line,
// every option's value, the seed, the code version (git describe, "-dirty" when the tree had
// uncommitted changes), the machine's CPU, the start time and the wall time; a resumed training run
// also lists the invocations that trained it before (resumed_from).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

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

// A run resumed from a checkpoint was trained by earlier invocations too, perhaps by other code
// or on another kind of CPU, and then its numbers repeat bit for bit only by the same sequence.
// Its sidecar lists them, oldest first, as "resumed_from": one JSON object per invocation on one
// line, {"code_version", "started_utc", "wall_s" (to its last checkpoint), "machine"}, taken from
// the sidecar the run's log had when it was resumed: its own list, then the invocation that wrote
// it. Empty when `sidecar_json` is not a sidecar.
std::vector<std::string> invocations_in_sidecar(const std::string& sidecar_json);
// The training loop records them on resume; every Provenance made afterwards carries them.
void record_resumed_from(std::vector<std::string> invocations);
// "" when every invocation had this code version and this kind of CPU (cpu_id and simd);
// otherwise one line naming those that did not.
std::string resumed_elsewhere(const std::vector<std::string>& invocations,
                              const std::string& code_version, const MachineDescription& here);

struct Provenance {
  std::string program;
  std::string command_line;
  std::map<std::string, std::string> config;
  uint64_t seed = 0;
  std::string code_version;
  std::string started_utc;
  std::string execution;  // "" when the tool recorded none
  MachineDescription machine;
  std::vector<std::string> resumed_from;  // earlier invocations of a resumed run (JSON objects)
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  static Provenance from(const Cli& cli);
  double wall_seconds() const;
  std::string to_json() const;  // includes wall_s measured at the time of the call
};

}  // namespace fpa
