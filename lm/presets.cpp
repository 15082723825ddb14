#include "lm/presets.h"

#include "lm/settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace fpa::lm {
namespace {

// Smallest model first (tiny, small, ..., paper), whatever the files are called.
std::vector<Preset> make_presets() {
  std::vector<Preset> all;
  for (const auto& [name, text] : preset_files()) all.push_back(parse_preset(name, text));
  auto size = [](const Preset& p) { return double(p.model.layers) * double(p.model.hidden) * double(p.model.hidden); };
  std::sort(all.begin(), all.end(), [&](const Preset& a, const Preset& b) {
    return size(a) != size(b) ? size(a) < size(b) : a.name < b.name;
  });
  return all;
}

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = make_presets();
  return all;
}

}  // namespace

std::string preset_dir() {
  const char* env = std::getenv("FPA_PRESET_DIR");
  return env && *env ? std::string(env) : std::string(FPA_PRESET_DIR);
}

std::vector<std::pair<std::string, std::string>> preset_files() {
  const auto dir = preset_dir();
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw std::invalid_argument(fmt::format("no preset folder '{}' (FPA_PRESET_DIR)", dir));
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".conf") continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) throw std::invalid_argument(fmt::format("cannot read preset file '{}'", e.path().string()));
    files.emplace_back(e.path().stem().string(), text.str());
  }
  std::sort(files.begin(), files.end());
  return files;
}

Preset parse_preset(const std::string& name, const std::string& text) {
  Preset p{name, {}, {}, ""};
  // The field table's names (lm/settings.h; a preset file is also a valid lm-train --config
  // file). Not the variant, which every preset serves, nor the implementation, a run setting.
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto where = fmt::format("configs/lm/{}.conf line {}", name, number);
    if (const auto hash = line.find('#'); hash != std::string::npos) {
      if (p.note.empty() && trim(line.substr(0, hash)).empty()) p.note = trim(line.substr(hash + 1));
      line.resize(hash);
    }
    line = trim(line);
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) throw std::invalid_argument(where + ": expected `name = value`");
    const auto key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    try {
      if (key == "preset") {
        if (value != name) throw std::invalid_argument("it names another preset");
      } else if (key == "variant" || key == "impl") {
        throw std::invalid_argument("a preset serves every variant and implementation");
      } else {
        apply_setting(p.model, p.train, key, value);
      }
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("{}: bad setting '{}': {}", where, line, e.what()));
    }
  }
  return p;
}

const Preset& preset(const std::string& name) {
  for (const auto& p : presets())
    if (p.name == name) return p;
  throw std::invalid_argument(fmt::format("unknown preset '{}' ({}; a preset is a file {}/<name>.conf)",
                                          name, fmt::join(preset_names(), ", "), preset_dir()));
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.name);
  return names;
}

}  // namespace fpa::lm
