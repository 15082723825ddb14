// Comma-separated list values of options ("--lengths 256,512"): split, parsed and checked, with
// a one-line usage error (exit 2) naming the option for anything malformed.
#pragma once

#include "experiments/usage_error.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace fpa {

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
