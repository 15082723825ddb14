// Model: shapes, parameter counts per variant, causality, FPA's initialisation.
#include "lm/model.h"
#include "lm/presets.h"
#include "test_lm_util.h"

#include <gtest/gtest.h>

using namespace fpa::lm;

namespace {
const AttentionKind kAll[] = {AttentionKind::Transformer, AttentionKind::SoftmaxNope,
                              AttentionKind::Fox, AttentionKind::Fpa};
}

TEST(LmModel, LogitsHaveShapeBatchLengthVocab) {
  for (auto k : kAll) {
    torch::manual_seed(0);
    LanguageModel m(lmtest::micro_model(k));
    const auto tokens = torch::randint(0, 256, {3, 11}, torch::kLong);
    const auto logits = m->forward(tokens);
    EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 11, 256})) << to_string(k);
    EXPECT_TRUE(torch::isfinite(logits).all().item<bool>()) << to_string(k);
    EXPECT_NEAR(m->loss(tokens).item<double>(), std::log(256.0), 0.5) << to_string(k);
  }
}

TEST(LmModel, ParameterCountsAgreeUpToGateProjections) {
  for (const auto& name : {"tiny", "small"}) {
    const auto base = preset(name).model;
    int64_t without_gates = -1;
    for (auto k : kAll) {
      auto c = base;
      c.kind = k;
      LanguageModel m(c);
      const int64_t expected_gate = has_gate(k) ? c.layers * (c.hidden * c.heads + c.heads) : 0;
      EXPECT_EQ(m->gate_parameter_count(), expected_gate);
      if (without_gates < 0) without_gates = m->parameter_count() - m->gate_parameter_count();
      EXPECT_EQ(m->parameter_count() - m->gate_parameter_count(), without_gates) << name;
    }
    // Embedding (tied) + per layer: 4 C^2 attention + 3 C W SwiGLU + 2 C norms; final norm.
    const auto C = base.hidden, W = base.mlp_width();
    EXPECT_EQ(without_gates, 256 * C + base.layers * (4 * C * C + 3 * C * W + 2 * C) + C);
  }
}

TEST(LmModel, IsCausalForEveryVariant) {
  for (auto k : kAll) {
    torch::manual_seed(1);
    LanguageModel m(lmtest::micro_model(k));
    auto a = torch::randint(0, 256, {1, 12}, torch::kLong);
    auto b = a.clone();
    b[0][8] = (a[0][8].item<int64_t>() + 1) % 256;
    const auto la = m->forward(a), lb = m->forward(b);
    EXPECT_TRUE(torch::allclose(la.narrow(1, 0, 8), lb.narrow(1, 0, 8), 1e-5, 1e-6)) << to_string(k);
    EXPECT_FALSE(torch::allclose(la.narrow(1, 8, 4), lb.narrow(1, 8, 4))) << to_string(k);
  }
}

TEST(LmModel, FpaStartsWithNegativeIncrementsLikeFoxGates) {
  torch::manual_seed(2);
  auto c = preset("tiny").model;
  c.kind = AttentionKind::Fpa;
  LanguageModel m(c);
  const auto x = m->blocks[0]->attn_norm(m->embed(torch::randint(0, 256, {4, 64}, torch::kLong)));
  const auto delta = m->blocks[0]->attn->token_gate(x);
  EXPECT_EQ(delta.sizes(), (std::vector<int64_t>{4, c.heads, 64}));
  // All increments negative: by T1 the FPA bias then equals FoX's with log f = delta.
  EXPECT_LT(delta.max().item<double>(), 0.0);
  EXPECT_NEAR(delta.mean().item<double>(), -std::log(2.0), 0.1);
}

TEST(LmModel, InvalidConfigurationIsRejected) {
  auto c = lmtest::micro_model(AttentionKind::Fox);
  c.heads = 3;
  EXPECT_THROW({ LanguageModel m(c); }, std::invalid_argument);
  EXPECT_THROW(parse_attention_kind("softmax"), std::invalid_argument);
  EXPECT_THROW(preset("huge"), std::invalid_argument);
}

