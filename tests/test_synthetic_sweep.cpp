// A tiny end-to-end sweep (2 runs, few steps) through the real executables, and its resumption.
#include "synthetic/sweep.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace syn = fpa::synthetic;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(SyntheticSweep, CsvLinesSplitWithQuotes) {
  EXPECT_EQ(syn::split_csv_line("a,\"b,c\",\"d\"\"e\","),
            (std::vector<std::string>{"a", "b,c", "d\"e", ""}));
}

TEST(SyntheticSweep, TinySweepRunsAggregatesAndResumes) {
  const fs::path dir = fs::temp_directory_path() / ("synthetic-sweep-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string common = std::string(FPA_SYNTHETIC_SWEEP) +
                             " --tasks brackets --models softmax,fpa --fpa-grads exact --seeds 1"
                             " --steps 20 --n 16 --batch 8 --eval-every 10 --out-dir " + dir.string() +
                             " --out " + (dir / "summary.csv").string();
  const std::string cmd = common + " --eval-seqs 16";
  ASSERT_EQ(std::system((cmd + " 2>" + (dir.string() + ".log1")).c_str()), 0) << read(dir.string() + ".log1");
  const auto summary = read(dir / "summary.csv");
  const std::string spec_columns =
      "task,model,head_dim,seeds_run,seeds_converged,mass_mean,mass_std,mass2n_mean,nmse_mean,"
      "nmse2n_mean,fpa_grad";
  EXPECT_EQ(summary.rfind(spec_columns, 0), 0u) << summary;
  std::istringstream lines(summary);
  std::string header, row1, row2, extra;
  std::getline(lines, header);
  std::getline(lines, row1);
  std::getline(lines, row2);
  EXPECT_FALSE(std::getline(lines, extra) && !extra.empty());
  EXPECT_EQ(row1.rfind("brackets,softmax,8,1,", 0), 0u) << row1;
  EXPECT_EQ(row2.rfind("brackets,fpa,8,1,", 0), 0u) << row2;
  EXPECT_NE(row2.find(",exact,"), std::string::npos) << row2;
  EXPECT_TRUE(fs::exists(dir / "runs" / "brackets-softmax-d8-s0.csv"));
  EXPECT_TRUE(fs::exists(dir / "runs" / "brackets-fpa-exact-d8-s0.csv.json"));

  // Second call: both runs are complete for this configuration and are skipped.
  ASSERT_EQ(std::system((cmd + " 2>" + (dir.string() + ".log2")).c_str()), 0);
  EXPECT_NE(read(dir.string() + ".log2").find("2 complete, 0 to run"), std::string::npos)
      << read(dir.string() + ".log2");
  EXPECT_EQ(read(dir / "summary.csv"), summary);

  // A changed configuration (fewer held-out sequences) makes the stored runs stale: both run again.
  ASSERT_EQ(std::system((common + " --eval-seqs 8 2>" + (dir.string() + ".log3")).c_str()), 0);
  EXPECT_NE(read(dir.string() + ".log3").find("0 complete, 2 to run"), std::string::npos)
      << read(dir.string() + ".log3");
  fs::remove_all(dir);
  for (const char* s : {".log1", ".log2", ".log3"}) fs::remove(dir.string() + s);
}
