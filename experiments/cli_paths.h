// Whether a path option can be read or written, checked before any work. Cli::parse applies
// these to the options a tool declares with input() and output(); a tool that derives more
// paths calls them itself.
#pragma once

#include <string>

namespace fpa {

enum class PathKind { File, Dir, Any };

// Why `path` cannot be written as a file (missing parent directories are created) or used as an
// output directory (kind Dir); empty when it can.
std::string why_not_writable(const std::string& path, PathKind kind);
// Exit 2 with "error: <what>: <reason>" unless `path` is writable / exists as `kind`.
void require_writable(const std::string& path, PathKind kind, const std::string& what);
void require_existing(const std::string& path, PathKind kind, const std::string& what);

}  // namespace fpa
