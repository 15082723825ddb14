// synthetic-sweep's study (synthetic/sweep_runner.h) called in-process with a runner that fails
// at once: every run is counted as failed and missing from the summary; --summarize-only starts
// nothing and summarises the same grid.
#include "synthetic/sweep_runner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace fpa::synthetic;

namespace {

std::vector<SweepRun> two_seed_grid() {
  GridSpec spec;
  spec.tasks = {"dips"};
  spec.models = {"fpa"};
  spec.fpa_grads = {"exact"};
  spec.head_dims = {8};
  spec.seeds = 2;
  return make_grid(spec);
}

// The summary's cell of `column` in its only row.
std::string only_row_cell(const std::string& csv, const std::string& column) {
  std::istringstream in(csv);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const auto at = size_t(std::find(kSummaryColumns.begin(), kSummaryColumns.end(), column) -
                         kSummaryColumns.begin());
  std::istringstream cells(row);
  std::string cell;
  for (size_t i = 0; i <= at && std::getline(cells, cell, ','); ++i) {
  }
  return cell;
}

}  // namespace

TEST(SyntheticSweepRunner, FailedRunsAreCountedAndMissingFromTheSummary) {
  const auto runs = two_seed_grid();
  ASSERT_EQ(runs.size(), 2u);
  const auto dir = fs::temp_directory_path() / ("sweep-runner-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  SweepSettings s;
  s.run_exe = "/bin/false";
  s.out_dir = dir.string();
  s.jobs = 2;
  s.out = (dir / "summary.csv").string();  // never committed here
  const auto failing = run_sweep(s, runs);
  EXPECT_EQ(failing.failed, 2u);
  ASSERT_EQ(failing.summary.rows(), 1u);  // one grid cell
  EXPECT_EQ(only_row_cell(failing.summary.text(), "runs_missing"), "2");
  EXPECT_TRUE(fs::exists(dir / "logs" / (runs[0].name + ".log")));

  fs::remove_all(dir);
  s.summarize_only = true;
  const auto summarised = run_sweep(s, runs);
  EXPECT_EQ(summarised.failed, 0u);
  EXPECT_EQ(summarised.summary.text(), failing.summary.text());
  EXPECT_TRUE(fs::is_empty(dir / "logs"));  // nothing was started
  fs::remove_all(dir);
}
