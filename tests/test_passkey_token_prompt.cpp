// Passkey prompts in a sub-word model's tokens (lm/passkey/token_prompt.h), with a SentencePiece
// model trained on a generated corpus (no LibTorch, as test_lm_tokenizer): exactly `length`
// tokens, the key sentence once at the filler boundary nearest to the depth, the byte prompt's
// text parts, the tokenization of the whole text; the answer judged on text (prompt.h).
#include "lm/passkey/token_prompt.h"
#include "lm/sentencepiece_tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace fpa;
using namespace fpa::passkey;

namespace {

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// 20 documents of English-like sentences (the prompt's words among others) with numbers in them,
// so that words and digits have pieces of their own.
void make_corpus(const fs::path& dir) {
  static const char* words[] = {"the", "pass", "key", "is", "grass", "green", "sky", "blue",
                                "sun", "yellow", "here", "we", "go", "there", "and", "back",
                                "again", "remember", "it", "what", "important", "text", "find",
                                "a", "lot", "of", "info", "hidden", "inside", "quiz", "you",
                                "about", "river", "stone", "house", "walks", "slowly", "red"};
  std::mt19937 rng(5);
  fs::create_directories(dir);
  for (int d = 0; d < 20; ++d) {
    std::ostringstream text;
    while (text.tellp() < 3000) {
      for (int w = 4 + rng() % 9; w > 0; --w) {
        std::string word = words[rng() % std::size(words)];
        if (rng() % 12 == 0) word = std::to_string(rng() % 100000);
        if (w == 1 || rng() % 10 == 0) word[0] = char(std::toupper(word[0]));
        text << word << (w == 1 ? "" : " ");
      }
      text << (rng() % 5 == 0 ? "? " : ". ");
      if (rng() % 4 == 0) text << "\n";
    }
    std::ofstream(dir / ("doc" + std::to_string(10 + d) + ".txt"), std::ios::binary) << text.str();
  }
}

const std::string kQuestion = " What is the pass key? The pass key is";

}  // namespace

class PasskeyTokenPrompt : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("fpa_passkey_tokens_" + std::to_string(::getpid()));
    make_corpus(root_ / "corpus");
    const auto trained = lm::train_sentencepiece((root_ / "corpus").string(), 400);
    tokenizer_ = std::make_shared<const lm::Tokenizer>(lm::load_sentencepiece(trained.model_path));
  }
  static void TearDownTestSuite() {
    tokenizer_.reset();
    fs::remove_all(root_);
  }
  static PromptConfig config() {
    PromptConfig c;
    c.tokenizer = tokenizer_;
    return c;
  }
  static std::string decode(const std::vector<int64_t>& ids, size_t from, size_t to) {
    return tokenizer_->decode(std::vector<int32_t>(ids.begin() + long(from), ids.begin() + long(to)));
  }
  static inline fs::path root_;
  static inline std::shared_ptr<const lm::Tokenizer> tokenizer_;
};

