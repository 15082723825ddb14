#include "cli.h"

#include "renamed_flags.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace fs = std::filesystem;

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
      ("config", po::value<std::string>(), "file of `name = value` lines standing in for flags")
      ("study-config", po::value<std::string>(),
       "the --config file of the study that ran this tool with flags (a driver passes it): "
       "recorded in the sidecar, no other effect");
  range("threads", 1, 1024);
  output("out", PathKind::File);
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

void Cli::input(const std::string& name, PathKind kind) { inputs_.emplace_back(name, kind); }
void Cli::output(const std::string& name, PathKind kind) { outputs_.emplace_back(name, kind); }

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

namespace {

// An old spelling of a flag this tool has under its new name (see renamed_flags.h).
void refuse_renamed(const std::string& name, const po::options_description& all,
                    const std::string& where) {
  const auto now = renamed_to(name);
  if (!now.empty() && !all.find_nothrow(name, false) && all.find_nothrow(now, false))
    fail_usage(fmt::format("{}--{} is now --{}", where, name, now));
}

// The `name` of every `name = value` line of a --config file.
std::vector<std::string> config_file_names(const std::string& path) {
  std::vector<std::string> names;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    auto name = line.substr(0, eq);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!name.empty() && name[0] != '#') names.push_back(name);
  }
  return names;
}

}  // namespace

void Cli::check_paths() const {
  for (const auto& [name, kind] : inputs_)
    if (has(name) && !get<std::string>(name).empty())
      require_existing(get<std::string>(name), kind, "--" + name);
  for (const auto& [name, kind] : outputs_)
    if (has(name) && !get<std::string>(name).empty())
      require_writable(get<std::string>(name), kind, "--" + name);
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
      const auto path = vm_["config"].as<std::string>();
      std::error_code ec;
      if (!fs::is_regular_file(path, ec))
        fail_usage(fmt::format("--config: '{}' is not a readable file", path));
      std::ifstream in(path);
      if (!in) fail_usage(fmt::format("--config: cannot read '{}'", path));
      for (const auto& name : config_file_names(path))
        refuse_renamed(name, all, fmt::format("--config '{}': ", path));
      const auto from_file = po::parse_config_file(in, all);
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

std::string why_not_writable(const std::string& path, PathKind kind) {
  std::error_code ec;
  const fs::path p(path);
  const auto st = fs::status(p, ec);
  if (fs::exists(st)) {
    if (kind == PathKind::Dir && !fs::is_directory(st))
      return fmt::format("'{}' exists and is not a directory", path);
    if (kind == PathKind::File && fs::is_directory(st))
      return fmt::format("'{}' is a directory", path);
    if (kind == PathKind::Dir) {
      if (::access(path.c_str(), W_OK | X_OK) != 0)
        return fmt::format("directory '{}' is not writable", path);
      return "";
    }
  }
  // The nearest existing ancestor must be a directory we can create entries in.
  fs::path up = p.parent_path();
  while (!up.empty() && !fs::exists(up, ec) && up != up.parent_path()) up = up.parent_path();
  if (up.empty()) up = ".";
  if (!fs::is_directory(up, ec))
    return fmt::format("cannot create '{}': '{}' is not a directory", path, up.string());
  if (::access(up.c_str(), W_OK | X_OK) != 0)
    return fmt::format("cannot create '{}': directory '{}' is not writable", path, up.string());
  return "";
}

void require_writable(const std::string& path, PathKind kind, const std::string& what) {
  if (const auto why = why_not_writable(path, kind); !why.empty())
    fail_usage(fmt::format("{}: {}", what, why));
}

void require_existing(const std::string& path, PathKind kind, const std::string& what) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!fs::exists(st)) fail_usage(fmt::format("{}: '{}' does not exist", what, path));
  if (kind == PathKind::Dir && !fs::is_directory(st))
    fail_usage(fmt::format("{}: '{}' is not a directory", what, path));
  if (kind == PathKind::File && !fs::is_regular_file(st))
    fail_usage(fmt::format("{}: '{}' is not a regular file", what, path));
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) bytes /= 1024, ++u;
  return u >= 6 && bytes >= 1024 ? std::string("more than 1024 EiB") : fmt::format("{:.1f} {}", bytes, units[u]);
}

void require_memory(double bytes, const std::string& what, const std::string& detail) {
  const double have = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE));
  if (!(bytes <= have))
    fail_usage(fmt::format("{} needs about {} of memory ({}); this machine has {}", what,
                           human_bytes(bytes), detail, human_bytes(have)));
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

std::vector<std::string> split_unique_list(const std::string& text, const std::string& option) {
  auto items = split_list(text, option);
  require_unique(items, option);
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
