#include "atomic_file.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>
#include <fcntl.h>

namespace fpa {

std::string temp_path_for(const std::string& path) {
  return fmt::format("{}.tmp.{}", path, ::getpid());
}

void make_parent_dirs(const std::string& path) {
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
}

void rename_onto(const std::string& tmp, const std::string& path) {
  if (int fd = ::open(tmp.c_str(), O_RDONLY); fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot rename '{}' onto '{}'", tmp, path));
  }
}

void write_file_atomic(const std::string& path, const std::string& content) {
  replace_atomic(path, [&](const std::string& tmp) {
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw std::runtime_error(fmt::format("cannot write '{}'", tmp));
    const bool ok = std::fwrite(content.data(), 1, content.size(), f) == content.size();
    std::fclose(f);
    if (!ok) throw std::runtime_error(fmt::format("short write to '{}'", tmp));
  });
}

}  // namespace fpa
