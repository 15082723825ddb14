#include "run_dir.h"

#include "usage_error.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>

namespace fs = std::filesystem;

namespace fpa {

RunLock::RunLock(const std::string& dir) {
  fs::create_directories(dir);
  const auto path = (fs::path(dir) / ".lock").string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    std::ifstream in(path);
    std::string pid;
    in >> pid;
    ::close(fd_);
    fd_ = -1;
    throw UsageError(fmt::format("run directory '{}' is in use by another process (pid {}, lock "
                                 "'{}'); wait for it or choose another --out-dir",
                                 dir, pid.empty() ? "unknown" : pid, path));
  }
  // Our pid for the message above; a short write only makes that message vaguer.
  const auto pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0 && ::write(fd_, pid.data(), pid.size()) < 0) {}
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

std::string file_version(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "";
  return fmt::format("{} {} {}.{}", st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

int remove_stale_temps(const std::string& dir) {
  static const std::regex temp(R"(.+\.tmp\.(\d{1,9}))");
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const auto name = entry.path().filename().string();
    if (!entry.is_regular_file(ec) || !std::regex_match(name, m, temp)) continue;
    const long pid = std::stol(m[1].str());
    if (pid == ::getpid() || ::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;
    if (fs::remove(entry.path(), ec)) ++removed;
  }
  return removed;
}

}  // namespace fpa
