// Language-model loss with a compressed cache (lm/compress): with the full cache it is the
// model's own loss on the window; a smaller kept fraction keeps fewer entries; the policies that
// need a question or a calibration are refused; the window subset is spread over the split;
// lm-compress's study (compress_study.h) rates every policy against the full cache, in bytes or
// in a sub-word tokenizer's ids (bits per byte over the bytes the tokens stand for).
#include "lm/cache/policy.h"
#include "lm/compress/compress_study.h"
#include "lm/compress/compressed_loss.h"
#include "lm/corpus_tokenizer.h"
#include "lm/decode.h"
#include "lm/evaluate.h"
#include "lm/model.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

using namespace fpa;
using namespace fpa::lm;

namespace {

LanguageModel small_model(AttentionKind kind, int64_t vocab_size = 256) {
  torch::manual_seed(3);
  ModelConfig c;
  c.kind = kind;
  c.vocab_size = vocab_size;
  c.hidden = 32;
  c.heads = 4;
  c.layers = 2;
  c.context = 64;
  LanguageModel m(c);
  torch::NoGradGuard g;
  for (auto& b : m->blocks)
    if (b->attn->gate_proj) {  // a field that goes up and down, gates that vary
      b->attn->gate_proj->weight.normal_(0.0, 1.0);
      b->attn->gate_proj->bias.normal_(0.0, 0.5);
    }
  m->eval();
  return m;
}

std::unique_ptr<cache::Policy> policy(const std::string& name, double budget = 0.25) {
  cache::Settings s;
  s.budget = budget;
  s.duo_window = 8;
  return cache::make_policy(name, s);
}

// A stand-in for a SentencePiece model (no SentencePiece in a LibTorch test): every pair of
// lowercase letters is one token (ids 256 + 26 a + b), every other byte a token of its own.
class PairModel : public SubwordModel {
 public:
  int64_t vocab_size() const override { return 256 + 26 * 26; }
  std::vector<int32_t> encode(const std::string& text) const override {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < text.size(); ++i) {
      if (lower(text[i]) && i + 1 < text.size() && lower(text[i + 1])) {
        ids.push_back(256 + 26 * (text[i] - 'a') + (text[i + 1] - 'a'));
        ++i;
      } else {
        ids.push_back(int32_t(static_cast<unsigned char>(text[i])));
      }
    }
    return ids;
  }
  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string text;
    for (int32_t id : ids)
      text += id >= 256 ? std::string{char('a' + (id - 256) / 26), char('a' + (id - 256) % 26)}
                        : std::string(1, char(id));
    return text;
  }

 private:
  static bool lower(char c) { return c >= 'a' && c <= 'z'; }
};

// The columns and the cells of a table's rows.
std::vector<std::vector<std::string>> table_cells(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    out.emplace_back();
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) out.back().push_back(cell);
  }
  return out;
}

const AttentionKind kKinds[] = {AttentionKind::Fpa, AttentionKind::Fox, AttentionKind::Transformer};

}  // namespace

TEST(LmCompress, FullCacheGivesTheModelsLoss) {
  for (auto kind : kKinds) {
    auto model = small_model(kind);
    const auto window = at::randint(0, 256, {65}, at::kLong);
    double expected;
    {
      torch::NoGradGuard g;
      expected = model->loss(window.unsqueeze(0)).item<double>();
    }
    IncrementalDecoder decoder(model);
    for (int64_t every : {1, 7}) {
      const auto r = score_window(decoder, window, *policy("full"), every);
      EXPECT_EQ(r.tokens, 64);
      EXPECT_NEAR(r.nll_per_token(), expected, 1e-5 * expected) << to_string(kind);
      EXPECT_DOUBLE_EQ(r.occupancy(), 1.0);
    }
  }
}

TEST(LmCompress, SmallerKeptFractionKeepsLessAndChangesTheLoss) {
  for (auto kind : kKinds) {
    auto model = small_model(kind);
    const auto window = at::randint(0, 256, {65}, at::kLong);
    IncrementalDecoder decoder(model);
    const auto full = score_window(decoder, window, *policy("full"), 1);
    for (const char* name : {"window", "h2o", "tova", "budget-per-head"}) {
      if (policy(name)->needs_bias() && !has_gate(kind)) continue;
      const auto quarter = score_window(decoder, window, *policy(name, 0.25), 1);
      const auto half = score_window(decoder, window, *policy(name, 0.5), 1);
      EXPECT_LT(quarter.occupancy(), half.occupancy()) << name;
      EXPECT_LT(half.occupancy(), 1.0) << name;
      EXPECT_NE(quarter.nll, full.nll) << name;
      // A query attends to at most its capacity plus the keys a policy always keeps (the newest,
      // the sinks), so the mean stays near the kept fraction; except the window, whose size is
      // the fraction of the final length, so every query before it fills keeps all.
      if (std::string(name) != "window")
        EXPECT_LT(quarter.occupancy(), 0.25 + 0.15) << name << " " << to_string(kind);
    }
  }
}

TEST(LmCompress, RefusesPoliciesThatNeedAQuestionOrCalibration) {
  auto model = small_model(AttentionKind::Fpa);
  IncrementalDecoder decoder(model);
  const auto window = at::randint(0, 256, {17}, at::kLong);
  EXPECT_THROW(score_window(decoder, window, *policy("snapkv"), 1), std::invalid_argument);
  EXPECT_THROW(score_window(decoder, window, *policy("duo-calibrated"), 1), std::invalid_argument);
  EXPECT_THROW(score_window(decoder, window.narrow(0, 0, 1), *policy("full"), 1), std::invalid_argument);
}

