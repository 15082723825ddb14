// Command-line options shared by every executable of the suite.
//
// Common flags: --help, --seed, --out, --threads, --config FILE (a file of `name = value` lines
// standing in for flags; flags on the command line win). Bad input ends the program with a
// one-line "error: ..." on stderr and exit code 2; --help prints usage and exits 0.
#pragma once

#include <boost/program_options.hpp>

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

  // Every option's final value as text, for provenance records.
  std::map<std::string, std::string> config() const;

 private:
  std::string program_, summary_, command_line_;
  po::options_description common_{"Common options"};
  po::options_description specific_{"Options"};
  po::variables_map vm_;
  std::vector<std::pair<std::function<bool(const po::variables_map&)>, std::string>> checks_;
};

// Prints "error: <message>" to stderr and exits with code 2.
[[noreturn]] void fail_usage(const std::string& message);

// Splits "a,b,c" into {"a","b","c"} (empty items rejected with a one-line error).
std::vector<std::string> split_list(const std::string& text, const std::string& option);
std::vector<int> split_int_list(const std::string& text, const std::string& option);
// Finite numbers (optionally strictly between lo and hi); anything else is a one-line error
// (exit 2).
std::vector<double> split_double_list(const std::string& text, const std::string& option);
std::vector<double> split_double_list(const std::string& text, const std::string& option,
                                      double lo, double hi);

}  // namespace fpa
