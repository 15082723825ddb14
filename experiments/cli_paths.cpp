// Cli's checks of path options (cli.h), and the free path checks tools call themselves.
#include "cli.h"
#include "run_dir.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;

namespace fpa {

namespace {

// How errors name a declared path: "--out" for an option, the label itself ("--tasks") otherwise.
std::string shown(const std::string& label) {
  return label.rfind("--", 0) == 0 ? label : "--" + label;
}

// `inner` is `outer` or lies below it (both made absolute, symbolic links resolved).
bool lies_inside(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const auto a = fs::weakly_canonical(inner, ec), b = fs::weakly_canonical(outer, ec);
  return std::mismatch(b.begin(), b.end(), a.begin(), a.end()).first == b.end();
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

}  // namespace

std::vector<std::string> Cli::paths_of(const Declared& d) const {
  if (d.paths) {
    std::vector<std::string> out;
    for (auto& p : d.paths(*this))
      if (!p.empty()) out.push_back(std::move(p));
    return out;
  }
  if (has(d.label) && !get<std::string>(d.label).empty()) return {get<std::string>(d.label)};
  return {};
}

// An output that is an input (or lies in an input directory, which the tool may read whole), or
// that is or lies inside another output, would destroy what the run reads or writes; so would
// one inside a folder another run owns (run_dir.h's markers). Refused before any work.
void Cli::check_overlaps() const {
  struct Path {
    std::string label, path;
    bool dir;
    const std::vector<std::string>* own_entries;
  };
  auto resolve = [&](const std::vector<Declared>& list) {
    std::vector<Path> out;
    for (const auto& d : list)
      for (const auto& path : paths_of(d)) {
        std::error_code ec;
        out.push_back({d.label, path, d.kind == PathKind::Dir || fs::is_directory(path, ec),
                       &d.own_entries});
      }
    return out;
  };
  const auto inputs = resolve(inputs_), outputs = resolve(outputs_);
  std::vector<std::string> own_run_dirs;  // this tool's run directories: the folders it owns
  for (const auto& o : outputs)
    if (o.dir && !o.own_entries->empty()) own_run_dirs.push_back(o.path);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& o = outputs[i];
    const auto what = fmt::format("{} '{}'", shown(o.label), o.path);
    for (const auto& in : inputs) {
      if (same_file(o.path, in.path))
        fail_usage(fmt::format("{} is the same file as {} '{}', which this tool reads", what,
                               shown(in.label), in.path));
      if (in.dir && lies_inside(o.path, in.path))
        fail_usage(fmt::format("{} lies inside {} '{}', which this tool reads", what,
                               shown(in.label), in.path));
    }
    for (size_t j = 0; j < outputs.size(); ++j) {
      const auto& other = outputs[j];
      if (j == i) continue;
      if (j < i && same_file(o.path, other.path))
        fail_usage(fmt::format("{} and {} are the same file '{}'", shown(other.label), shown(o.label),
                               o.path));
      if (!other.dir && same_file(o.path, other.path + ".json"))
        fail_usage(fmt::format("{} is the sidecar of {}", what, shown(other.label)));
      if (other.dir)
        for (const auto& own : *other.own_entries)
          if (lies_inside(o.path, fs::path(other.path) / own))
            fail_usage(fmt::format("{} is or lies inside the run's own '{}' in {} '{}'", what, own,
                                   shown(other.label), other.path));
    }
    const auto owner = run_folder_owning(o.path, own_run_dirs, program_);
    if (!owner.empty()) fail_usage(fmt::format("{} is or lies inside {}", what, owner));
  }
}

void Cli::check_paths() const {
  // An empty path means the working directory or the file system's root to the code below.
  for (const auto* list : {&inputs_, &outputs_})
    for (const auto& d : *list) {
      const auto& opt = d.label;
      if (!vm_.count(opt) || vm_[opt].defaulted() || !get<std::string>(opt).empty()) continue;
      if (std::find(empty_means_none_.begin(), empty_means_none_.end(), opt) ==
          empty_means_none_.end())
        fail_usage(fmt::format("--{} is empty (a path is needed)", opt));
    }
  for (const auto& d : inputs_)
    if (!d.paths)  // computed inputs are read when present
      for (const auto& path : paths_of(d)) require_existing(path, d.kind, shown(d.label));
  for (const auto& d : outputs_)
    for (const auto& path : paths_of(d))
      require_writable(path, d.kind, shown(d.label));
  check_overlaps();
}

std::string why_not_writable(const std::string& path, PathKind kind) {
  std::error_code ec;
  const fs::path p(path);
  const auto st = fs::status(p, ec);
  if (fs::exists(st)) {
    if (kind == PathKind::Dir && !fs::is_directory(st))
      return fmt::format("'{}' exists and is not a directory", path);
    if (kind == PathKind::File && fs::is_directory(st))
      return fmt::format("'{}' is a directory", path);
    if (kind == PathKind::Dir) {
      if (::access(path.c_str(), W_OK | X_OK) != 0)
        return fmt::format("directory '{}' is not writable", path);
      return "";
    }
  }
  // The nearest existing ancestor must be a directory we can create entries in.
  fs::path up = p.parent_path();
  while (!up.empty() && !fs::exists(up, ec) && up != up.parent_path()) up = up.parent_path();
  if (up.empty()) up = ".";
  if (!fs::is_directory(up, ec))
    return fmt::format("cannot create '{}': '{}' is not a directory", path, up.string());
  if (::access(up.c_str(), W_OK | X_OK) != 0)
    return fmt::format("cannot create '{}': directory '{}' is not writable", path, up.string());
  return "";
}

void require_writable(const std::string& path, PathKind kind, const std::string& what) {
  if (const auto why = why_not_writable(path, kind); !why.empty())
    fail_usage(fmt::format("{}: {}", what, why));
}

void require_existing(const std::string& path, PathKind kind, const std::string& what) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!fs::exists(st)) fail_usage(fmt::format("{}: '{}' does not exist", what, path));
  if (kind == PathKind::Dir && !fs::is_directory(st))
    fail_usage(fmt::format("{}: '{}' is not a directory", what, path));
  if (kind == PathKind::File && !fs::is_regular_file(st))
    fail_usage(fmt::format("{}: '{}' is not a regular file", what, path));
}

}  // namespace fpa
