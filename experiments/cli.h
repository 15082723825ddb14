// Command-line options shared by every executable of the suite.
//
// Common flags: --help, --seed, --out, --threads, --config FILE (a file of `name = value` lines
// standing in for flags; flags on the command line win). Bad input ends the program with a
// one-line "error: ..." on stderr and exit code 2; --help prints usage and exits 0.
//
// parse() checks everything that can be checked before any work: unknown options, stray words,
// a flag whose value is missing (`--out --threads 1`), negative values of unsigned options, the
// declared ranges and checks, that declared inputs exist and that declared outputs (--out always)
// can be written; that no path option is given empty (unless empty means none); and, in one place
// (check_overlaps, cli_paths.cpp), that no output is or lies inside an input or another output
// (or its .json sidecar), lies inside another output directory's own entries, or inside a folder
// that another run owns (run_dir.h: a run directory's .lock, a sweep's .sweep marker). Every path
// a tool reads or writes is declared here: the value of a path option, or paths computed from the
// options (a list's files, a derived default, a checkpoint's sidecar). --config and
// --study-config are inputs of every tool. A retired spelling (renamed_flags.h) is refused with
// the new name; flags are never abbreviated. A tool that checks more uses the free functions of the headers included
// below: list values (cli_lists.h), derived paths (cli_paths.h), memory (memory_check.h).
#pragma once

#include "experiments/cli_lists.h"
#include "experiments/cli_paths.h"
#include "experiments/memory_check.h"
#include "experiments/usage_error.h"

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fpa {

namespace po = boost::program_options;

class Cli {
 public:
  Cli(std::string program, std::string summary, std::string default_out);

  // Tool-specific options, e.g. cli.add()("steps", po::value<int>()->default_value(100), "...")
  po::options_description_easy_init add() { return specific_.add_options(); }

  // A check run after parsing; `ok` false ends the program with "error: <message>", exit 2.
  void require(std::function<bool(const po::variables_map&)> ok, std::string message);
  // Shorthand for a numeric range check on one option.
  void range(const std::string& name, double lo, double hi);
  // The same for an option holding a comma-separated list of distinct integers.
  void int_list_range(const std::string& name, int lo, int hi);
  // An option naming a path that must exist (when given and non-empty) ...
  void input(const std::string& name, PathKind kind);
  // ... or one that will be written: its location must be writable (checked in parse()). For a
  // run directory, `own_entries` are the names in it that are the run's (checkpoint, lock, a
  // sweep's runs/ and logs/), which no other output may be or lie inside.
  void output(const std::string& name, PathKind kind, std::vector<std::string> own_entries = {});
  // Paths computed from the parsed options, for what no option holds as it is: the files of a
  // list, a name that is a path only sometimes, a default derived from another option, the
  // sidecar beside a checkpoint. `label` names them in errors (e.g. "--tasks"). Computed inputs
  // are read when present (their readers check existence); computed outputs must be writable.
  using PathsOf = std::function<std::vector<std::string>(const Cli&)>;
  void input(const std::string& label, PathKind kind, PathsOf paths);
  void output(const std::string& label, PathKind kind, PathsOf paths);
  // For an output option whose --help says that an empty value means no such output.
  void empty_means_none(const std::string& name) { empty_means_none_.push_back(name); }

  void parse(int argc, char** argv);

  uint64_t seed() const { return vm_["seed"].as<uint64_t>(); }
  int threads() const { return vm_["threads"].as<int>(); }
  std::string out() const { return vm_["out"].as<std::string>(); }
  const std::string& program() const { return program_; }
  const std::string& command_line() const { return command_line_; }

  template <class T>
  T get(const std::string& name) const { return vm_[name].as<T>(); }
  bool has(const std::string& name) const { return vm_.count(name) > 0 && !vm_[name].empty(); }
  bool flag(const std::string& name) const { return has(name) && vm_[name].as<bool>(); }
  const po::variables_map& variables() const { return vm_; }

  // Every option's final value as text, for provenance records.
  std::map<std::string, std::string> config() const;

 private:
  std::string program_, summary_, command_line_;
  po::options_description common_{"Common options"};
  po::options_description specific_{"Options"};
  po::variables_map vm_;
  std::vector<std::pair<std::function<bool(const po::variables_map&)>, std::string>> checks_;
  // A declared path: an option's value, or paths computed from the options.
  struct Declared {
    std::string label;  // the option's name, or the label of computed paths
    PathKind kind;
    PathsOf paths;      // empty: the option `label` itself
    std::vector<std::string> own_entries;
  };
  std::vector<Declared> inputs_, outputs_;
  std::vector<std::string> empty_means_none_;

  std::vector<std::string> paths_of(const Declared& d) const;

  void check_tokens(const po::parsed_options& parsed, const po::options_description& all) const;
  void check_paths() const;
  void check_overlaps() const;
};

}  // namespace fpa
