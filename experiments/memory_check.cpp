// The memory check of work before it starts (memory_check.h).
#include "memory_check.h"

#include "usage_error.h"

#include <fmt/format.h>

#include <unistd.h>

namespace fpa {

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) bytes /= 1024, ++u;
  return u >= 6 && bytes >= 1024 ? std::string("more than 1024 EiB") : fmt::format("{:.1f} {}", bytes, units[u]);
}

void require_memory(double bytes, const std::string& what, const std::string& detail) {
  const double have = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE));
  if (!(bytes <= have))
    fail_usage(fmt::format("{} needs about {} of memory ({}); this machine has {}", what,
                           human_bytes(bytes), detail, human_bytes(have)));
}

}  // namespace fpa
