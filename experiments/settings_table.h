// A field table: every setting of one configuration once, with its name (the command-line flag
// and the key in --config and preset files), the key a checkpoint stores it under, its type,
// range and help text, and its role. Tools derive from it their options and checks
// (add_options / apply_options), file parsing (apply), a checkpoint's configuration text and its
// parser (stored_text / load_stored_text), the resume check (identity_differences) and the line
// that identifies a run in its results (identity_line), so a setting is named, checked and
// converted in one place.
//
// The tables: lm/settings.cpp (a language model and its training: lm-train, passkey-train,
// presets, checkpoints), synthetic/run_options.cpp (synthetic-run and the sweep's runs) and
// lm/cache/cli_options.cpp (the cache policies' settings of every evaluator).
#pragma once

#include "experiments/cli.h"

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fpa {

enum class SettingRole {
  Identity,   // what is trained or evaluated: in checkpoints, compared on resume
  Execution,  // how it runs (the implementation): never compared; set after the identity
  Run,        // a setting of the run (training schedule, evaluation): in provenance only
};

enum class SettingType { Int, Real, Text, Switch };

// Values as a table reads and writes them; a bad one throws std::invalid_argument naming it.
int64_t setting_int(const std::string& s);
double setting_real(const std::string& s);  // finite
bool setting_switch(const std::string& s);  // true/false, 1/0, yes/no, on/off
inline std::string setting_text(int64_t v) { return std::to_string(v); }
inline std::string setting_text(double v) { return fmt::format("{}", v); }
inline std::string setting_text(bool v) { return v ? "true" : "false"; }

// A row's get and set for a number or switch member of Config:
//   {"steps", "", SettingRole::Run, SettingType::Int, 1, 1e9, "optimiser steps", FPA_INT_SETTING(RunConfig, steps)}
#define FPA_INT_SETTING(Config, member) \
  [](const Config& c) { return ::fpa::setting_text(int64_t(c.member)); }, \
  [](Config& c, const std::string& v) { c.member = ::fpa::setting_int(v); }
#define FPA_REAL_SETTING(Config, member) \
  [](const Config& c) { return ::fpa::setting_text(double(c.member)); }, \
  [](Config& c, const std::string& v) { c.member = ::fpa::setting_real(v); }
#define FPA_SWITCH_SETTING(Config, member) \
  [](const Config& c) { return ::fpa::setting_text(bool(c.member)); }, \
  [](Config& c, const std::string& v) { c.member = ::fpa::setting_switch(v); }

template <class Config>
struct SettingRow {
  std::string name;       // flag and file key, e.g. "fpa-backward"
  std::string stored_as;  // key in a checkpoint's configuration text, e.g. "min_grad"; "" none
  SettingRole role;
  SettingType type;
  double lo, hi;          // range of a number
  std::string help;
  // The value as the flag takes it, and back (throws std::invalid_argument naming the problem).
  std::string (*get)(const Config&);
  void (*set)(Config&, const std::string&);
  // Checkpoint text where it differs from the flag's; null: the flag's text.
  std::string (*store)(const Config&) = nullptr;
  void (*load)(Config&, const std::string&) = nullptr;
};

// A tool's options from a table: which settings, with the tool's default (as the flag's text),
// in the order of its --help. With keep_on_zero, a numeric option whose default is 0 keeps the
// value the tool starts from when it is 0 (lm-train: the preset's).
struct ToolSettings {
  std::vector<std::pair<std::string, std::string>> options;  // (name, default)
  bool keep_on_zero = false;
};

namespace settings_detail {
// "<name> must be in [lo, hi], got v" for a number out of its range (std::invalid_argument).
void check_range(const std::string& name, SettingType type, double lo, double hi, const std::string& value);
// Declares one option on `cli`; the option's parsed value as the flag's text ("" when a Text
// option without default was not given).
void declare(Cli& cli, const std::string& name, SettingType type, const std::string& default_text,
             const std::string& help);
std::string given_text(const po::variables_map& vm, const std::string& name, SettingType type);
std::map<std::string, std::string> stored_values(const std::string& text);  // `key = value` lines
}  // namespace settings_detail

template <class Config>
class SettingsTable {
 public:
  using Row = SettingRow<Config>;
  // `what` names the table in errors: "'x' is not a <what>".
  SettingsTable(std::vector<Row> rows, std::string what) : rows_(std::move(rows)), what_(std::move(what)) {}

  const std::vector<Row>& rows() const { return rows_; }
  const Row& row(const std::string& name) const {
    for (const auto& r : rows_)
      if (r.name == name) return r;
    throw std::invalid_argument(fmt::format("'{}' is not a {}", name, what_));
  }

  // `name = value` from a file or a flag: range-checked, then set. Throws std::invalid_argument.
  void apply(Config& c, const std::string& name, const std::string& value) const {
    const auto& r = row(name);
    settings_detail::check_range(r.name, r.type, r.lo, r.hi, value);
    r.set(c, value);
  }

  // Declares the tool's options on `cli` with a check each, run when the options are parsed
  // (range, known name; an execution setting with the identity given beside it): one line, exit 2.
  void add_options(Cli& cli, const ToolSettings& tool) const {
    for (const auto& [name, default_text] : tool.options) {
      const auto& r = row(name);
      const bool zero_keeps = keeps_on_zero(tool, r, default_text);
      settings_detail::declare(cli, name, r.type, default_text, zero_keeps ? r.help + " (0: keep)" : r.help);
      cli.require([this, &r, zero_keeps, options = tool.options](const po::variables_map& vm) {
        if (r.type == SettingType::Switch) return true;
        const auto value = settings_detail::given_text(vm, r.name, r.type);
        if (zero_keeps && value == "0") return true;
        Config c{};
        if (r.role == SettingRole::Execution)
          for (const auto& [other, unused] : options) {  // a bad one is reported by its own check
            const auto& o = row(other);
            if (o.role == SettingRole::Identity && o.type == SettingType::Text)
              try { o.set(c, settings_detail::given_text(vm, other, o.type)); } catch (const std::exception&) {}
          }
        try {
          apply(c, r.name, value);
        } catch (const std::invalid_argument& e) {
          fail_usage(fmt::format("--{}: {}", r.name, e.what()));
        }
        return true;
      }, "--" + name);
    }
  }

  // After cli.parse(): the given values applied to `c`, execution settings last (they depend on
  // the identity). Throws std::invalid_argument naming the flag.
  void apply_options(const Cli& cli, const ToolSettings& tool, Config& c) const {
    for (int pass = 0; pass < 2; ++pass)
      for (const auto& [name, default_text] : tool.options) {
        const auto& r = row(name);
        if ((r.role == SettingRole::Execution) != (pass == 1)) continue;
        const auto value = settings_detail::given_text(cli.variables(), name, r.type);
        if (keeps_on_zero(tool, r, default_text) && value == "0") continue;
        try {
          r.set(c, value);
        } catch (const std::invalid_argument& e) {
          throw std::invalid_argument(fmt::format("--{}: {}", r.name, e.what()));
        }
      }
  }

  // `stored_as = value` lines in table order, and back into `c` (std::runtime_error "config
  // lacks 'x'" for a missing key, std::invalid_argument for a bad value).
  std::string stored_text(const Config& c) const {
    std::string out;
    for (const auto& r : rows_)
      if (!r.stored_as.empty()) out += fmt::format("{} = {}\n", r.stored_as, stored(r, c));
    return out;
  }
  void load_stored_text(const std::string& text, Config& c) const {
    const auto kv = settings_detail::stored_values(text);
    for (const auto& r : rows_) {
      if (r.stored_as.empty()) continue;
      const auto it = kv.find(r.stored_as);
      if (it == kv.end()) throw std::runtime_error(fmt::format("config lacks '{}'", r.stored_as));
      if (r.load) r.load(c, it->second);
      else r.set(c, it->second);
    }
  }

  // "variant=fpa heads=1 ..." for every setting but the execution ones, in table order: what a
  // run's result depends on, as one line (a results file records it to be matched later).
  std::string identity_line(const Config& c) const {
    std::string out;
    for (const auto& r : rows_)
      if (r.role != SettingRole::Execution) out += fmt::format("{}{}={}", out.empty() ? "" : " ", r.name, r.get(c));
    return out;
  }

  // "hidden = 64 there, 32 here; ..." for every stored identity setting that differs; "" none.
  std::string identity_differences(const Config& saved, const Config& wanted) const {
    std::string out;
    for (const auto& r : rows_) {
      if (r.role != SettingRole::Identity || r.stored_as.empty()) continue;
      const auto a = stored(r, saved), b = stored(r, wanted);
      if (a != b) out += fmt::format("{}{} = {} there, {} here", out.empty() ? "" : "; ", r.stored_as, a, b);
    }
    return out;
  }

 private:
  std::vector<Row> rows_;
  std::string what_;

  static std::string stored(const Row& r, const Config& c) { return r.store ? r.store(c) : r.get(c); }
  static bool keeps_on_zero(const ToolSettings& tool, const Row& r, const std::string& default_text) {
    return tool.keep_on_zero && (r.type == SettingType::Int || r.type == SettingType::Real) &&
           default_text == "0";
  }
};

}  // namespace fpa
