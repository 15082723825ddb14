// Progress of long work: on a terminal a live line with rate and ETA, redrawn at most 5 times a
// second; otherwise (logs, CI, or FPA_PROGRESS=plain) a plain line every `plain_every_s` seconds
// and at the end.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace fpa {

class Progress {
 public:
  Progress(std::string label, int64_t total, std::string unit = "step",
           double plain_every_s = 30.0);
  // `done` items of `total` are finished; `extra` is appended (for example "loss 1.234").
  void update(int64_t done, const std::string& extra = "");
  void finish(const std::string& extra = "");
  // A resumed run starts at `done`: rate and ETA count only the work of this invocation.
  void resume_at(int64_t done) { first_ = last_done_ = done; }

  static std::string format_duration(double seconds);  // "1h02m", "3m05s", "12s"

 private:
  static bool live_line_wanted();  // a terminal, and FPA_PROGRESS is not "plain"
  void print(int64_t done, const std::string& extra, bool final_line);

  std::string label_, unit_;
  int64_t total_;
  int64_t first_ = 0;
  double plain_every_s_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_print_;
  int64_t last_done_ = 0;
};

}  // namespace fpa
