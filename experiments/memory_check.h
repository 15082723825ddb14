// Work too large for this machine is refused before it starts, with the estimate.
#pragma once

#include <string>

namespace fpa {

// Refuses (exit 2) work whose memory estimate exceeds this machine's physical memory, with the
// estimate: "error: <what> needs about 12.0 GiB of memory (<detail>); this machine has 7.6 GiB".
void require_memory(double bytes, const std::string& what, const std::string& detail);
std::string human_bytes(double bytes);

}  // namespace fpa
