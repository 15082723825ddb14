// Files that are either complete or absent: write to a temporary file in the same directory,
// flush it to disk, then rename over the target (rename is atomic on POSIX file systems).
//
// Every write, the fsync and the close are checked: a full disk (or a file-size limit) is an
// exception naming the file, the temporary is removed and the old file is left as it was.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace fpa {

void write_file_atomic(const std::string& path, const std::string& content);
// Several files that belong together (a CSV and its sidecar): every temporary is written in full
// before the first rename, so a full disk leaves all of the old files; renamed in the given order.
void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files);
// Runs `write(tmp_path)` (which must create tmp_path), then renames it onto `path`; the temporary
// is removed when `write` throws.
template <class Writer>
void replace_atomic(const std::string& path, Writer&& write);
// This process's temporary for `path`. A write killed between writing and renaming leaves its
// temporary behind; the next write of the same path removes those (stale_temp), so none stays.
std::string temp_path_for(const std::string& path);
// `file` is named <name>.tmp.<pid> and that process no longer runs.
bool stale_temp(const std::string& file);
// fsyncs `tmp` (checked), then renames it onto `path`. For tests, FPA_TEST_STOP_AT_RENAME=k
// kills the process (SIGKILL) in place of its k-th rename, as a power cut would.
void rename_onto(const std::string& tmp, const std::string& path);
void make_parent_dirs(const std::string& path);
// A file's bytes; empty when it cannot be read.
std::string read_file(const std::string& path);

// A new file written through its descriptor with every write checked. write() never throws (a
// LibTorch serializer calling it cannot unwind safely); the first failure is kept and reported
// by finish(), which also fsyncs and closes. `name` is the file named in errors.
class CheckedFile {
 public:
  CheckedFile(const std::string& path, std::string name);
  ~CheckedFile();
  CheckedFile(const CheckedFile&) = delete;
  CheckedFile& operator=(const CheckedFile&) = delete;
  size_t write(const void* data, size_t n) noexcept;  // returns n (errors are kept for finish())
  void finish();                                     // throws std::runtime_error on any failure

 private:
  int fd_ = -1;
  int error_ = 0;  // errno of the first failed write
  std::string name_;
};

template <class Writer>
void replace_atomic(const std::string& path, Writer&& write) {
  make_parent_dirs(path);
  const auto tmp = temp_path_for(path);
  try {
    write(tmp);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  rename_onto(tmp, path);
}

}  // namespace fpa
