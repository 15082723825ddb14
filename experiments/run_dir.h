// A run directory written by one process at a time (lm-train, passkey-train).
//
// RunLock holds an advisory lock (flock) on <dir>/.lock for its lifetime, with the holder's pid
// written in the file; a second writer is refused at once (UsageError naming that pid). The lock
// goes with the process, so a killed run leaves no stale lock. Under the lock the temporaries
// <file>.tmp.<pid> of processes that are gone (killed between writing and renaming) are removed.
#pragma once

#include <string>

namespace fpa {

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

}  // namespace fpa
