// List values of options (cli_lists.h).
#include "cli_lists.h"

#include <cmath>
#include <exception>

namespace fpa {

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
