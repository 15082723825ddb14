// passkey-eval's and passkey-probe's studies (lm/passkey/eval_study.h, probe_study.h) called
// in-process on a tiny random model. Eval: one row per (length, depth, policy) and per (length,
// policy), the full cache reads every key, a window policy about its budget. Probe: one row per
// prompt, layer and head, with fractions and flags in range.
#include "lm/cache/policy.h"
#include "lm/passkey/eval_study.h"
#include "lm/passkey/probe_study.h"
#include "test_lm_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

using namespace fpa;
using namespace fpa::passkey;

namespace {

std::vector<std::vector<std::string>> rows_of(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(csv);
  std::string line;
  while (std::getline(in, line)) {
    rows.emplace_back();
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) rows.back().push_back(cell);
  }
  return rows;
}

size_t column(const std::vector<std::string>& header, const std::string& name) {
  return size_t(std::find(header.begin(), header.end(), name) - header.begin());
}

// A stand-in for a SentencePiece model (no SentencePiece in a LibTorch test): a space joins the
// character after it in one token (ids 256 + c), every other character is a token of its own, so
// text splits before every space as SentencePiece splits it.
class SpaceJoiningModel : public lm::SubwordModel {
 public:
  int64_t vocab_size() const override { return 512; }
  std::vector<int32_t> encode(const std::string& text) const override {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < text.size(); ++i) {
      const auto c = int32_t(static_cast<unsigned char>(text[i]));
      if (c == ' ' && i + 1 < text.size() && text[i + 1] != ' ')
        ids.push_back(256 + int32_t(static_cast<unsigned char>(text[++i])));
      else
        ids.push_back(c);
    }
    return ids;
  }
  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string text;
    for (int32_t id : ids) text += id >= 256 ? std::string{' ', char(id - 256)} : std::string(1, char(id));
    return text;
  }
};

// A random FPA model (1 layer, 2 heads) whose training length holds the prompt and some filler.
EvalSetup tiny_setup() {
  EvalSetup setup;
  setup.variant = "fpa";
  setup.run = "tiny";
  setup.L = setup.prompt.fixed_bytes() + 48;
  torch::manual_seed(1);
  setup.loaded.config = lm::lmtest::micro_model(lm::AttentionKind::Fpa);
  setup.loaded.config.context = setup.L;
  setup.loaded.model = lm::LanguageModel(setup.loaded.config);
  setup.loaded.model->eval();
  return setup;
}

// passkey-eval's settings for these tests: a short schedule, tables never committed.
PasskeyEvalSettings small_eval_settings() {
  PasskeyEvalSettings s;
  s.depths = 2;
  s.seed = 5;
  s.schedule.chunk = 64;
  s.schedule.evict_every = 16;
  s.schedule.timed_tokens = 32;
  s.out = "cells.csv";
  s.summary = "summary.csv";
  return s;
}

}  // namespace

TEST(PasskeyStudies, EvalTablesCoverEveryCellAndPoliciesReadWhatTheyKeep) {
  const auto setup = tiny_setup();

  cache::Settings policy_settings;
  policy_settings.budget = 0.25;
  std::vector<std::unique_ptr<cache::Policy>> policies;
  policies.push_back(cache::make_policy("full", policy_settings));
  policies.push_back(cache::make_policy("window", policy_settings));

  PasskeyEvalSettings s = small_eval_settings();
  s.lengths = {1};
  s.keys = {3};
  const auto t = run_passkey_eval(s, setup, policies);

  const auto cells = rows_of(t.cells.text()), summary = rows_of(t.summary.text());
  ASSERT_EQ(cells.size(), 1u + 2 * 2);  // header + 2 depths x 2 policies
  ASSERT_EQ(summary.size(), 1u + 2);    // header + 2 policies
  const auto& h = summary[0];
  for (size_t r = 1; r < summary.size(); ++r) {
    EXPECT_EQ(summary[r][column(h, "eval_len")], std::to_string(setup.L));
    EXPECT_EQ(summary[r][column(h, "n_keys")], "3");
    const double accuracy = std::stod(summary[r][column(h, "accuracy")]);
    EXPECT_GE(accuracy, 0.0);
    EXPECT_LE(accuracy, 1.0);
  }
  EXPECT_EQ(summary[1][column(h, "policy")], "full");
  EXPECT_EQ(summary[1][column(h, "budget")], "1");
  EXPECT_DOUBLE_EQ(std::stod(summary[1][column(h, "occupancy")]), 1.0);
  const double window = std::stod(summary[2][column(h, "occupancy")]);
  EXPECT_GT(window, 0.0);
  EXPECT_LT(window, 0.5);  // a quarter of the cache, plus the tokens between evictions
  // Keys per depth add up to the keys of the length.
  const auto& hc = cells[0];
  EXPECT_EQ(std::stoi(cells[1][column(hc, "n_keys")]) + std::stoi(cells[2][column(hc, "n_keys")]), 3);
  EXPECT_EQ(column(h, "tokenizer"), h.size());  // bytes: the published columns, no tokenizer
}

