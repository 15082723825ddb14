// The one-line usage error every tool reports bad input with (usage_error.h).
#include "usage_error.h"

#include <cstdlib>
#include <iostream>

namespace fpa {

std::string one_line(const std::string& text) {
  std::string out = text.substr(0, text.find('\n'));
  for (auto& c : out)
    if ((unsigned char)c < 0x20 || c == 0x7f) c = '?';
  constexpr size_t kMax = 400;
  return out.size() > kMax ? out.substr(0, kMax) + "..." : out;
}

void fail_usage(const std::string& message) {
  std::cerr << "error: " << one_line(message) << std::endl;
  std::exit(2);
}

}  // namespace fpa
