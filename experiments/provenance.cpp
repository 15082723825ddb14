#include "provenance.h"

#include "cli.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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

std::vector<std::string>& recorded_resumed_from() {
  static std::vector<std::string> invocations;
  return invocations;
}

// A JSON value on one line, object members as "key": value (the sidecar's own layout).
std::string one_line(const nlohmann::ordered_json& v) {
  if (!v.is_object()) return v.dump();
  std::string members;
  for (const auto& [key, value] : v.items())
    members += fmt::format("{}{}: {}", members.empty() ? "" : ", ", nlohmann::json(key).dump(),
                           one_line(value));
  return "{" + members + "}";
}

std::string string_at(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
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

std::vector<std::string> invocations_in_sidecar(const std::string& sidecar_json) {
  const auto json = nlohmann::ordered_json::parse(sidecar_json, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object() || !json.contains("code_version")) return {};
  std::vector<std::string> out;
  if (const auto earlier = json.find("resumed_from"); earlier != json.end() && earlier->is_array())
    for (const auto& invocation : *earlier) out.push_back(one_line(invocation));
  nlohmann::ordered_json self;  // the invocation that wrote the sidecar
  for (const char* key : {"code_version", "started_utc", "wall_s", "machine"})
    if (json.contains(key)) self[key] = json[key];
  out.push_back(one_line(self));
  return out;
}

void record_resumed_from(std::vector<std::string> invocations) {
  recorded_resumed_from() = std::move(invocations);
}

std::string resumed_elsewhere(const std::vector<std::string>& invocations,
                              const std::string& code_version, const MachineDescription& here) {
  const auto where = [](const std::string& code, const std::string& cpu, const std::string& simd) {
    return fmt::format("code {} on {}{}", code, cpu.empty() ? "a CPU not recorded" : cpu,
                       simd.empty() ? "" : " [" + simd + "]");
  };
  std::string others;
  int n = 0;
  for (size_t i = 0; i < invocations.size(); ++i) {
    auto inv = nlohmann::json::parse(invocations[i], nullptr, /*allow_exceptions=*/false);
    if (!inv.is_object()) inv = nlohmann::json::object();
    auto machine = inv.value("machine", nlohmann::json::object());
    if (!machine.is_object()) machine = nlohmann::json::object();
    const auto code = string_at(inv, "code_version"), cpu = string_at(machine, "cpu_id"),
               simd = string_at(machine, "simd");
    if (code == code_version && cpu == here.cpu_id && simd == here.simd && !cpu.empty()) continue;
    others += fmt::format("{}#{} (started {}): {}", n++ ? "; " : "", i + 1,
                          string_at(inv, "started_utc"), where(code, cpu, simd));
  }
  if (n == 0) return "";
  return fmt::format(
      "{} of the {} earlier invocation(s) of this run ran other code or on another kind of CPU "
      "than this one ({}): {}. Its numbers repeat bit for bit only by the same sequence; the "
      "sidecar lists them under resumed_from",
      n, invocations.size(), where(code_version, here.cpu_id, here.simd), others);
}

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
  p.resumed_from = recorded_resumed_from();
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
  std::string resumed;
  for (const auto& inv : resumed_from) resumed += fmt::format("{}\n    {}", resumed.empty() ? "" : ",", inv);
  if (!resumed.empty()) resumed = fmt::format("  \"resumed_from\": [{}\n  ],\n", resumed);
  return fmt::format(
      "{{\n  \"program\": \"{}\",\n  \"command_line\": \"{}\",\n  \"seed\": {},\n"
      "  \"code_version\": \"{}\",\n  \"started_utc\": \"{}\",\n  \"wall_s\": {:.3f},\n{}{}{}"
      "  \"config\": {{{}\n  }}\n}}\n",
      json_escape(program), json_escape(command_line), seed, json_escape(code_version),
      started_utc, wall_seconds(),
      execution.empty() ? "" : fmt::format("  \"execution\": \"{}\",\n", json_escape(execution)),
      machine_json, resumed, cfg);
}

}  // namespace fpa
