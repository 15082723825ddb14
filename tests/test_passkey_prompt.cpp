// Passkey prompts: exact length, the key at the requested depth, the answer at the end.
#include "lm/passkey/prompt.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

using namespace fpa::passkey;

TEST(PasskeyPrompt, LayoutAndLength) {
  PromptConfig cfg;
  const auto p = make_prompt(cfg, 512, 0.5, "12345");
  EXPECT_EQ(p.text.size(), 512u);
  EXPECT_EQ(p.text.substr(0, cfg.instruction.size()), cfg.instruction);
  EXPECT_EQ(p.text.substr(size_t(p.answer_start)), "12345");
  EXPECT_EQ(p.text.substr(size_t(p.answer_start) - cfg.question.size(), cfg.question.size()),
            cfg.question);
  EXPECT_EQ(p.text.substr(size_t(p.key_position), 22), "The pass key is 12345.");
  EXPECT_EQ(cfg.fixed_bytes(), 249);  // close to the prototype's ~252 bytes
}

TEST(PasskeyPrompt, DepthMovesTheKey) {
  PromptConfig cfg;
  const auto first = make_prompt(cfg, 2048, 0.0, "11111");
  const auto last = make_prompt(cfg, 2048, 1.0, "11111");
  EXPECT_EQ(first.key_position, int64_t(cfg.instruction.size()));
  EXPECT_EQ(last.key_position + 59 + int64_t(cfg.question.size()), last.answer_start);
  const auto mid = make_prompt(cfg, 2048, 0.5, "11111");
  const double frac = double(mid.key_position - 147) / double(2048 - cfg.fixed_bytes());
  EXPECT_NEAR(frac, 0.5, 0.05);  // nearest sentence boundary
}

TEST(PasskeyPrompt, RejectsBadInput) {
  PromptConfig cfg;
  EXPECT_THROW(make_prompt(cfg, 100, 0.5, "12345"), std::invalid_argument);
  EXPECT_THROW(make_prompt(cfg, 512, 1.5, "12345"), std::invalid_argument);
  EXPECT_THROW(make_prompt(cfg, 512, 0.5, "123"), std::invalid_argument);
  EXPECT_THROW(read_filler_file("/nonexistent/filler.txt"), std::runtime_error);
}

TEST(PasskeyPrompt, FillerFromFileAndKeyLength) {
  auto path = std::filesystem::temp_directory_path() / "fpa_passkey_filler.txt";
  std::ofstream(path) << "Birds  fly south.\nFish swim.\n";
  PromptConfig cfg;
  cfg.filler = read_filler_file(path.string());
  EXPECT_EQ(cfg.filler, "Birds fly south. Fish swim. ");
  cfg.key_digits = 7;
  std::mt19937_64 rng(1);
  const auto key = random_key(7, rng);
  const auto p = make_prompt(cfg, 400, 0.3, key);
  EXPECT_EQ(p.text.size(), 400u);
  EXPECT_NE(p.text.find("Fish swim."), std::string::npos);
  EXPECT_EQ(p.text.substr(size_t(p.answer_start)), key);
}

RC_GTEST_PROP(PasskeyPrompt, AnyLengthAndDepth, ()) {
  PromptConfig cfg;
  const int64_t length = *rc::gen::inRange<int64_t>(cfg.fixed_bytes(), 5000);
  const double depth = *rc::gen::inRange(0, 1001) / 1000.0;
  std::mt19937_64 rng{uint64_t(length)};
  const auto key = random_key(5, rng);
  const auto p = make_prompt(cfg, length, depth, key);
  RC_ASSERT(int64_t(p.text.size()) == length);
  RC_ASSERT(p.text.substr(size_t(p.answer_start)) == key);
  RC_ASSERT(p.text.find("The pass key is " + key + ". Remember it.") == size_t(p.key_position));
  RC_ASSERT(key[0] != '0');
}

// Natural filler (issue 46): every prompt takes its own passage of the text, starting at a
// sentence start; the keys are those of the repeated filler (the passages have a generator of
// their own), and the same seed gives the same passages.
TEST(PasskeyPrompt, NaturalFillerTakesOnePassagePerPromptWithTheSameKeys) {
  PromptConfig repeated;
  PromptConfig natural;
  for (int s = 0; s < 400; ++s) natural.filler += "Sentence number " + std::to_string(s) + " is here. ";
  natural.filler_source = "corpus-test";
  natural.filler_seed = 7;
  const auto depths = spread_depths(5);
  std::mt19937_64 rng_a(3), rng_b(3), rng_c(3);
  const auto a = draw_prompts(repeated, 1024, 20, depths, rng_a);
  const auto b = draw_prompts(natural, 1024, 20, depths, rng_b);
  const auto c = draw_prompts(natural, 1024, 20, depths, rng_c);
  const auto starts = passage_starts(natural);  // sentence starts, the end excluded
  std::set<int64_t> offsets;
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].key, b[k].key);
    EXPECT_EQ(a[k].depth, b[k].depth);
    EXPECT_EQ(a[k].filler_offset, 0);  // the classic form: the filler from its start
    EXPECT_EQ(b[k].text, c[k].text);   // same seed, same passages
    EXPECT_EQ(int64_t(b[k].text.size()), 1024);
    EXPECT_TRUE(std::binary_search(starts.begin(), starts.end(), b[k].filler_offset));
    // The prompt's filler begins with the text at its offset (at depth 0 the key comes first).
    const auto head = natural.filler.substr(size_t(b[k].filler_offset), 40);
    if (b[k].depth > 0)
      EXPECT_EQ(b[k].text.compare(repeated.instruction.size(), head.size(), head), 0) << k;
    offsets.insert(b[k].filler_offset);
  }
  EXPECT_GE(offsets.size(), 15u);  // 20 draws from 400 starts: (almost) all different
  // A passage near the end wraps around to the text's start.
  const auto last = make_prompt(natural, 1024, 0.0, "12345", starts.back());
  EXPECT_EQ(int64_t(last.text.size()), 1024);
  EXPECT_THROW(make_prompt(natural, 1024, 0.0, "12345", int64_t(natural.filler.size())),
               std::invalid_argument);
  // Another seed, other passages.
  natural.filler_seed = 8;
  std::mt19937_64 rng_d(3);
  const auto d = draw_prompts(natural, 1024, 20, depths, rng_d);
  int same = 0;
  for (size_t k = 0; k < d.size(); ++k) same += d[k].filler_offset == b[k].filler_offset;
  EXPECT_LT(same, 5);
}
