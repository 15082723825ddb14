// --config files (config_file.h).
#include "config_file.h"

#include "renamed_flags.h"
#include "usage_error.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace fpa {
namespace {

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

po::parsed_options read_config_file(const std::string& path, const po::options_description& all) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    fail_usage(fmt::format("--config: '{}' is not a readable file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_usage(fmt::format("--config: cannot read '{}'", path));
  if (!is_text(in))
    fail_usage(fmt::format("--config: '{}' is not a text file of `name = value` lines", path));
  for (const auto& name : config_file_names(path))
    refuse_renamed(name, all, fmt::format("--config '{}': ", path));
  return po::parse_config_file(in, all);
}

}  // namespace fpa
