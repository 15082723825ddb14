#include "run_dir.h"

#include "atomic_file.h"
#include "usage_error.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace fpa {

RunLock::RunLock(const std::string& dir) {
  fs::create_directories(dir);
  const auto path = (fs::path(dir) / kRunLockName).string();
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
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file(ec) && stale_temp(entry.path().string()) && fs::remove(entry.path(), ec))
      ++removed;
  return removed;
}

void mark_sweep_folder(const std::string& dir) {
  const auto marker = (fs::path(dir) / kSweepMarkerName).string();
  if (!fs::exists(marker))
    write_file_atomic(marker, "synthetic-sweep's folder: runs/ and logs/ are its runs' "
                              "(experiments/run_dir.h)\n");
}

std::string run_folder_owning(const std::string& path, const std::vector<std::string>& own_runs,
                              const std::string& program) {
  std::error_code ec;
  const auto target = fs::weakly_canonical(fs::absolute(path, ec), ec);
  auto inside = [&](const fs::path& folder) {
    return std::mismatch(folder.begin(), folder.end(), target.begin(), target.end()).first ==
           folder.end();
  };
  std::vector<fs::path> mine;
  for (const auto& r : own_runs) mine.push_back(fs::weakly_canonical(fs::absolute(r, ec), ec));
  for (auto folder = target; !folder.empty(); folder = folder.parent_path()) {
    const bool own = std::find(mine.begin(), mine.end(), folder) != mine.end();
    if (!own && fs::is_regular_file(folder / kRunLockName, ec))
      return fmt::format("the run directory '{}' (marked by its {}), which another run owns",
                         folder.string(), kRunLockName);
    if (!own && program != kSweepRunWriter && fs::is_regular_file(folder / kSweepMarkerName, ec))
      for (const auto& entry : kSweepOwnEntries)
        if (inside(folder / entry))
          return fmt::format("'{}' of the sweep '{}' (marked by its {}), which only its runs write",
                             entry, folder.string(), kSweepMarkerName);
    if (folder == folder.parent_path()) break;
  }
  return "";
}

}  // namespace fpa
