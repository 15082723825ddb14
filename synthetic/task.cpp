#include "task.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace fpa::synthetic {
namespace {

// Kept identical to synthetic/tasks/*.task (a test compares them).
const std::map<std::string, std::string>& builtin_texts() {
  static const std::map<std::string, std::string> texts = {
      {"dips",
       "task dips\n"
       "type down2 -2 0.1\n"
       "type down1 -1 0.2\n"
       "type flat   0 0.3\n"
       "type up1   +1 0.2\n"
       "type up2   +2 0.2\n"},
      {"brackets",
       "task brackets\n"
       "type push   +1 0.35 max_level=8\n"
       "type pop    -1 0.35 min_level=0\n"
       "type filler  0 0.30\n"},
      {"erase",
       "task erase\n"
       "type anchor  +1 2\n"
       "type open    +1 6 after=start,anchor,clear\n"
       "type content  0 3 after=open,content\n"
       "type clear   -1 1 after=open,content\n"},
  };
  return texts;
}

bool parse_number(const std::string& s, double& out) {
  if (s.empty()) return false;
  try {
    size_t used = 0;
    out = std::stod(s, &used);
    return used == s.size() && std::isfinite(out);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

Task parse_task(const std::string& text, const std::string& source) {
  Task task;
  std::set<std::string> names;
  std::vector<int> type_lines;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  auto fail = [&](const std::string& problem) {
    throw TaskFileError(fmt::format("{}:{}: {}", source, line_no, problem));
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.empty()) continue;
    if (w[0] == "task") {
      if (w.size() != 2) fail("expected `task <name>`");
      if (!task.name.empty()) fail("second `task` line");
      task.name = w[1];
    } else if (w[0] == "type") {
      if (w.size() < 4)
        fail("expected `type <name> <increment> <weight> [min_level=L] [max_level=L]`");
      TokenType t;
      t.name = w[1];
      if (!names.insert(t.name).second) fail(fmt::format("duplicate type name '{}'", t.name));
      if (!parse_number(w[2], t.increment))
        fail(fmt::format("increment of type '{}' is not a finite number: '{}'", t.name, w[2]));
      if (!parse_number(w[3], t.weight) || t.weight <= 0)
        fail(fmt::format("weight of type '{}' must be a positive number, got '{}'", t.name, w[3]));
      for (size_t k = 4; k < w.size(); ++k) {
        const auto eq = w[k].find('=');
        const auto key = w[k].substr(0, eq);
        double value = 0;
        if (eq == std::string::npos || !parse_number(w[k].substr(eq + 1), value))
        if (key == "after" && eq != std::string::npos) {
          std::istringstream list(w[k].substr(eq + 1));
          for (std::string name; std::getline(list, name, ',');) {
            if (name.empty()) fail(fmt::format("empty name in '{}'", w[k]));
            t.after.push_back(name);
          }
          if (t.after.empty()) fail(fmt::format("empty list in '{}'", w[k]));
          continue;
        }
        if (eq == std::string::npos || !parse_number(w[k].substr(eq + 1), value))
          fail(fmt::format("expected min_level=<number>, max_level=<number> or after=<types>, got '{}'", w[k]));
        if (key == "min_level") t.min_level = value;
        else if (key == "max_level") t.max_level = value;
        else fail(fmt::format("unknown constraint '{}' (min_level, max_level, after)", key));
      }
      if (t.min_level > t.max_level)
        fail(fmt::format("type '{}' has min_level > max_level", t.name));
      task.types.push_back(t);
      type_lines.push_back(line_no);
    } else {
      fail(fmt::format("unknown keyword '{}' (task, type)", w[0]));
    }
  }
  if (task.types.empty()) fail("no `type` lines: a task needs at least one token type");
  if (task.name.empty()) fail("no `task <name>` line");
  for (size_t c = 0; c < task.types.size(); ++c) {
    auto& t = task.types[c];
    for (const auto& name : t.after) {
      int index = name == "start" ? -1 : -2;
      for (size_t o = 0; o < task.types.size(); ++o)
        if (task.types[o].name == name) index = int(o);
      if (index == -2) {
        line_no = type_lines[c];
        fail(fmt::format("after= names unknown type '{}'", name));
      }
      t.after_types.push_back(index);
    }
  }
  bool any_from_zero = false;
  for (const auto& t : task.types) any_from_zero |= t.allowed(0.0, -1);
  if (!any_from_zero) fail("no token type is allowed at the start (level 0)");
  return task;
}

Task load_task_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TaskFileError(fmt::format("{}: cannot read task file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_task(ss.str(), path);
}

const std::vector<std::string>& builtin_task_names() {
  static const std::vector<std::string> names = {"dips", "brackets", "erase"};
  return names;
}

const std::string& builtin_task_text(const std::string& name) {
  const auto& texts = builtin_texts();
  auto it = texts.find(name);
  if (it == texts.end())
    throw TaskFileError(fmt::format("unknown task '{}' (dips, brackets, erase, or a .task file)", name));
  return it->second;
}

Task builtin_task(const std::string& name) {
  return parse_task(builtin_task_text(name), "builtin:" + name);
}

Task resolve_task(const std::string& name_or_path) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 &&
                        name_or_path.compare(name_or_path.size() - 5, 5, ".task") == 0);
  return is_path ? load_task_file(name_or_path) : builtin_task(name_or_path);
}

}  // namespace fpa::synthetic