TEST(LmCompress, SpreadIndicesCoverTheSplit) {
  EXPECT_EQ(spread_indices(5, 0), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(spread_indices(5, 9), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  const auto s = spread_indices(1000, 7);
  EXPECT_EQ(s.size(), 7u);
  EXPECT_EQ(s.front(), 0);
  EXPECT_GE(s.back(), 1000 - 1000 / 7 - 1);
  EXPECT_EQ(std::set<int64_t>(s.begin(), s.end()).size(), s.size());
}

TEST(LmCompress, StudyRatesEveryPolicyAgainstTheFullCache) {
  LoadedModel loaded;
  loaded.model = small_model(AttentionKind::Fpa);
  loaded.config = loaded.model->config;
  const std::vector<at::Tensor> windows = {at::randint(0, 256, {65}, at::kLong),
                                           at::randint(0, 256, {65}, at::kLong)};
  std::vector<std::unique_ptr<cache::Policy>> policies;
  policies.push_back(policy("full"));
  policies.push_back(policy("budget"));
  CompressSettings s;
  s.run = "small";
  s.out = "compress.csv";  // never committed here
  const auto r = run_compress(s, loaded, windows, policies);
  ASSERT_EQ(r.losses.size(), 2u);
  ASSERT_TRUE(r.full_ppl.has_value());
  EXPECT_DOUBLE_EQ(*r.full_ppl, r.losses[0].perplexity());
  EXPECT_EQ(r.losses[0].tokens, 2 * 64);  // every token of both windows scored once
  EXPECT_DOUBLE_EQ(r.losses[0].occupancy(), 1.0);
  EXPECT_LT(r.losses[1].occupancy(), 0.5);
  EXPECT_EQ(r.table.rows(), 2u);
  // The full cache's own row says its perplexity rose by exactly 0.
  const auto text = r.table.text();
  EXPECT_NE(text.find(",full,1,,0,1,"), std::string::npos) << text;
  // A byte table keeps its published columns, and bits per byte is the loss per token in bits.
  const auto cells = table_cells(text);
  EXPECT_EQ(cells[0].back(), "step");
  EXPECT_EQ(r.bytes, 2 * 64);
  EXPECT_EQ(cells[1][10], fmt::format("{}", r.losses[0].nll_per_token() / std::log(2.0)));
}

// A sub-word model scores the windows of its tokenizer's ids: counts are tokens, bits per byte
// divides by the bytes those tokens stand for, and every row names the tokenizer.
TEST(LmCompress, SubwordStudyCountsTokensAndBitsPerByte) {
  const auto tokenizer = Tokenizer::sentencepiece(std::make_shared<PairModel>(), std::string(64, 'a'));
  LoadedModel loaded;
  loaded.model = small_model(AttentionKind::Fpa, tokenizer.vocab_size());
  loaded.config = loaded.model->config;
  std::string text;
  for (int i = 0; i < 60; ++i) text += "the quick brown fox jumps over the lazy dog. ";
  const auto windows = document_windows({{"d", text}}, loaded.config.context, 0, tokenizer);
  ASSERT_GE(windows.size(), 2u);
  int64_t tokens = 0;
  for (const auto& w : windows) tokens += w.numel() - 1;
  EXPECT_GT(windows[0].max().item<int64_t>(), 255);  // pair ids, not bytes
  std::vector<std::unique_ptr<cache::Policy>> policies;
  policies.push_back(policy("full"));
  policies.push_back(policy("fpa-certified"));
  CompressSettings s;
  s.run = "subword";
  s.out = "compress.csv";  // never committed here
  s.tokenizer = tokenizer;
  const auto r = run_compress(s, loaded, windows, policies);
  EXPECT_EQ(r.losses[0].tokens, tokens);
  // Every byte of the document and its newline is predicted once, but the first token's ("th").
  EXPECT_EQ(r.bytes, int64_t(text.size() + 1) - 2);
  EXPECT_GT(r.bytes, tokens);
  const auto cells = table_cells(r.table.text());
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0].back(), "tokenizer");
  for (size_t k = 1; k < cells.size(); ++k) {
    EXPECT_EQ(cells[k].back(), tokenizer.identity());
    EXPECT_EQ(cells[k][13], fmt::format("{}", tokens));
    const double bpb = r.losses[k - 1].nll / double(r.bytes) / std::log(2.0);
    EXPECT_EQ(cells[k][10], fmt::format("{}", bpb));
    EXPECT_LT(bpb, r.losses[k - 1].nll_per_token() / std::log(2.0));
  }
}

// The tensor path of the KV cache (what a model on a GPU decodes with; kernels/README.md), forced
// on the CPU, scores a window as the CPU's fused path does under every online policy: the loss to
// 1e-5 relative (float32 rounding), the same occupancy (the policies kept the same entries).
TEST(LmCompress, TensorCacheScoresAsTheCpuPath) {
  for (auto kind : kKinds) {
    auto model = small_model(kind);
    const auto window = at::randint(0, 256, {65}, at::kLong);
    IncrementalDecoder cpu(model), tensor(model, fpa::Impl::Fused, true);
    for (const char* name : {"full", "fpa-certified", "budget", "window", "h2o", "tova", "knorm"}) {
      if (policy(name)->needs_bias() && !has_gate(kind)) continue;
      const auto a = score_window(cpu, window, *policy(name, 0.25), 4);
      const auto b = score_window(tensor, window, *policy(name, 0.25), 4);
      EXPECT_NEAR(a.nll_per_token(), b.nll_per_token(), 1e-5 * a.nll_per_token())
          << name << " " << to_string(kind);
      EXPECT_DOUBLE_EQ(a.occupancy(), b.occupancy()) << name << " " << to_string(kind);
    }
  }
}