// A sub-word checkpoint: prompts in its tokens (L counts tokens), every policy and the probe run
// on them, and every row ends with the tokenizer's identity.
TEST(PasskeyStudies, SubwordTokensThroughEvalAndProbe) {
  auto setup = tiny_setup();
  setup.prompt.tokenizer = std::make_shared<const lm::Tokenizer>(lm::Tokenizer::sentencepiece(
      std::make_shared<SpaceJoiningModel>(), std::string(64, 'a')));
  setup.L = 320;  // tokens: the fixed parts take about 200
  torch::manual_seed(2);
  setup.loaded.config.vocab_size = 512;
  setup.loaded.config.context = setup.L;
  setup.loaded.model = lm::LanguageModel(setup.loaded.config);
  setup.loaded.model->eval();
  const auto identity = setup.prompt.tokenizer->identity();

  cache::Settings policy_settings;
  policy_settings.budget = 0.25;
  std::vector<std::unique_ptr<cache::Policy>> policies;
  for (const char* name : {"full", "fpa-certified", "window", "duo-calibrated"})
    policies.push_back(cache::make_policy(name, policy_settings));
  PasskeyEvalSettings s = small_eval_settings();
  s.lengths = {1, 2};
  s.keys = {2, 2};
  s.calibration_keys = 2;
  const auto t = run_passkey_eval(s, setup, policies);
  const auto summary = rows_of(t.summary.text());
  ASSERT_EQ(summary.size(), 1u + 2 * 4);  // header + 2 lengths x 4 policies
  const auto& h = summary[0];
  ASSERT_EQ(h.back(), "tokenizer");
  for (size_t r = 1; r < summary.size(); ++r) {
    EXPECT_EQ(summary[r].back(), identity);
    EXPECT_EQ(summary[r][column(h, "eval_len")], std::to_string(setup.L * (r <= 4 ? 1 : 2)));
    const double occupancy = std::stod(summary[r][column(h, "occupancy")]);
    EXPECT_GT(occupancy, 0.0);
    EXPECT_LE(occupancy, 1.0);
  }
  EXPECT_DOUBLE_EQ(std::stod(summary[1][column(h, "occupancy")]), 1.0);  // full
  EXPECT_LT(std::stod(summary[3][column(h, "occupancy")]), 0.5);          // window at 25%
  const auto cells = rows_of(t.cells.text());
  ASSERT_EQ(cells[0].back(), "tokenizer");
  for (size_t r = 1; r < cells.size(); ++r) EXPECT_EQ(cells[r].back(), identity);

  PasskeyProbeSettings ps;
  ps.lengths = {1};
  ps.keys = 2;
  ps.depths = 1;
  ps.chunk = 64;
  ps.seed = 5;
  ps.out = "probe.csv";
  const auto probe = run_passkey_probe(ps, setup);
  EXPECT_EQ(probe.prompts, 2);
  const auto rows = rows_of(probe.table.text());
  ASSERT_EQ(rows.size(), 1u + 2 * 2);
  EXPECT_EQ(rows[0].back(), "tokenizer");
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].back(), identity);
    EXPECT_NE(rows[i][column(rows[0], "key_bias")], "-inf");  // the key's digit tokens were found
  }
}

TEST(PasskeyStudies, ProbeHasOneRowPerPromptLayerAndHead) {
  const auto setup = tiny_setup();
  PasskeyProbeSettings s;
  s.lengths = {1};
  s.keys = 2;
  s.depths = 1;
  s.chunk = 64;
  s.seed = 5;
  s.out = "probe.csv";  // never committed here
  const auto r = run_passkey_probe(s, setup);
  EXPECT_EQ(r.prompts, 2);
  EXPECT_LE(r.correct, r.prompts);
  const auto rows = rows_of(r.table.text());
  ASSERT_EQ(rows.size(), 1u + 2 * 2);  // header + 2 prompts x (1 layer x 2 heads)
  const auto& h = rows[0];
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][column(h, "layer")], "0");
    EXPECT_EQ(rows[i][column(h, "head")], std::to_string((i - 1) % 2));
    EXPECT_EQ(rows[i][column(h, "prompt")], std::to_string((i - 1) / 2));
    const double kept = std::stod(rows[i][column(h, "kept_certified")]);
    EXPECT_GT(kept, 0.0);  // the query's own entry at least
    EXPECT_LE(kept, 1.0);
    for (const char* flag : {"key_kept_certified", "key_kept_per_head", "key_kept_shared"})
      EXPECT_TRUE(rows[i][column(h, flag)] == "0" || rows[i][column(h, flag)] == "1") << flag;
  }
}
