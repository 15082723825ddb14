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

namespace fs = std::filesystem;
using namespace fpa::lm;

namespace {

int run_train(const std::string& corpus, const std::string& out, int nproc) {
  const auto cmd = fmt::format(
      "{} --preset tiny --variant fpa --hidden 32 --layers 1 --heads 2 --length 16 --batch 4 "
      "--accum 1 --steps 4 --warmup 1 --lr 0.003 --val-every 2 --val-windows 4 "
      "--checkpoint-every 2 --impl reference --seed 3 --threads 1 --corpus {} --out-dir {} "
      "--nproc {} > {}/stdout.txt 2>&1",
      LM_TRAIN_PATH, corpus, out, nproc, out);
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
