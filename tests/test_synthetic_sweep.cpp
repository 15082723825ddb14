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

TEST(SyntheticSweep, FinalRowIsReadWithQuotesAndOnlyFromCompleteFiles) {
  const fs::path dir = fs::temp_directory_path() / ("synthetic-final-row-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string header =
      "phase,step,config,converged,mass,mass2n,nmse,nmse2n,mass_best,wall_s,steps_to_converge,extra\n";
  const std::string key = "task=t[a:1:1;] model=\"fpa\", x";  // a comma and quotes to escape
  const std::string quoted = "\"task=t[a:1:1;] model=\"\"fpa\"\", x\"";
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const auto good = write("good.csv", header + "curve,10," + quoted + ",,0.1,,,,,,,\n" +
                                          "final,20," + quoted + ",1,0.5,0.4,0.01,0.02,0.6,3.5,15,z\n");
  const auto row = syn::read_final_row(good, key);
  ASSERT_FALSE(row.empty());
  EXPECT_EQ(row.at("config"), key);
  EXPECT_EQ(row.at("phase"), "final");
  EXPECT_EQ(row.at("converged"), "1");
  EXPECT_EQ(row.at("mass"), "0.5");
  EXPECT_EQ(row.at("mass2n"), "0.4");
  EXPECT_EQ(row.at("nmse2n"), "0.02");
  EXPECT_EQ(row.at("steps_to_converge"), "15");
  EXPECT_EQ(row.count("extra"), 0u);  // only the columns the sweep uses

  EXPECT_TRUE(syn::read_final_row(good, key + " ").empty());  // another configuration
  EXPECT_TRUE(syn::read_final_row((dir / "missing.csv").string(), key).empty());
  EXPECT_TRUE(syn::read_final_row(write("empty.csv", ""), key).empty());
  EXPECT_TRUE(syn::read_final_row(write("no-final.csv", header + "curve,10," + quoted + ",,0.1,,,,,,,\n"),
                                  key).empty());
  // A truncated row (a run killed while writing would never leave one: CSVs are atomic).
  EXPECT_TRUE(syn::read_final_row(write("short.csv", header + "final,20," + quoted + ",1,0.5\n"), key)
                  .empty());
  // A file without one of the columns the summary needs.
  EXPECT_TRUE(syn::read_final_row(write("no-mass2n.csv", "phase,config,converged,mass\nfinal," + quoted +
                                                             ",1,0.5\n"),
                                  key).empty());
  fs::remove_all(dir);
}

TEST(SyntheticSweep, TinySweepRunsAggregatesAndResumes) {
  const fs::path dir = fs::temp_directory_path() / ("synthetic-sweep-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string common = std::string(FPA_SYNTHETIC_SWEEP) +
                             " --tasks brackets --variants softmax,fpa --fpa-backward exact --seeds 1"
                             " --steps 20 --length 16 --batch 8 --eval-every 10 --out-dir " + dir.string() +
                             " --out " + (dir / "summary.csv").string();
  const std::string cmd = common + " --eval-seqs 16";
  ASSERT_EQ(std::system((cmd + " 2>" + (dir.string() + ".log1")).c_str()), 0) << read(dir.string() + ".log1");
  const auto summary = read(dir / "summary.csv");
  const std::string spec_columns =
      "task,model,head_dim,seeds_run,seeds_converged,mass_mean,mass_std,mass2n_mean,nmse_mean,"
      "nmse2n_mean,fpa_backward";
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
  // Then the training length and the cell's best seed (one seed here: seed 0) with its mass and nMSE.
  EXPECT_NE(header.find(",runs_missing,n,best_seed,best_seed_mass,best_seed_nmse"), std::string::npos) << header;
  EXPECT_NE(row1.find(",0,16,0,"), std::string::npos) << row1;
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

  // From a --config file, each run's sidecar names it; it is not part of a run's identity, so the
  // same settings on the command line reuse those runs.
  const auto conf = dir.string() + ".conf";
  std::ofstream(conf) << "eval-seqs = 4\n";
  ASSERT_EQ(std::system((common + " --config " + conf + " 2>" + (dir.string() + ".log4")).c_str()), 0)
      << read(dir.string() + ".log4");
  EXPECT_NE(read(dir / "runs" / "brackets-softmax-d8-s0.csv.json").find("\"study-config\": \"" + conf + "\""),
            std::string::npos);
  ASSERT_EQ(std::system((common + " --eval-seqs 4 2>" + (dir.string() + ".log5")).c_str()), 0);
  EXPECT_NE(read(dir.string() + ".log5").find("2 complete, 0 to run"), std::string::npos)
      << read(dir.string() + ".log5");
  fs::remove_all(dir);
  for (const char* s : {".log1", ".log2", ".log3", ".log4", ".log5", ".conf"}) fs::remove(dir.string() + s);
}
