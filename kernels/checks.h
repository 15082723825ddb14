// Argument checks that throw std::invalid_argument with a one-line message (no stack trace),
// so command-line tools can print it as is.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace fpa {
// A literal message costs nothing when the check passes (no std::string is built).
inline void check(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(what);
}
inline void check(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}
// The message is formatted only on failure: for checks inside loops and per-token paths.
template <class... Args>
void check(bool ok, fmt::format_string<Args...> format, Args&&... args) {
  if (!ok) throw std::invalid_argument(fmt::format(format, std::forward<Args>(args)...));
}
}  // namespace fpa
