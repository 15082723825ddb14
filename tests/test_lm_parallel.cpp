// Data parallelism: lm-train --nproc 2 (two Gloo ranks on loopback) ends with the parameters of
// a single rank trained on the same global batch, to float tolerance.
#include "lm/checkpoint.h"
#include "lm/distributed.h"
#include "test_lm_util.h"

#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

namespace fs = std::filesystem;
using namespace fpa::lm;

namespace {

int run_train(const std::string& corpus, const std::string& out, int nproc,
              const std::string& extra = "") {
  const auto cmd = fmt::format(
      "{} --preset tiny --variant fpa --hidden 32 --layers 1 --heads 2 --length 16 --batch 4 "
      "--accum 1 --steps 4 --warmup 1 --lr 0.003 --val-every 2 --val-windows 4 "
      "--checkpoint-every 2 --impl reference --seed 3 --threads 1 --corpus {} --out-dir {} "
      "--nproc {} {} >> {}/stdout.txt 2>&1",
      LM_TRAIN_PATH, corpus, out, nproc, extra, out);
  return std::system(cmd.c_str());
}

}  // namespace

TEST(LmParallel, TwoRanksMatchOneRankWithTheSameGlobalBatch) {
  if (!distributed_available()) GTEST_SKIP() << "built without Gloo";
  const auto corpus = lmtest::make_corpus(20, 300, 9);
  const auto one = lmtest::make_temp_dir("rank1"), two = lmtest::make_temp_dir("rank2");
  ASSERT_EQ(run_train(corpus, one, 1), 0) << "see " << one << "/stdout.txt";
  ASSERT_EQ(run_train(corpus, two, 2), 0) << "see " << two << "/stdout.txt";
  {  // the launcher really started two ranks
    std::ifstream log(two + "/stdout.txt");
    std::stringstream text;
    text << log.rdbuf();
    EXPECT_NE(text.str().find("ranks 2"), std::string::npos) << text.str();
  }
  auto a = load_model(one), b = load_model(two);
  EXPECT_EQ(a.step, 4);
  EXPECT_EQ(b.step, 4);
  EXPECT_EQ(a.progress.tokens, b.progress.tokens);
  auto pb = b.model->named_parameters();
  double max_diff = 0;
  for (const auto& item : a.model->named_parameters()) {
    const auto& other = pb[item.key()];
    max_diff = std::max(max_diff, (item.value() - other).abs().max().item<double>());
    EXPECT_TRUE(torch::allclose(item.value(), other, 1e-4, 1e-5)) << item.key();
  }
  // Not trivially equal: the parameters moved from their initial values.
  torch::manual_seed(3);
  LanguageModel init(a.config);
  EXPECT_FALSE(torch::allclose(init->parameters()[0], a.model->parameters()[0]));
  RecordProperty("max_abs_diff", std::to_string(max_diff));
  fs::remove_all(one);
  fs::remove_all(two);
  fs::remove_all(corpus);
}

// A run stopped with a checkpoint (--stop-after) resumes with another number of ranks: every rank
// draws the whole global batch and keeps its rows, so 2 ranks then 1 (and 1 then 2) end where one
// uninterrupted rank does, to float tolerance.
TEST(LmParallel, ResumesWithAnotherNumberOfRanks) {
  if (!distributed_available()) GTEST_SKIP() << "built without Gloo";
  const auto corpus = lmtest::make_corpus(20, 300, 9);
  const auto whole = lmtest::make_temp_dir("whole");
  ASSERT_EQ(run_train(corpus, whole, 1), 0) << "see " << whole << "/stdout.txt";
  const auto reference = load_model(whole);
  for (auto [first, second] : {std::pair{2, 1}, std::pair{1, 2}}) {
    const auto split = lmtest::make_temp_dir(fmt::format("ranks{}then{}", first, second));
    ASSERT_EQ(run_train(corpus, split, first, "--stop-after 2"), 0) << "see " << split << "/stdout.txt";
    EXPECT_EQ(load_model(split).step, 2);
    ASSERT_EQ(run_train(corpus, split, second, "--resume"), 0) << "see " << split << "/stdout.txt";
    auto resumed = load_model(split);
    EXPECT_EQ(resumed.step, 4);
    EXPECT_EQ(resumed.progress.tokens, reference.progress.tokens);
    auto pr = resumed.model->named_parameters();
    for (const auto& item : reference.model->named_parameters())
      EXPECT_TRUE(torch::allclose(item.value(), pr[item.key()], 1e-4, 1e-5))
          << item.key() << " (" << first << " then " << second << " ranks)";
    fs::remove_all(split);
  }
  fs::remove_all(whole);
  fs::remove_all(corpus);
}

// USE_LIBUV (torchrun's switch for the rendezvous store's backend) takes 0 or 1; anything else is
// refused before any rank tries to join.
TEST(LmParallel, RefusesAUseLibuvOtherThanZeroOrOne) {
  if (!distributed_available()) GTEST_SKIP() << "built without Gloo";
  ::setenv("WORLD_SIZE", "2", 1);
  ::setenv("RANK", "0", 1);
  ::setenv("MASTER_PORT", "1", 1);  // never reached
  ::setenv("USE_LIBUV", "yes", 1);
  std::string error;
  try {
    communicator_from_env();
  } catch (const std::exception& e) {
    error = e.what();
  }
  for (const char* name : {"WORLD_SIZE", "RANK", "MASTER_PORT", "USE_LIBUV"}) ::unsetenv(name);
  EXPECT_EQ(error, "distributed: USE_LIBUV='yes' must be 0 or 1");
}
