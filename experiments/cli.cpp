#include "cli.h"

#include "renamed_flags.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace fs = std::filesystem;

namespace fpa {

std::string one_line(const std::string& text) {
  std::string out = text.substr(0, text.find('\n'));
  for (auto& c : out)
    if ((unsigned char)c < 0x20 || c == 0x7f) c = '?';
  constexpr size_t kMax = 400;
  return out.size() > kMax ? out.substr(0, kMax) + "..." : out;
}

void fail_usage(const std::string& message) {
  std::cerr << "error: " << one_line(message) << std::endl;
  std::exit(2);
}

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
void Cli::output(const std::string& name, PathKind kind, std::vector<std::string> own_files) {
  outputs_.emplace_back(name, kind);
  own_files_[name] = std::move(own_files);
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

namespace {

// An old spelling of a flag this tool has under its new name (see renamed_flags.h).
void refuse_renamed(const std::string& name, const po::options_description& all,
                    const std::string& where) {
  const auto now = renamed_to(name);
  if (!now.empty() && !all.find_nothrow(name, false) && all.find_nothrow(now, false))
    fail_usage(fmt::format("{}--{} is now --{}", where, name, now));
}

// No NUL or other control bytes but tabs and line ends (UTF-8 is fine); rewinds `in`.
bool is_text(std::istream& in) {
  char c;
  while (in.get(c))
    if ((unsigned char)c < 0x20 && c != '\t' && c != '\n' && c != '\r') return false;
  in.clear();
  in.seekg(0);
  return true;
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

namespace {

// `inner` is `outer` or lies below it (both made absolute, symbolic links resolved).
bool lies_inside(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const auto a = fs::weakly_canonical(inner, ec), b = fs::weakly_canonical(outer, ec);
  return std::mismatch(b.begin(), b.end(), a.begin(), a.end()).first == b.end();
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

}  // namespace

// An output that is an input (or lies in an input directory, which the tool may read whole), or
// that is another output, would destroy what the run reads or writes: refused before any work.
void Cli::check_overlaps() const {
  struct Path {
    std::string option, path;
    bool dir;
  };
  auto declared = [&](const std::vector<std::pair<std::string, PathKind>>& list) {
    std::vector<Path> out;
    for (const auto& [name, kind] : list)
      if (has(name) && !get<std::string>(name).empty()) {
        const auto path = get<std::string>(name);
        std::error_code ec;
        out.push_back({name, path, kind == PathKind::Dir || fs::is_directory(path, ec)});
      }
    return out;
  };
  const auto inputs = declared(inputs_), outputs = declared(outputs_);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& o = outputs[i];
    for (const auto& in : inputs) {
      if (in.dir && lies_inside(o.path, in.path))
        fail_usage(fmt::format("--{} '{}' lies inside --{} '{}', which this tool reads", o.option,
                               o.path, in.option, in.path));
      if (same_file(o.path, in.path))
        fail_usage(fmt::format("--{} '{}' is the same file as --{} '{}', which this tool reads",
                               o.option, o.path, in.option, in.path));
    }
    for (size_t j = 0; j < outputs.size(); ++j) {
      const auto& other = outputs[j];
      if (j == i) continue;
      if (j < i && same_file(o.path, other.path))
        fail_usage(fmt::format("--{} and --{} are the same file '{}'", other.option, o.option, o.path));
      if (!other.dir && same_file(o.path, other.path + ".json"))
        fail_usage(fmt::format("--{} '{}' is the sidecar of --{}", o.option, o.path, other.option));
      if (other.dir)
        for (const auto& own : own_files_.at(other.option))
          if (same_file(o.path, fs::path(other.path) / own))
            fail_usage(fmt::format("--{} '{}' is the run's own '{}' in --{} '{}'", o.option, o.path,
                                   own, other.option, other.path));
    }
  }
}

void Cli::check_paths() const {
  // An empty path means the working directory or the file system's root to the code below.
  for (const auto* list : {&inputs_, &outputs_})
    for (const auto& [name, kind] : *list)
      if (vm_.count(name) && !vm_[name].defaulted() && get<std::string>(name).empty())
        fail_usage(fmt::format("--{} is empty (a path is needed)", name));
  for (const auto& [name, kind] : inputs_)
    if (has(name) && !get<std::string>(name).empty())
      require_existing(get<std::string>(name), kind, "--" + name);
  for (const auto& [name, kind] : outputs_)
    if (has(name) && !get<std::string>(name).empty())
      require_writable(get<std::string>(name), kind, "--" + name);
  check_overlaps();
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
      std::ifstream in(path, std::ios::binary);
      if (!in) fail_usage(fmt::format("--config: cannot read '{}'", path));
      if (!is_text(in))
        fail_usage(fmt::format("--config: '{}' is not a text file of `name = value` lines", path));
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
