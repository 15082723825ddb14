// Argument checks that throw std::invalid_argument with a one-line message (no stack trace),
// so command-line tools can print it as is.
#pragma once

#include <stdexcept>
#include <string>

namespace fpa {
inline void check(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}
}  // namespace fpa
