// Cli's checks of path options (cli.h), and the free path checks tools call themselves.
#include "cli.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;

namespace fpa {

namespace {

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

// An output that is an input (or lies in an input directory, which the tool may read whole), or
// that is another output, would destroy what the run reads or writes: refused before any work.
void Cli::check_overlaps() const {
  struct Path {
    std::string option, path;
    bool dir;
  };
  auto declared = [&](const std::vector<std::pair<std::string, PathKind>>& list) {
    std::vector<Path> out;
    for (const auto& [name, kind] : list)
      if (has(name) && !get<std::string>(name).empty()) {
        const auto path = get<std::string>(name);
        std::error_code ec;
        out.push_back({name, path, kind == PathKind::Dir || fs::is_directory(path, ec)});
      }
    return out;
  };
  const auto inputs = declared(inputs_), outputs = declared(outputs_);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& o = outputs[i];
    for (const auto& in : inputs) {
      if (in.dir && lies_inside(o.path, in.path))
        fail_usage(fmt::format("--{} '{}' lies inside --{} '{}', which this tool reads", o.option,
                               o.path, in.option, in.path));
      if (same_file(o.path, in.path))
        fail_usage(fmt::format("--{} '{}' is the same file as --{} '{}', which this tool reads",
                               o.option, o.path, in.option, in.path));
    }
    for (size_t j = 0; j < outputs.size(); ++j) {
      const auto& other = outputs[j];
      if (j == i) continue;
      if (j < i && same_file(o.path, other.path))
        fail_usage(fmt::format("--{} and --{} are the same file '{}'", other.option, o.option, o.path));
      if (!other.dir && same_file(o.path, other.path + ".json"))
        fail_usage(fmt::format("--{} '{}' is the sidecar of --{}", o.option, o.path, other.option));
      if (other.dir)
        for (const auto& own : own_files_.at(other.option))
          if (same_file(o.path, fs::path(other.path) / own))
            fail_usage(fmt::format("--{} '{}' is the run's own '{}' in --{} '{}'", o.option, o.path,
                                   own, other.option, other.path));
    }
  }
}

void Cli::check_paths() const {
  // An empty path means the working directory or the file system's root to the code below.
  for (const auto* list : {&inputs_, &outputs_})
    for (const auto& [name, kind] : *list)
      if (vm_.count(name) && !vm_[name].defaulted() && get<std::string>(name).empty())
        fail_usage(fmt::format("--{} is empty (a path is needed)", name));
  for (const auto& [name, kind] : inputs_)
    if (has(name) && !get<std::string>(name).empty())
      require_existing(get<std::string>(name), kind, "--" + name);
  for (const auto& [name, kind] : outputs_)
    if (has(name) && !get<std::string>(name).empty())
      require_writable(get<std::string>(name), kind, "--" + name);
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
