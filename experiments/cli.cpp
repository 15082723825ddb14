#include "cli.h"

#include <fmt/format.h>

#include <cmath>

#include <fstream>
#include <iostream>

namespace fpa {

void fail_usage(const std::string& message) {
  std::cerr << "error: " << message << std::endl;
  std::exit(2);
}

Cli::Cli(std::string program, std::string summary, std::string default_out)
    : program_(std::move(program)), summary_(std::move(summary)) {
  common_.add_options()
      ("help,h", "print this help and exit")
      ("seed", po::value<uint64_t>()->default_value(0), "random seed (every result is a function of it)")
      ("out", po::value<std::string>()->default_value(default_out), "output CSV path")
      ("threads", po::value<int>()->default_value(1), "intra-op threads (1 is fastest for small models here)")
      ("config", po::value<std::string>(), "file of `name = value` lines standing in for flags");
  range("threads", 1, 1024);
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

void Cli::parse(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) command_line_ += (i ? " " : "") + std::string(argv[i]);
  po::options_description all;
  all.add(specific_).add(common_);
  try {
    po::store(po::command_line_parser(argc, argv).options(all).run(), vm_);
    if (vm_.count("help")) {
      std::cout << program_ << ": " << summary_ << "\n\nUsage: " << program_ << " [options]\n\n"
                << all << std::endl;
      std::exit(0);
    }
    if (vm_.count("config")) {
      const auto path = vm_["config"].as<std::string>();
      std::ifstream in(path);
      if (!in) fail_usage(fmt::format("cannot read config file '{}'", path));
      po::store(po::parse_config_file(in, all), vm_);  // earlier (command-line) values win
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

std::vector<std::string> split_list(const std::string& text, const std::string& option) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    auto item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) fail_usage(fmt::format("--{}: empty item in list '{}'", option, text));
    items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

namespace {

// Parses every item of a list with `parse` (std::stoi, std::stod), which must consume the whole
// item; anything else is a one-line usage error saying that the item is not `what`.
template <class T, class Parse>
std::vector<T> parse_list(const std::string& text, const std::string& option, const char* what,
                          Parse parse) {
  std::vector<T> out;
  for (const auto& s : split_list(text, option)) {
    size_t used = 0;
    T x{};
    try {
      x = parse(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size()) fail_usage(fmt::format("--{}: '{}' is not {}", option, s, what));
    out.push_back(x);
  }
  return out;
}

}  // namespace

std::vector<int> split_int_list(const std::string& text, const std::string& option) {
  return parse_list<int>(text, option, "an integer",
                         [](const std::string& s, size_t* used) { return std::stoi(s, used); });
}

std::vector<double> split_double_list(const std::string& text, const std::string& option) {
  auto out = parse_list<double>(text, option, "a number",
                                [](const std::string& s, size_t* used) { return std::stod(s, used); });
  for (double x : out)
    if (!std::isfinite(x)) fail_usage(fmt::format("--{}: '{}' is not a finite number", option, x));
  return out;
}

std::vector<double> split_double_list(const std::string& text, const std::string& option,
                                      double lo, double hi) {
  auto out = split_double_list(text, option);
  for (double x : out)
    if (!(x > lo && x < hi))
      fail_usage(fmt::format("--{}: '{}' is not a number in ({}, {})", option, x, lo, hi));
  return out;
}

}  // namespace fpa
