// lm-eval's study (lm/eval_study.h) called in-process on a random micro model and a generated
// corpus: an untrained byte model is near uniform (perplexity near 256), the loss per position
// adds up to the split's loss, and the written tables hold what the result says.
#include "lm/eval_study.h"
#include "test_lm_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

using namespace fpa;
using namespace fpa::lm;

namespace {

// A written table's lines, the header first.
std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST(LmEvalStudy, RandomModelIsNearUniformAndTheTablesAgree) {
  const auto corpus = load_corpus(lmtest::make_corpus(20, 30, 3));
  ASSERT_FALSE(corpus.validation.empty());
  ASSERT_FALSE(corpus.test.empty());
  torch::manual_seed(2);
  LoadedModel loaded;
  loaded.config = lmtest::micro_model(AttentionKind::Fpa);
  loaded.model = LanguageModel(loaded.config);
  loaded.model->eval();

  const auto dir = lmtest::make_temp_dir("eval-study");
  LmEvalSettings s;
  s.batch = 4;
  s.out = dir + "/eval.csv";
  s.positions = dir + "/positions.csv";
  s.summary = dir + "/summary.csv";
  const auto r = run_lm_eval(s, loaded, corpus);

  for (const DocumentEval* e : {&r.validation, &r.test}) {
    EXPECT_GT(e->perplexity(), 200.0);  // 256 bytes, none favoured yet
    EXPECT_LT(e->perplexity(), 320.0);
    EXPECT_NEAR(e->perplexity(), std::exp(e->nll / double(e->tokens)), 1e-9);
    // Every predicted token is counted at exactly one window position.
    EXPECT_EQ(std::accumulate(e->position_count.begin(), e->position_count.end(), int64_t(0)),
              e->tokens);
    EXPECT_NEAR(std::accumulate(e->position_nll.begin(), e->position_nll.end(), 0.0), e->nll,
                1e-6 * e->nll);
  }

  report_lm_eval(r, s, loaded, corpus, TrainingRecord{"7", "configs/x.conf"}, Provenance{});
  EXPECT_EQ(lines_of(s.out).size(), 3u);  // header, validation, test
  EXPECT_EQ(lines_of(s.positions).size(), size_t(1 + loaded.config.context));
  const auto summary = lines_of(s.summary);
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_NE(summary[1].find(",7,"), std::string::npos);  // the training run's seed
  EXPECT_NE(summary[1].find("configs/x.conf"), std::string::npos);
  std::filesystem::remove_all(dir);
}
