#include "progress.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace fpa {

Progress::Progress(std::string label, int64_t total, std::string unit, double plain_every_s)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total),
      plain_every_s_(plain_every_s), tty_(live_line_wanted()),
      start_(std::chrono::steady_clock::now()), last_print_(start_) {}

// A live line needs a terminal of its own: FPA_PROGRESS=plain (set by `make reproduce`, whose
// studies share one terminal when they run in parallel) asks for plain lines anyway.
bool Progress::live_line_wanted() {
  const char* mode = std::getenv("FPA_PROGRESS");
  if (mode && std::strcmp(mode, "plain") == 0) return false;
  return ::isatty(::fileno(stderr)) != 0;
}

std::string Progress::format_duration(double s) {
  if (s < 0 || s != s) return "?";
  const auto t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02d}m", t / 3600, (t % 3600) / 60);
  if (t >= 60) return fmt::format("{}m{:02d}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

void Progress::update(int64_t done, const std::string& extra) {
  last_done_ = done;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_print_).count();
  if (since < (tty_ ? 0.2 : plain_every_s_)) return;
  last_print_ = now;
  print(done, extra, false);
}

void Progress::finish(const std::string& extra) { print(last_done_ = total_, extra, true); }

void Progress::print(int64_t done, const std::string& extra, bool final_line) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? double(done - first_) / elapsed : 0.0;
  const double eta = rate > 0 ? (total_ - done) / rate : -1;
  auto line = fmt::format("{} {}/{} {} [{:.3g} {}/s, {} {}]{}{}", label_, done, total_, unit_,
                          rate, unit_, final_line ? "took" : "ETA",
                          format_duration(final_line ? elapsed : eta), extra.empty() ? "" : " ",
                          extra);
  if (tty_)
    std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final_line ? "\n" : "");
  else
    std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

}  // namespace fpa