// The preset files (configs/lm/*.conf, read at run time) hold the values the presets had when they were
// code: runs and checkpoints made before the move must resume and evaluate the same.
TEST(LmModel, PresetFilesKeepTheEarlierPresets) {
  const auto& t = preset("tiny");
  EXPECT_EQ(std::vector<int64_t>({t.model.vocab_size, t.model.hidden, t.model.layers, t.model.heads,
                                  t.model.context, t.model.mlp_hidden}),
            std::vector<int64_t>({256, 128, 2, 4, 128, ModelConfig{}.mlp_hidden}));
  EXPECT_EQ(std::vector<int64_t>({t.train.steps, t.train.batch, t.train.accum, t.train.warmup,
                                  t.train.val_every, t.train.val_windows, t.train.checkpoint_every}),
            std::vector<int64_t>({1200, 16, 1, 100, 100, 64, 100}));
  EXPECT_EQ(t.train.lr, 2e-3);
  const auto& s = preset("small");
  EXPECT_EQ(std::vector<int64_t>({s.model.hidden, s.model.layers, s.model.heads, s.model.context,
                                  s.train.steps, s.train.val_every}),
            std::vector<int64_t>({256, 4, 4, 256, 1200, 200}));
  EXPECT_EQ(s.train.lr, 1e-3);
  const auto& p = preset("paper");
  EXPECT_EQ(std::vector<int64_t>({p.model.vocab_size, p.model.hidden, p.model.layers, p.model.mlp_hidden,
                                  p.model.context, p.train.batch, p.train.accum}),
            std::vector<int64_t>({50277, 768, 12, 1536, 2048, 256, 8}));
  EXPECT_EQ(t.note, "CPU, minutes: the scale the suite runs (claim C5's study, lm/reproduce.sh).");
  // The tokenizer: bytes unless a preset says otherwise; paper and paper-smoke are sub-word.
  EXPECT_EQ(t.train.tokenizer, TokenizerKind::Bytes);
  EXPECT_EQ(p.train.tokenizer, TokenizerKind::SentencePiece);
  const auto& smoke = preset("paper-smoke");
  EXPECT_EQ(smoke.train.tokenizer, TokenizerKind::SentencePiece);
  EXPECT_EQ(std::vector<int64_t>({smoke.model.vocab_size, smoke.model.mlp_hidden, smoke.train.accum}),
            std::vector<int64_t>({512, 2 * smoke.model.hidden, 2}));  // paper's structure
  const auto names = preset_names();  // smallest first: paper-smoke, tiny, small, any others, paper
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(names[0], "paper-smoke");
  EXPECT_EQ(names[1], "tiny");
  EXPECT_EQ(names[2], "small");
  EXPECT_EQ(names.back(), "paper");
}

TEST(LmModel, PresetFileErrorsNameTheLine) {
  EXPECT_EQ(parse_preset("x", "# note\nhidden = 64\n").model.hidden, 64);
  for (const char* bad : {"hidden = 64\nwidth = 3\n", "hidden = 6x4\n", "hidden\n", "preset = y\n",
                          "lr = fast\n"}) {
    try {
      parse_preset("x", bad);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("configs/lm/x.conf line"), std::string::npos) << e.what();
    }
  }
}

TEST(LmModel, LearningRateWarmsUpThenDecays) {
  TrainConfig t;
  t.steps = 100; t.warmup = 10; t.lr = 1.0; t.min_lr_ratio = 0.1;
  EXPECT_NEAR(learning_rate(t, 0), 0.1, 1e-12);
  EXPECT_NEAR(learning_rate(t, 9), 1.0, 1e-12);
  EXPECT_NEAR(learning_rate(t, 10), 1.0, 1e-12);
  EXPECT_NEAR(learning_rate(t, 55), 0.55, 1e-12);
  EXPECT_NEAR(learning_rate(t, 100), 0.1, 1e-12);
}
