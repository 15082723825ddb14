#include "sweep.h"

#include "run_options.h"

#include <fmt/format.h>

#include <libfccp/csv.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

namespace fpa::synthetic {

const std::vector<std::string> kSummaryColumns = {
    // SPEC section 7, in this order:
    "task", "model", "head_dim", "seeds_run", "seeds_converged", "mass_mean", "mass_std",
    "mass2n_mean", "nmse_mean", "nmse2n_mean",
    // then:
    "fpa_backward", "mass_best_mean", "steps_to_converge_median", "wall_s_mean", "runs_missing",
    "n", "best_seed", "best_seed_mass", "best_seed_nmse"};

std::vector<SweepRun> make_grid(const GridSpec& spec) {
  std::vector<SweepRun> runs;
  for (const auto& task : spec.tasks)
    for (const auto& model : spec.models) {
      const auto grads = model == "fpa" ? spec.fpa_grads : std::vector<std::string>{"n/a"};
      for (const auto& grad : grads)
        for (int d : spec.head_dims)
          for (int s = 0; s < spec.seeds; ++s) {
            SweepRun r;
            const auto seed = spec.first_seed + uint64_t(s);
            std::string task_label = task;
            if (auto slash = task_label.find_last_of('/'); slash != std::string::npos)
              task_label = task_label.substr(slash + 1);
            if (task_label.size() > 5 && task_label.substr(task_label.size() - 5) == ".task")
              task_label.resize(task_label.size() - 5);
            const auto grad_part = model == "fpa" ? "-" + grad : std::string();
            r.group = fmt::format("{}-{}{}-d{}", task_label, model, grad_part, d);
            r.name = fmt::format("{}-s{}", r.group, seed);
            r.args = {"--task", task, "--variant", model, "--head-dim", std::to_string(d),
                      "--seed", std::to_string(seed)};
            if (model == "fpa") r.args.insert(r.args.end(), {"--fpa-backward", grad});
            r.args.insert(r.args.end(), spec.shared_args.begin(), spec.shared_args.end());
            r.config = run_config_from_args(r.args);
            runs.push_back(std::move(r));
          }
    }
  return runs;
}

std::map<std::string, std::string> read_final_row(const std::string& csv_path,
                                                  const std::string& expected_key) {
  // The columns the sweep reads (summaries and progress lines); others are ignored.
  static const std::array<std::string, 10> kColumns = {
      "phase", "config", "converged", "mass", "mass2n", "nmse", "nmse2n", "mass_best", "wall_s",
      "steps_to_converge"};
  std::error_code ec;
  if (!std::filesystem::is_regular_file(csv_path, ec)) return {};
  try {
    // No trimming and double-quote escapes: the cells exactly as CsvWriter wrote them.
    io::CSVReader<10, io::trim_chars<>, io::double_quote_escape<',', '"'>> in(csv_path);
    in.read_header(io::ignore_extra_column, "phase", "config", "converged", "mass", "mass2n",
                   "nmse", "nmse2n", "mass_best", "wall_s", "steps_to_converge");
    std::array<std::string, 10> v;
    while (in.read_row(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9])) {
      if (v[0] != "final") continue;
      if (v[1] != expected_key) return {};
      std::map<std::string, std::string> row;
      for (size_t c = 0; c < v.size(); ++c) row[kColumns[c]] = v[c];
      return row;
    }
  } catch (const io::error::base&) {
    // A missing column or a row of the wrong width: not a file this tool wrote.
  }
  return {};
}

namespace {

double to_double(const std::map<std::string, std::string>& row, const std::string& key) {
  auto it = row.find(key);
  if (it == row.end() || it->second.empty()) return std::nan("");
  try {
    return std::stod(it->second);
  } catch (const std::exception&) {
    return std::nan("");
  }
}

double mean(const std::vector<double>& x) {
  if (x.empty()) return std::nan("");
  double s = 0;
  for (double v : x) s += v;
  return s / double(x.size());
}

double sample_std(const std::vector<double>& x) {
  if (x.size() < 2) return x.empty() ? std::nan("") : 0.0;
  const double m = mean(x);
  double s = 0;
  for (double v : x) s += (v - m) * (v - m);
  return std::sqrt(s / double(x.size() - 1));
}

double median(std::vector<double> x) {
  if (x.empty()) return -1;
  std::sort(x.begin(), x.end());
  const size_t k = x.size() / 2;
  return x.size() % 2 ? x[k] : 0.5 * (x[k - 1] + x[k]);
}

}  // namespace

std::vector<SummaryRow> summarize(
    const std::vector<SweepRun>& runs,
    const std::map<std::string, std::map<std::string, std::string>>& finals) {
  std::vector<SummaryRow> rows;
  std::map<std::string, std::vector<const SweepRun*>> groups;
  std::vector<std::string> order;
  for (const auto& r : runs) {
    if (!groups.count(r.group)) order.push_back(r.group);
    groups[r.group].push_back(&r);
  }
  for (const auto& g : order) {
    const auto& members = groups[g];
    const auto& c = members.front()->config;
    SummaryRow s;
    s.task = c.task.name;
    s.model = to_string(c.model.attention.variant);
    s.fpa_grad = fpa_grad_label(c);
    s.head_dim = int(c.model.head_dim);
    s.n = c.n;
    s.best_seed_mass = s.best_seed_nmse = std::nan("");
    std::vector<double> mass, mass2n, nmse, nmse2n, best, steps, wall;
    for (const auto* r : members) {
      auto it = finals.find(r->name);
      if (it == finals.end() || it->second.empty()) { ++s.runs_missing; continue; }
      const auto& row = it->second;
      ++s.seeds_run;
      const bool conv = row.at("converged") == "1";
      s.seeds_converged += conv;
      mass.push_back(to_double(row, "mass"));
      mass2n.push_back(to_double(row, "mass2n"));
      nmse.push_back(to_double(row, "nmse"));
      nmse2n.push_back(to_double(row, "nmse2n"));
      best.push_back(to_double(row, "mass_best"));
      wall.push_back(to_double(row, "wall_s"));
      if (conv) steps.push_back(to_double(row, "steps_to_converge"));
      const double m = mass.back(), e = nmse.back();
      const bool better = s.best_seed < 0 || e < s.best_seed_nmse ||
                          (e == s.best_seed_nmse && m > s.best_seed_mass);
      if (better) s.best_seed = int64_t(r->config.seed), s.best_seed_mass = m, s.best_seed_nmse = e;
    }
    s.mass_mean = mean(mass);
    s.mass_std = sample_std(mass);
    s.mass2n_mean = mean(mass2n);
    s.nmse_mean = mean(nmse);
    s.nmse2n_mean = mean(nmse2n);
    s.mass_best_mean = mean(best);
    s.steps_to_converge_median = median(steps);
    s.wall_s_mean = mean(wall);
    rows.push_back(s);
  }
  return rows;
}

}  // namespace fpa::synthetic
