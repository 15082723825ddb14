// Bad input found by library code before any work (an existing run, a corrupt or mismatched
// checkpoint, an empty corpus): executables report it like fpa::fail_usage, one line and exit 2.
#pragma once

#include <stdexcept>
#include <string>

namespace fpa {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Prints "error: <message>" to stderr and exits with code 2. The message is cut to one line of
// printable characters (it may quote a file's bytes).
[[noreturn]] void fail_usage(const std::string& message);

// `text` as one line of printable characters, at most a few hundred: for messages that quote
// input (a LibTorch error's backtrace, a binary file's bytes).
std::string one_line(const std::string& text);

}  // namespace fpa
