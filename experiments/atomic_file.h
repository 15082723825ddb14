// Files that are either complete or absent: write to a temporary file in the same directory,
// flush it to disk, then rename over the target (rename is atomic on POSIX file systems).
#pragma once

#include <string>

namespace fpa {

void write_file_atomic(const std::string& path, const std::string& content);
// Runs `write(tmp_path)` (which must create tmp_path), then renames it onto `path`.
template <class Writer>
void replace_atomic(const std::string& path, Writer&& write);
std::string temp_path_for(const std::string& path);
void rename_onto(const std::string& tmp, const std::string& path);
void make_parent_dirs(const std::string& path);

template <class Writer>
void replace_atomic(const std::string& path, Writer&& write) {
  make_parent_dirs(path);
  const auto tmp = temp_path_for(path);
  write(tmp);
  rename_onto(tmp, path);
}

}  // namespace fpa
