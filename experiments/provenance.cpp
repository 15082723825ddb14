#include "provenance.h"

#include "cli.h"

#include <fmt/format.h>

#include <ctime>
#include <fstream>
#include <set>
#include <sstream>

namespace fpa {
namespace {

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", int(c));
    else out += c;
  }
  return out;
}

// The program's start, taken during static initialisation: a Provenance made when a run commits
// its CSV, at the end, still reports the whole run's start and wall time.
const auto kProgramStart = std::chrono::steady_clock::now();
const std::time_t kProgramStartUtc = std::time(nullptr);

std::string& recorded_execution() {
  static std::string execution;
  return execution;
}

std::string utc_string(std::time_t t) {
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// The instruction-set extensions that decide which CPU kernels LibTorch (ATen's DEFAULT, AVX2,
// AVX512) and OpenBLAS run, in the order written.
constexpr const char* kSimdFlags[] = {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_vnni",
                                      "avx512_bf16", "amx_tile"};

}  // namespace

MachineDescription parse_cpuinfo(const std::string& cpuinfo) {
  std::map<std::string, std::string> field;  // the first processor's fields
  std::istringstream lines(cpuinfo);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() && !field.empty()) break;  // a blank line ends a processor's block
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    auto value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    field.emplace(key, value);
  }
  MachineDescription m;
  m.cpu_model = field["model name"];
  if (!field["vendor_id"].empty() || !field["cpu family"].empty())
    m.cpu_id = fmt::format("{} family {} model {}", field["vendor_id"], field["cpu family"],
                           field["model"]);
  std::set<std::string> flags;
  std::istringstream words(field["flags"]);
  for (std::string w; words >> w;) flags.insert(w);
  for (const char* f : kSimdFlags)
    if (flags.count(f)) m.simd += (m.simd.empty() ? "" : " ") + std::string(f);
  return m;
}

const MachineDescription& this_machine() {
  static const MachineDescription machine = [] {
    std::ifstream in("/proc/cpuinfo");
    std::stringstream text;
    text << in.rdbuf();
    return parse_cpuinfo(text.str());
  }();
  return machine;
}

void record_execution(std::string description) { recorded_execution() = std::move(description); }

Provenance Provenance::from(const Cli& cli) {
  Provenance p;
  p.program = cli.program();
  p.command_line = cli.command_line();
  p.config = cli.config();
  p.seed = cli.seed();
  p.code_version = fpa::code_version();
  p.start = kProgramStart;
  p.started_utc = utc_string(kProgramStartUtc);
  p.execution = recorded_execution();
  p.machine = this_machine();
  return p;
}

double Provenance::wall_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string Provenance::to_json() const {
  std::string cfg;
  for (const auto& [k, v] : config)
    cfg += fmt::format("{}\n    \"{}\": \"{}\"", cfg.empty() ? "" : ",", json_escape(k), json_escape(v));
  const auto machine_json =
      machine.empty() ? std::string()
                      : fmt::format("  \"machine\": {{\"cpu_model\": \"{}\", \"cpu_id\": \"{}\", "
                                    "\"simd\": \"{}\"}},\n",
                                    json_escape(machine.cpu_model), json_escape(machine.cpu_id),
                                    json_escape(machine.simd));
  return fmt::format(
      "{{\n  \"program\": \"{}\",\n  \"command_line\": \"{}\",\n  \"seed\": {},\n"
      "  \"code_version\": \"{}\",\n  \"started_utc\": \"{}\",\n  \"wall_s\": {:.3f},\n{}{}"
      "  \"config\": {{{}\n  }}\n}}\n",
      json_escape(program), json_escape(command_line), seed, json_escape(code_version),
      started_utc, wall_seconds(),
      execution.empty() ? "" : fmt::format("  \"execution\": \"{}\",\n", json_escape(execution)),
      machine_json, cfg);
}

}  // namespace fpa
