// SHA-256 of a byte string, as 64 lower-case hex digits (what `sha256sum` prints). OpenSSL's
// libcrypto (libssl-dev) computes it; this header keeps OpenSSL out of its callers.
#pragma once

#include <string>

namespace fpa::lm {

std::string sha256_hex(const std::string& bytes);

}  // namespace fpa::lm
