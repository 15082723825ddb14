// The Cli class (cli.h): declaring, parsing and checking a tool's options. Its path checks are
// in cli_paths.cpp, --config files are read by config_file.cpp, lists by cli_lists.cpp.
#include "cli.h"

#include "config_file.h"
#include "renamed_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <iostream>

namespace fpa {

namespace {

// An exception no tool caught (a full disk deep in a library, LibTorch's errors): one line,
// exit 1 (2 for bad input), instead of "terminate called ..." and an abort with a backtrace.
[[noreturn]] void report_uncaught() {
  std::string what = "unknown error";
  int code = 1;
  try {
    if (auto e = std::current_exception()) std::rethrow_exception(e);
  } catch (const UsageError& e) {
    what = e.what(), code = 2;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  std::cerr << "error: " << one_line(what) << std::endl;
  std::_Exit(code);
}

}  // namespace

Cli::Cli(std::string program, std::string summary, std::string default_out)
    : program_(std::move(program)), summary_(std::move(summary)) {
  std::set_terminate(report_uncaught);
  common_.add_options()
      ("help,h", "print this help and exit")
      ("seed", po::value<uint64_t>()->default_value(0), "random seed (every result is a function of it)")
      ("out", po::value<std::string>()->default_value(default_out), "output CSV path")
      ("threads", po::value<int>()->default_value(1), "intra-op threads (1 is fastest for small models here)")
      ("config", po::value<std::string>(), "file of `name = value` lines standing in for flags")
      ("study-config", po::value<std::string>(),
       "the --config file of the study that ran this tool with flags (a driver passes it): "
       "recorded in the sidecar, no other effect");
  range("threads", 1, 1024);
  output("out", PathKind::File);
  // What every tool reads: no output may overwrite them.
  input("config", PathKind::File);
  input("study-config", PathKind::File);
}

void Cli::require(std::function<bool(const po::variables_map&)> ok, std::string message) {
  checks_.emplace_back(std::move(ok), std::move(message));
}

void Cli::range(const std::string& name, double lo, double hi) {
  require(
      [name, lo, hi](const po::variables_map& vm) {
        if (!vm.count(name) || vm[name].empty()) return true;
        const auto& a = vm[name].value();
        double x;
        if (auto p = boost::any_cast<int>(&a)) x = *p;
        else if (auto p = boost::any_cast<int64_t>(&a)) x = double(*p);
        else if (auto p = boost::any_cast<uint64_t>(&a)) x = double(*p);
        else if (auto p = boost::any_cast<double>(&a)) x = *p;
        else return true;
        return x >= lo && x <= hi;
      },
      fmt::format("--{} must be in [{}, {}]", name, lo, hi));
}

void Cli::int_list_range(const std::string& name, int lo, int hi) {
  require(
      [name, lo, hi](const po::variables_map& vm) {
        if (!vm.count(name) || vm[name].empty()) return true;
        const auto items = split_int_list(vm[name].as<std::string>(), name);
        require_unique(items, name);
        return std::all_of(items.begin(), items.end(), [&](int x) { return x >= lo && x <= hi; });
      },
      fmt::format("--{}: every value must be in [{}, {}]", name, lo, hi));
}

void Cli::input(const std::string& name, PathKind kind) { inputs_.push_back({name, kind, {}, {}}); }
void Cli::output(const std::string& name, PathKind kind, std::vector<std::string> own_entries) {
  outputs_.push_back({name, kind, {}, std::move(own_entries)});
}
void Cli::input(const std::string& label, PathKind kind, PathsOf paths) {
  inputs_.push_back({label, kind, std::move(paths), {}});
}
void Cli::output(const std::string& label, PathKind kind, PathsOf paths) {
  outputs_.push_back({label, kind, std::move(paths), {}});
}

// What boost::program_options lets through: words that are no option (it drops them), an option
// that took the next flag as its value, and "-1" for an unsigned option (it wraps around).
void Cli::check_tokens(const po::parsed_options& parsed, const po::options_description& all) const {
  for (const auto& o : parsed.options) {
    if (o.string_key.empty() || o.position_key >= 0)
      fail_usage(fmt::format("unexpected argument '{}' (every setting is a --name value pair)",
                             o.original_tokens.empty() ? std::string() : o.original_tokens[0]));
    if (o.value.size() != 1) continue;
    const auto& v = o.value[0];
    if (v.rfind("--", 0) == 0 && all.find_nothrow(v.substr(2, v.find('=') - 2), false))
      fail_usage(fmt::format("--{} is missing its value (the next word, '{}', is an option)",
                             o.string_key, v));
    const auto* d = all.find_nothrow(o.string_key, false);
    if (d && v.find('-') != std::string::npos) {
      boost::any probe;
      d->semantic()->apply_default(probe);
      if (boost::any_cast<uint64_t>(&probe))
        fail_usage(fmt::format("--{} must be a non-negative integer, not '{}'", o.string_key, v));
    }
  }
}

void Cli::parse(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) command_line_ += (i ? " " : "") + std::string(argv[i]);
  po::options_description all;
  all.add(specific_).add(common_);
  for (int i = 1; i < argc; ++i) {
    const std::string token = argv[i];
    if (token.rfind("--", 0) == 0) refuse_renamed(token.substr(2, token.find('=') - 2), all, "");
  }
  try {
    // No abbreviations: a prefix would silently pick another flag (--embed for --embed-std).
    const auto style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    const auto parsed = po::command_line_parser(argc, argv).options(all).style(style).run();
    check_tokens(parsed, all);
    po::store(parsed, vm_);
    if (vm_.count("help")) {
      std::cout << program_ << ": " << summary_ << "\n\nUsage: " << program_ << " [options]\n\n"
                << all << std::endl;
      std::exit(0);
    }
    if (vm_.count("config")) {
      const auto from_file = read_config_file(vm_["config"].as<std::string>(), all);
      check_tokens(from_file, all);
      po::store(from_file, vm_);  // earlier (command-line) values win
    }
    po::notify(vm_);
  } catch (const po::error& e) {
    fail_usage(e.what());
  } catch (const std::exception& e) {
    fail_usage(e.what());
  }
  for (const auto& [ok, message] : checks_) {
    bool good = false;
    try {
      good = ok(vm_);
    } catch (const std::exception& e) {
      fail_usage(message + " (" + e.what() + ")");
    }
    if (!good) fail_usage(message);
  }
  check_paths();
}

std::map<std::string, std::string> Cli::config() const {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : vm_) {
    if (name == "help" || value.empty()) continue;
    const auto& a = value.value();
    if (auto p = boost::any_cast<std::string>(&a)) out[name] = *p;
    else if (auto p = boost::any_cast<int>(&a)) out[name] = std::to_string(*p);
    else if (auto p = boost::any_cast<int64_t>(&a)) out[name] = std::to_string(*p);
    else if (auto p = boost::any_cast<uint64_t>(&a)) out[name] = std::to_string(*p);
    else if (auto p = boost::any_cast<double>(&a)) out[name] = fmt::format("{}", *p);
    else if (auto p = boost::any_cast<bool>(&a)) out[name] = *p ? "true" : "false";
    else out[name] = "?";
  }
  return out;
}

}  // namespace fpa
