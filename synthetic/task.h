// A target-set task as data: a table of token types, each with a ground-truth field increment,
// a sampling weight and optional level constraints. The three tasks of SPEC section 4 (dips,
// brackets, erase) are such tables (synthetic/tasks/*.task, also built in); a user defines a new
// task by writing one more file.
//
// File format (one item per line, `#` starts a comment):
//   task <name>
//   type <name> <increment> <weight> [min_level=<L>] [max_level=<L>] [after=<type>,...]
// The ground-truth field is the walk of the increments, starting at level 0 before the first
// token. A type is drawn only where the level AFTER it stays within [min_level, max_level] and,
// if it has an `after` list, only right after one of those types (`start`: at the first
// position). Among the allowed types the draw is proportional to the weights.
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace fpa::synthetic {

struct TokenType {
  std::string name;
  double increment = 0;
  double weight = 1;
  double min_level = -std::numeric_limits<double>::infinity();
  double max_level = std::numeric_limits<double>::infinity();
  std::vector<std::string> after;  // empty: no constraint on the previous token
  std::vector<int> after_types;    // `after` resolved to type indices; -1 stands for `start`

  // `previous` is the previous token's type index, -1 at the first position.
  bool allowed(double level, int previous) const {
    const double next = level + increment;
    if (next < min_level || next > max_level) return false;
    if (after.empty()) return true;
    for (int t : after_types)
      if (t == previous) return true;
    return false;
  }
};

struct Task {
  std::string name;
  std::vector<TokenType> types;
};

// A bad task file: the message is one line, "<file>:<line>: <problem>".
struct TaskFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses task text; `source` names it in error messages (a path, or "builtin:<name>").
Task parse_task(const std::string& text, const std::string& source);
Task load_task_file(const std::string& path);

// The built-in tables: the same text as synthetic/tasks/<name>.task.
const std::vector<std::string>& builtin_task_names();
const std::string& builtin_task_text(const std::string& name);  // throws on unknown names
Task builtin_task(const std::string& name);

// One token's type, drawn by the weights among the types allowed at `level` after `previous`
// (-1 at the start): one uniform draw from rng. Throws std::runtime_error when none is allowed.
int64_t draw_type(const Task& task, double level, int previous, std::mt19937_64& rng);
// n types drawn in turn from level 0 (the ground-truth walk), as draw_type.
std::vector<int64_t> sample_types(const Task& task, int64_t n, std::mt19937_64& rng);

// A built-in name, or a path to a task file (anything containing '/' or ending in ".task").
// A --task value names a file (it has a '/' or ends in .task), else a built-in task.
bool is_task_path(const std::string& name_or_path);
Task resolve_task(const std::string& name_or_path);

}  // namespace fpa::synthetic