TEST_F(PasskeyTokenPrompt, ExactLengthAndTheByteParts) {
  const auto c = config();
  const std::string key = "40517";
  const std::string key_part = " The pass key is 40517. Remember it. 40517 is the pass key.";
  const std::string instruction = c.instruction.substr(0, c.instruction.size() - 1);  // no space
  for (int64_t length : {fixed_tokens_bound(c), int64_t(300), int64_t(777)})
    for (double depth : {0.0, 0.35, 0.5, 1.0}) {
      const auto p = make_token_prompt(c, length, depth, key);
      SCOPED_TRACE(testing::Message() << "length " << length << " depth " << depth);
      ASSERT_EQ(int64_t(p.ids.size()), length);
      EXPECT_EQ(p.answer_tokens, 6);
      EXPECT_EQ(p.text, decode(p.ids, 0, p.ids.size()));
      // Instruction, filler, the key sentence once, filler, question, answer " NNNNN".
      EXPECT_EQ(p.text.rfind(instruction, 0), 0u);
      EXPECT_EQ(decode(p.ids, size_t(p.answer_start), p.ids.size()), " " + key);
      EXPECT_EQ(p.text.substr(p.text.size() - kQuestion.size() - 6), kQuestion + " " + key);
      EXPECT_EQ(count_of(p.text, key_part), 1);
      EXPECT_EQ(count_of(p.text, key), 3);  // twice in the key sentence, once as the answer
      const auto before = decode(p.ids, 0, size_t(p.key_position));
      ASSERT_EQ(p.text.substr(before.size(), key_part.size()), key_part);
      // Without the key sentence, the filler is the repeated filler's text from its start.
      const auto head = instruction.size(), tail = kQuestion.size() + 6;
      auto filler = p.text.substr(head, p.text.size() - head - tail);
      filler.erase(before.size() - head, key_part.size());
      std::string stream = " ";
      while (stream.size() < filler.size()) stream += c.filler;
      EXPECT_EQ(stream.compare(0, filler.size(), filler), 0) << filler;
      // The parts' ids are the whole text's: re-encoding the prompt up to the key sentence's end
      // (a sentence boundary) gives the same ids.
      const auto upto = size_t(p.key_position) + tokenizer_->encode(key_part).size();
      const auto reencoded = tokenizer_->encode(decode(p.ids, 0, upto));
      EXPECT_EQ(std::vector<int64_t>(reencoded.begin(), reencoded.end()),
                std::vector<int64_t>(p.ids.begin(), p.ids.begin() + long(upto)));
      // The key spans hold the digits of both occurrences, and nothing else but their pieces'.
      for (const auto& [b, e] : p.key_spans) {
        const auto digits = decode(p.ids, size_t(b), size_t(e));
        EXPECT_NE(digits.find(key), std::string::npos) << digits;
        EXPECT_LE(digits.size(), key.size() + 2) << digits;
      }
    }
}

TEST_F(PasskeyTokenPrompt, KeyAtTheFillerBoundaryNearestToTheDepth) {
  const auto c = config();
  const auto head = tokenizer_->encode(c.instruction.substr(0, c.instruction.size() - 1)).size();
  for (int k = 0; k < 30; ++k) {
    const double depth = k / 29.0;
    const auto p = make_token_prompt(c, 600, depth, "99170");
    // The filler's tokens without the key sentence, and its sentence boundaries: after a token
    // ending a sentence, before one starting with a space (and the filler's two ends).
    std::vector<int64_t> filler(p.ids.begin() + long(head), p.ids.begin() + p.answer_start);
    const auto key_len = tokenizer_->encode(" The pass key is 99170. Remember it. 99170 is the pass key.").size();
    const auto cut = p.key_position - int64_t(head);
    filler.erase(filler.begin() + cut, filler.begin() + cut + long(key_len));
    filler.resize(filler.size() - tokenizer_->encode(kQuestion).size());
    const auto piece = [&](int64_t i) { return tokenizer_->decode({int32_t(filler[size_t(i)])}); };
    std::vector<int64_t> boundaries = {0, int64_t(filler.size())};
    for (int64_t i = 1; i < int64_t(filler.size()); ++i)
      if (!piece(i - 1).empty() && piece(i - 1).back() == '.' && piece(i).rfind(' ', 0) == 0)
        boundaries.push_back(i);
    ASSERT_NE(std::find(boundaries.begin(), boundaries.end(), cut), boundaries.end()) << cut;
    const double target = depth * double(filler.size());
    for (int64_t b : boundaries) EXPECT_LE(std::abs(cut - target), std::abs(b - target) + 1e-9);
  }
}

TEST_F(PasskeyTokenPrompt, PassagesOfNaturalFiller) {
  auto c = config();
  c.filler_source = "corpus-test";
  c.filler = "The river walks slowly. A red stone is here! We go back again? The house is blue. ";
  const auto starts = passage_starts(c);
  ASSERT_EQ(starts.size(), 4u);
  for (int64_t offset : starts) {
    const auto p = make_token_prompt(c, 200, 0.0, "12345", offset);
    ASSERT_EQ(p.ids.size(), 200u);
    const auto after_key = decode(p.ids, size_t(p.key_position), size_t(p.answer_start));
    const std::string key_part = " The pass key is 12345. Remember it. 12345 is the pass key.";
    ASSERT_EQ(after_key.rfind(key_part, 0), 0u);
    const auto filler = after_key.substr(key_part.size(), after_key.size() - key_part.size() - kQuestion.size());
    auto stream = " " + c.filler.substr(size_t(offset));
    while (stream.size() < filler.size()) stream += c.filler;
    EXPECT_EQ(stream.compare(0, filler.size(), filler), 0) << offset << ": " << filler;
  }
}

