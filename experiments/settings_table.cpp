#include "experiments/settings_table.h"

#include <cmath>
#include <sstream>

namespace fpa {
namespace {

// `s` parsed whole by `parse` (std::stoll, std::stod); `what` names what it must be.
template <class T, class Parse>
T parse_whole(const std::string& s, Parse parse, const char* what) {
  size_t used = 0;
  T v{};
  try {
    v = parse(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (s.empty() || used != s.size()) throw std::invalid_argument(fmt::format("'{}' is not {}", s, what));
  return v;
}

}  // namespace

int64_t setting_int(const std::string& s) {
  return parse_whole<int64_t>(s, [](const std::string& x, size_t* u) { return std::stoll(x, u); }, "an integer");
}

double setting_real(const std::string& s) {
  const char* what = "a finite number";
  const double v = parse_whole<double>(s, [](const std::string& x, size_t* u) { return std::stod(x, u); }, what);
  if (!std::isfinite(v)) throw std::invalid_argument(fmt::format("'{}' is not {}", s, what));
  return v;
}

bool setting_switch(const std::string& s) {
  if (s == "true" || s == "1" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "0" || s == "no" || s == "off") return false;
  throw std::invalid_argument(fmt::format("'{}' is not true or false", s));
}

namespace settings_detail {

void check_range(const std::string& name, SettingType type, double lo, double hi, const std::string& value) {
  if (type != SettingType::Int && type != SettingType::Real) return;
  const double v = type == SettingType::Int ? double(setting_int(value)) : setting_real(value);
  if (v < lo || v > hi)
    throw std::invalid_argument(fmt::format("{} must be in [{:g}, {:g}], got {}", name, lo, hi, value));
}

void declare(Cli& cli, const std::string& name, SettingType type, const std::string& default_text,
             const std::string& help) {
  const char* n = name.c_str();
  switch (type) {
    case SettingType::Int: cli.add()(n, po::value<int64_t>()->default_value(setting_int(default_text)), help.c_str()); break;
    case SettingType::Real: cli.add()(n, po::value<double>()->default_value(setting_real(default_text)), help.c_str()); break;
    case SettingType::Switch: cli.add()(n, po::bool_switch()->default_value(setting_switch(default_text)), help.c_str()); break;
    case SettingType::Text: cli.add()(n, po::value<std::string>()->default_value(default_text), help.c_str()); break;
  }
}

std::string given_text(const po::variables_map& vm, const std::string& name, SettingType type) {
  if (!vm.count(name) || vm[name].empty()) return "";
  const auto& a = vm[name].value();
  switch (type) {
    case SettingType::Int: return setting_text(boost::any_cast<int64_t>(a));
    case SettingType::Real: return setting_text(boost::any_cast<double>(a));
    case SettingType::Switch: return setting_text(boost::any_cast<bool>(a));
    case SettingType::Text: return boost::any_cast<std::string>(a);
  }
  return "";
}

std::map<std::string, std::string> stored_values(const std::string& text) {
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (const auto eq = line.find(" = "); eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 3);
  return kv;
}

}  // namespace settings_detail
}  // namespace fpa
