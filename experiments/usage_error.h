// Bad input found by library code before any work (an existing run, a corrupt or mismatched
// checkpoint, an empty corpus): executables report it like fpa::fail_usage, one line and exit 2.
#pragma once

#include <stdexcept>

namespace fpa {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace fpa
