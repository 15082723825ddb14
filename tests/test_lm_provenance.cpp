// lm::training_record: the training run's seed and --config file, read from the provenance
// sidecar beside a run's log as JSON (not by its writer's exact layout).
#include "lm/checkpoint.h"

#include "experiments/provenance.h"

#include "test_lm_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using fpa::lm::training_record;
using fpa::lm::lmtest::make_temp_dir;

namespace {

std::string write_sidecar(const std::string& dir, const std::string& name, const std::string& text) {
  fs::create_directories(dir);
  std::ofstream(fs::path(dir) / name) << text;
  return dir;
}

}  // namespace

// What the trainers write (experiments/provenance.cpp), read through the run directory.
TEST(TrainingRecord, ReadsTheTrainersSidecar) {
  fpa::Provenance p;
  p.program = "lm-train";
  p.command_line = "lm-train --config configs/lm/tiny.conf --seed 7";
  p.seed = 7;
  p.config = {{"config", "configs/lm/tiny.conf"}, {"seed", "7"}, {"steps", "100"}};
  const auto dir = write_sidecar(make_temp_dir("provenance-writer"), "log.csv.json", p.to_json());
  const auto r = training_record(dir);
  EXPECT_EQ(r.seed, "7");
  EXPECT_EQ(r.config, "configs/lm/tiny.conf");
  // No --config given: the key is absent, the record empty; the seed is still there.
  p.config.erase("config");
  p.seed = 18446744073709551615ull;
  write_sidecar(dir, "log.csv.json", p.to_json());
  EXPECT_EQ(training_record(dir).seed, "18446744073709551615");
  EXPECT_EQ(training_record(dir).config, "");
  fs::remove_all(dir);
}

// Another indentation (none), another key order, a nested "seed" before the top-level one, and a
// path with the characters the substring search cut at (comma, escaped quote).
TEST(TrainingRecord, IndentationAndKeyOrderDoNotMatter) {
  const auto dir = write_sidecar(make_temp_dir("provenance-layout"), "train_log.csv.json",
                         R"({"config":{"seed":"3","config":"runs/a,b \"c\".conf","steps":"9"},)"
                         R"("wall_s":1.5,"program":"passkey-train","seed":3})");
  const auto r = training_record(dir);
  EXPECT_EQ(r.seed, "3");
  EXPECT_EQ(r.config, "runs/a,b \"c\".conf");
  write_sidecar(dir, "train_log.csv.json",
        "{\n\t\"seed\" :\t42 ,\r\n\t\"config\" : {\n\t\t\"config\" : \"p.conf\"\n\t}\n}\n");
  EXPECT_EQ(training_record(dir).seed, "42");
  EXPECT_EQ(training_record(dir).config, "p.conf");
  fs::remove_all(dir);
}

// lm-train's log.csv.json wins over train_log.csv.json; no sidecar, or one that is not a JSON
// object, gives empty strings (the evaluators still run, recording the training run as unknown).
TEST(TrainingRecord, MissingOrUnreadableSidecarsGiveEmptyStrings) {
  const auto dir = make_temp_dir("provenance-missing");
  fs::create_directories(dir);
  EXPECT_EQ(training_record(dir).seed, "");
  EXPECT_EQ(training_record(dir).config, "");
  write_sidecar(dir, "train_log.csv.json", R"({"seed": 1, "config": {"config": "passkey.conf"}})");
  write_sidecar(dir, "log.csv.json", R"({"seed": 2, "config": {"config": "lm.conf"}})");
  EXPECT_EQ(training_record(dir).seed, "2");
  EXPECT_EQ(training_record(dir).config, "lm.conf");
  for (const char* bad : {"", "{\"seed\": 2, \"config\": {", "[1, 2]", "seed = 2"}) {
    write_sidecar(dir, "log.csv.json", bad);
    EXPECT_EQ(training_record(dir).seed, "") << bad;
    EXPECT_EQ(training_record(dir).config, "") << bad;
  }
  fs::remove_all(dir);
}
