// Argument checks that throw std::invalid_argument with a one-line message (no stack trace),
// so command-line tools can print it as is.
#pragma once

#include <fmt/format.h>

#include <cmath>
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

// The attention options' scalars. `x >= 0` alone lets +inf through, which turns every logit
// (scale) or every straight-through weight (temperature) into NaN without an error.
inline void check_scale_and_temperature(double scale, double st_temperature, const char* who) {
  check(std::isfinite(scale) && scale >= 0,
        "{}: scale must be finite and >= 0 (0 means 1/sqrt(D)), got {}", who, scale);
  check(std::isfinite(st_temperature) && st_temperature > 0,
        "{}: straight-through temperature must be finite and > 0, got {}", who, st_temperature);
}
}  // namespace fpa
