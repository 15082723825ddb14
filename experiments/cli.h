// Command-line options shared by every executable of the suite.
//
// Common flags: --help, --seed, --out, --threads, --config FILE (a file of `name = value` lines
// standing in for flags; flags on the command line win). Bad input ends the program with a
// one-line "error: ..." on stderr and exit code 2; --help prints usage and exits 0.
//
// parse() checks everything that can be checked before any work: unknown options, stray words,
// a flag whose value is missing (`--out --threads 1`), negative values of unsigned options, the
// declared ranges and checks, that declared inputs exist and that declared outputs (--out always)
// can be written; that no path option is given empty; that no output is an input, lies inside an
// input directory, is another output (or its .json sidecar) or a run directory's own file. A retired spelling (renamed_flags.h) is refused with the new name; flags are
// never abbreviated. A tool that checks more (memory, derived paths) uses the free functions below.
#pragma once

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

enum class PathKind { File, Dir, Any };

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
  // run directory, `own_files` are the names in it that are the run's (checkpoint, lock), which
  // no other output may be.
  void output(const std::string& name, PathKind kind, std::vector<std::string> own_files = {});

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
  std::vector<std::pair<std::string, PathKind>> inputs_, outputs_;
  std::map<std::string, std::vector<std::string>> own_files_;  // per output run directory

  void check_tokens(const po::parsed_options& parsed, const po::options_description& all) const;
  void check_paths() const;
  void check_overlaps() const;
};

// Prints "error: <message>" to stderr and exits with code 2. The message is cut to one line of
// printable characters (it may quote a file's bytes).
[[noreturn]] void fail_usage(const std::string& message);


// Why `path` cannot be written as a file (missing parent directories are created) or used as an
// output directory (kind Dir); empty when it can.
std::string why_not_writable(const std::string& path, PathKind kind);
// Exit 2 with "error: <what>: <reason>" unless `path` is writable / exists as `kind`.
void require_writable(const std::string& path, PathKind kind, const std::string& what);
void require_existing(const std::string& path, PathKind kind, const std::string& what);

// Refuses (exit 2) work whose memory estimate exceeds this machine's physical memory, with the
// estimate: "error: <what> needs about 12.0 GiB of memory (<detail>); this machine has 7.6 GiB".
void require_memory(double bytes, const std::string& what, const std::string& detail);
std::string human_bytes(double bytes);

// `text` as one line of printable characters, at most a few hundred: for messages that quote
// input (a LibTorch error's backtrace, a binary file's bytes).
std::string one_line(const std::string& text);

// Splits "a,b,c" into {"a","b","c"} (empty items rejected with a one-line error).
std::vector<std::string> split_list(const std::string& text, const std::string& option);
// The same, also refusing an item given twice (a list of cells to run, e.g. --policies).
std::vector<std::string> split_unique_list(const std::string& text, const std::string& option);
// Exit 2 with "error: --<option>: '<x>' is given twice" when a list has a repeated item.
template <class T>
void require_unique(const std::vector<T>& items, const std::string& option) {
  for (size_t i = 0; i < items.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (items[i] == items[j]) fail_usage(fmt::format("--{}: '{}' is given twice", option, items[i]));
}
std::vector<int> split_int_list(const std::string& text, const std::string& option);
// Finite numbers (optionally strictly between lo and hi); anything else is a one-line error
// (exit 2).
std::vector<double> split_double_list(const std::string& text, const std::string& option);
std::vector<double> split_double_list(const std::string& text, const std::string& option,
                                      double lo, double hi);

}  // namespace fpa