TEST_F(PasskeyTokenPrompt, LengthsBelowTheFixedPartsAreRefused) {
  const auto c = config();
  std::mt19937_64 rng(3);
  const auto bound = fixed_tokens_bound(c);
  for (int k = 0; k < 200; ++k) {  // the bound holds every key
    const auto key = random_key(c.key_digits, rng);
    const auto p = make_token_prompt(c, bound, 0.5, key);
    EXPECT_EQ(int64_t(p.ids.size()), bound);
  }
  // The fixed parts alone fit, one token less does not.
  const auto fixed = tokenizer_->encode(c.instruction.substr(0, c.instruction.size() - 1)).size() +
                     tokenizer_->encode(" The pass key is 12345. Remember it. 12345 is the pass key.").size() +
                     tokenizer_->encode(kQuestion).size() + tokenizer_->encode(" 12345").size();
  EXPECT_LE(int64_t(fixed), bound);
  const auto bare = make_token_prompt(c, int64_t(fixed), 0.5, "12345");
  EXPECT_EQ(bare.text, c.instruction.substr(0, c.instruction.size() - 1) +
                           " The pass key is 12345. Remember it. 12345 is the pass key." + kQuestion + " 12345");
  EXPECT_THROW(make_token_prompt(c, int64_t(fixed) - 1, 0.5, "12345"), std::invalid_argument);
  EXPECT_THROW(make_token_prompt(c, 20, 0.5, "12345"), std::invalid_argument);
  EXPECT_THROW(make_token_prompt(c, 300, 1.5, "12345"), std::invalid_argument);
  EXPECT_THROW(make_token_prompt(c, 300, 0.5, "123"), std::invalid_argument);
  EXPECT_THROW(make_token_prompt(PromptConfig{}, 300, 0.5, "12345"), std::invalid_argument);
}

TEST_F(PasskeyTokenPrompt, DrawsTheByteKeysAndDepths) {
  const auto c = config();
  std::mt19937_64 a(9), b(9);
  const auto depths = spread_depths(3);
  const auto tokens = draw_prompts(c, 400, 6, depths, a);
  const auto bytes = draw_prompts(PromptConfig{}, 400, 6, depths, b);
  for (size_t k = 0; k < tokens.size(); ++k) {
    EXPECT_EQ(tokens[k].key, bytes[k].key);
    EXPECT_EQ(tokens[k].depth, bytes[k].depth);
    EXPECT_EQ(tokens[k].ids.size(), 400u);
    EXPECT_TRUE(tokens[k].tokenizer);
    EXPECT_FALSE(bytes[k].tokenizer);
    EXPECT_EQ(bytes[k].ids, to_tokens(bytes[k].text));
  }
}

TEST(PasskeyAnswer, JudgedOnTheTextAfterTheQuestion) {
  EXPECT_TRUE(answer_matches("12345", " 12345"));   // sub-word: the space is the answer's
  EXPECT_TRUE(answer_matches("12345", "12345"));    // bytes: the question ends in the space
  EXPECT_TRUE(answer_matches("12345", " 12345. "));  // what follows the digits is not read
  EXPECT_TRUE(answer_matches("12345", " 123456"));
  EXPECT_FALSE(answer_matches("12345", " 1234"));   // truncated
  EXPECT_FALSE(answer_matches("12345", " 1234."));
  EXPECT_FALSE(answer_matches("12345", " 12346"));  // wrong
  EXPECT_FALSE(answer_matches("12345", "  12345"));  // one space only
  EXPECT_FALSE(answer_matches("12345", " 123 45"));
  EXPECT_FALSE(answer_matches("12345", ""));
  EXPECT_FALSE(answer_matches("12345", " "));
  // Bytes: exactly `generated == key` on key_digits bytes.
  const auto p = make_prompt(PromptConfig{}, 400, 0.5, "12345");
  EXPECT_EQ(answer_text(p, {'1', '2', '3', '4', '5'}), "12345");
  EXPECT_EQ(p.ids, to_tokens(p.text));
  EXPECT_EQ(p.answer_tokens, 5);
  EXPECT_EQ(p.text.substr(size_t(p.key_spans[0].first), 5), "12345");
  EXPECT_EQ(p.text.substr(size_t(p.key_spans[1].first), 5), "12345");
  EXPECT_EQ(p.key_spans[0].first, p.key_position + 16);
}
