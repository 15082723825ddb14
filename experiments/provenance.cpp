#include "provenance.h"

#include "cli.h"

#include <fmt/format.h>

#include <ctime>

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

}  // namespace

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
  return p;
}

double Provenance::wall_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string Provenance::to_json() const {
  std::string cfg;
  for (const auto& [k, v] : config)
    cfg += fmt::format("{}\n    \"{}\": \"{}\"", cfg.empty() ? "" : ",", json_escape(k), json_escape(v));
  return fmt::format(
      "{{\n  \"program\": \"{}\",\n  \"command_line\": \"{}\",\n  \"seed\": {},\n"
      "  \"code_version\": \"{}\",\n  \"started_utc\": \"{}\",\n  \"wall_s\": {:.3f},\n{}"
      "  \"config\": {{{}\n  }}\n}}\n",
      json_escape(program), json_escape(command_line), seed, json_escape(code_version),
      started_utc, wall_seconds(),
      execution.empty() ? "" : fmt::format("  \"execution\": \"{}\",\n", json_escape(execution)),
      cfg);
}

}  // namespace fpa
