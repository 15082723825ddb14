// A run directory written by one process at a time (lm-train, passkey-train).
//
// RunLock holds an advisory lock (flock) on <dir>/.lock for its lifetime, with the holder's pid
// written in the file; a second writer is refused at once (UsageError naming that pid). The lock
// goes with the process, so a killed run leaves no stale lock. Under the lock the temporaries
// <file>.tmp.<pid> of processes that are gone (killed between writing and renaming) are removed.
//
// Folders that a run owns carry a marker, so that no other tool writes inside them
// (run_folder_owning, which Cli::parse applies to every output):
//   <run>/.lock    a run directory (RunLock): everything in it is the run's;
//   <sweep>/.sweep a sweep's folder (synthetic-sweep): its runs/ and logs/ are written only by
//                  the synthetic-run processes it starts (kSweepRunWriter).
#pragma once

#include <string>
#include <vector>

namespace fpa {

inline constexpr const char* kRunLockName = ".lock";
inline constexpr const char* kSweepMarkerName = ".sweep";
inline constexpr const char* kSweepRunWriter = "synthetic-run";
inline const std::vector<std::string> kSweepOwnEntries = {"runs", "logs"};

class RunLock {
 public:
  explicit RunLock(const std::string& dir);  // creates dir; throws UsageError when held
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

// The version of a file (inode, size, modification time; "" when absent). A run reads its
// checkpoint before taking the lock (bad input writes nothing); the same version under the lock
// shows that no other process wrote it meanwhile.
std::string file_version(const std::string& path);

// Removes <dir>/<name>.tmp.<pid> files whose process no longer runs; returns how many.
int remove_stale_temps(const std::string& dir);

// Marks `dir` as a sweep's folder (writes <dir>/.sweep).
void mark_sweep_folder(const std::string& dir);

// "the run directory '<dir>' (marked by its .lock), which another run owns" when `path` is, or
// lies inside, a folder owned by a run other than the tool's own run directories `own_runs`
// (`program` is the tool's name); "" when no run owns it.
std::string run_folder_owning(const std::string& path, const std::vector<std::string>& own_runs,
                              const std::string& program);

}  // namespace fpa
