#include "atomic_file.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <stdexcept>

namespace fpa {

bool stale_temp(const std::string& file) {
  static const std::regex temp(R"(.+\.tmp\.(\d{1,9}))");
  std::smatch m;
  const auto name = std::filesystem::path(file).filename().string();
  if (!std::regex_match(name, m, temp)) return false;
  const long pid = std::stol(m[1].str());
  return pid != ::getpid() && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH;
}

std::string temp_path_for(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  const auto dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const auto prefix = target.filename().string() + ".tmp.";
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && entry.is_regular_file(ec) && stale_temp(name))
      fs::remove(entry.path(), ec);
  }
  return fmt::format("{}.tmp.{}", path, ::getpid());
}

void make_parent_dirs(const std::string& path) {
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

CheckedFile::CheckedFile(const std::string& path, std::string name) : name_(std::move(name)) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error(fmt::format("cannot write '{}': {}", name_, std::strerror(errno)));
}

CheckedFile::~CheckedFile() {
  if (fd_ >= 0) ::close(fd_);
}

size_t CheckedFile::write(const void* data, size_t n) noexcept {
  const auto* p = static_cast<const char*>(data);
  for (size_t left = n; left > 0 && !error_;) {
    const ssize_t w = ::write(fd_, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      error_ = w < 0 ? errno : ENOSPC;
      break;
    }
    p += w, left -= size_t(w);
  }
  return n;
}

void CheckedFile::finish() {
  int error = error_;
  if (!error && ::fsync(fd_) != 0) error = errno;  // a full disk may show only here (NFS, tmpfs)
  if (::close(fd_) != 0 && !error) error = errno;
  fd_ = -1;
  if (error) throw std::runtime_error(fmt::format("cannot write '{}': {}", name_, std::strerror(error)));
}

namespace {

// The test hook of rename_onto: the number of renames left before the kill (0: never).
long renames_before_kill() {
  static long left = [] {
    const char* k = std::getenv("FPA_TEST_STOP_AT_RENAME");
    return k ? std::atol(k) : 0L;
  }();
  return left > 0 ? left-- : 0;
}

void write_temp(const std::string& tmp, const std::string& path, const std::string& content) {
  CheckedFile f(tmp, path);
  f.write(content.data(), content.size());
  f.finish();
}

}  // namespace

void rename_onto(const std::string& tmp, const std::string& path) {
  if (int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    const bool synced = ::fsync(fd) == 0;
    const int error = errno;
    ::close(fd);
    if (!synced) {
      std::remove(tmp.c_str());
      throw std::runtime_error(fmt::format("cannot write '{}': {}", path, std::strerror(error)));
    }
  }
  if (renames_before_kill() == 1) ::raise(SIGKILL);
  if (path.empty() || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot rename '{}' onto '{}': {}", tmp, path,
                                         std::strerror(error)));
  }
}

void write_file_atomic(const std::string& path, const std::string& content) {
  write_files_atomic({{path, content}});
}

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::string> temps;
  try {
    for (const auto& [path, content] : files) {
      make_parent_dirs(path);
      temps.push_back(temp_path_for(path));
      write_temp(temps.back(), path, content);
    }
  } catch (...) {
    for (const auto& t : temps) std::remove(t.c_str());
    throw;
  }
  for (size_t i = 0; i < files.size(); ++i) rename_onto(temps[i], files[i].first);
}

}  // namespace fpa
