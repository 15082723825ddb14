// The tokenizer without LibTorch (lm/tokenizer.h, lm/sentencepiece_tokenizer.h): SHA-256, a
// SentencePiece model trained on a generated corpus (round trip, training split only,
// determinism), bad models and corpora, the bytes kind.
#include "experiments/usage_error.h"
#include "lm/sha256.h"
#include "lm/sentencepiece_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace fpa::lm;

namespace {

// 259 ids go to <unk>, <s>, </s> and the 256 byte pieces; the rest to characters and pieces.
constexpr int kVocab = 420;
// Frequent in the test documents (the 10th and 20th: doc19, doc29) and absent from the others: a
// model trained on every document makes it one piece.
const std::string kTestOnlyWord = "quizzaciously";
// As frequent in every document (so in the training split): one piece.
const std::string kCommonWord = "sunparvedi";

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// 20 documents of about 3 KB: words built from syllables (so there are pieces below word level),
// lines of 6-15 words, a few tabs and double spaces, a non-ASCII word.
void make_corpus(const fs::path& dir) {
  static const char* syllables[] = {"ka", "ro", "mi", "te", "sun", "lo", "par", "ve",
                                    "di", "on", "bre", "tu", "shi", "ga", "nel", "po"};
  std::mt19937 rng(7);
  std::vector<std::string> words;
  for (int w = 0; w < 300; ++w) {
    std::string word;
    for (int s = 1 + rng() % 3; s > 0; --s) word += syllables[rng() % 16];
    words.push_back(word);
  }
  words.push_back("caf\xc3\xa9");
  fs::create_directories(dir);
  for (int d = 0; d < 20; ++d) {
    const bool test_doc = d % 10 == 9;
    std::ostringstream text;
    while (text.tellp() < 3000) {
      for (int w = 6 + rng() % 10; w > 0; --w) {
        const auto r = rng() % 4;
        text << (r == 0                ? kCommonWord
                 : test_doc && r == 1 ? kTestOnlyWord
                                      : words[rng() % words.size()]);
        text << (rng() % 40 == 0 ? "\t" : rng() % 40 == 0 ? "  " : " ");
      }
      text << ".\n";
    }
    write_bytes((dir / ("doc" + std::to_string(10 + d) + ".txt")).string(), text.str());
  }
}

}  // namespace

// One corpus and one trained model for the whole suite (training takes a fraction of a second).
class LmTokenizer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new fs::path(fs::temp_directory_path() /
                         ("fpa-lm-tokenizer-" + std::to_string(::getpid())));
    fs::remove_all(*root_);
    corpus_ = new std::string((*root_ / "corpus").string());
    make_corpus(*corpus_);
    trained_ = new TrainedTokenizer(train_sentencepiece(*corpus_, kVocab));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*root_);
    delete root_;
    delete corpus_;
    delete trained_;
  }
  static fs::path* root_;
  static std::string* corpus_;
  static TrainedTokenizer* trained_;
};
fs::path* LmTokenizer::root_ = nullptr;
std::string* LmTokenizer::corpus_ = nullptr;
TrainedTokenizer* LmTokenizer::trained_ = nullptr;

namespace {

// The exception's message, or "" when `f` does not throw a UsageError.
template <class F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const fpa::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(LmTokenizerSha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(LmTokenizer, ModelIsSavedBesideTheCorpusWithItsChecksum) {
  const auto name = "corpus.spm-" + std::to_string(kVocab) + ".model";
  EXPECT_EQ(fs::path(trained_->model_path), *root_ / name);
  EXPECT_EQ(sentencepiece_model_path(*corpus_ + "/", kVocab), trained_->model_path);
  EXPECT_EQ(trained_->sha256, sha256_hex(read_bytes(trained_->model_path)));
  EXPECT_EQ(read_bytes(trained_->model_path + ".sha256"),
            trained_->sha256 + "  " + name + "\n");
  const auto corpus = load_corpus(*corpus_);  // still exactly the 20 documents
  EXPECT_EQ(corpus.train.size() + corpus.validation.size() + corpus.test.size(), 20u);
  const auto t = load_sentencepiece(trained_->model_path);
  EXPECT_EQ(t.kind(), TokenizerKind::SentencePiece);
  EXPECT_EQ(t.vocab_size(), kVocab);
  EXPECT_EQ(t.sha256(), trained_->sha256);
  EXPECT_EQ(t.identity(), "sentencepiece vocab=" + std::to_string(kVocab) + " sha256=" +
                              trained_->sha256);
}

TEST_F(LmTokenizer, RoundTripsEveryDocumentOfEverySplit) {
  const auto t = load_sentencepiece(trained_->model_path);
  const auto corpus = load_corpus(*corpus_);
  size_t tokens = 0, bytes = 0;
  for (const auto* split : {&corpus.train, &corpus.validation, &corpus.test}) {
    for (const auto& d : *split) {
      const auto ids = t.encode(d.text);
      for (auto id : ids) ASSERT_TRUE(id >= 0 && id < kVocab) << d.name;
      EXPECT_EQ(t.decode(ids), d.text) << d.name;
      tokens += ids.size();
      bytes += d.text.size();
    }
  }
  EXPECT_LT(tokens * 2, bytes);  // sub-word pieces: fewer than half as many tokens as bytes
  // The stream of a split: each document, then the ids of "\n".
  const auto stream = t.encode_stream(corpus.test);
  EXPECT_EQ(t.decode(stream), corpus.test[0].text + "\n" + corpus.test[1].text + "\n");
}

TEST_F(LmTokenizer, KeepsWhitespaceAndFallsBackToBytes) {
  const auto t = load_sentencepiece(trained_->model_path);
  // No normalisation: leading, doubled and trailing spaces, tabs, newlines, characters never
  // seen, characters NFKC would change (the ligature "fi", a full-width A).
  const std::vector<std::string> texts{"  ka  ro\t\tmi \n\n te ",
                                       "\xe2\x82\xac 100 \xf0\x9f\x99\x82",
                                       std::string("nul\0byte", 8), "CAPITALS {}[]~",
                                       "\xef\xac\x81ne \xef\xbc\xa1"};
  for (const auto& text : texts)
    EXPECT_EQ(t.decode(t.encode(text)), text);
  // The documented exceptions: SentencePiece's whitespace mark decodes as a space, and a
  // malformed UTF-8 byte as U+FFFD.
  EXPECT_EQ(t.decode(t.encode("a\xe2\x96\x81" "b")), "a b");
  EXPECT_EQ(t.decode(t.encode("a\xff" "b")), "a\xef\xbf\xbd" "b");
}

TEST_F(LmTokenizer, LearnsFromTheTrainingSplitOnly) {
  const auto t = load_sentencepiece(trained_->model_path);
  const auto corpus = load_corpus(*corpus_);
  ASSERT_EQ(corpus.train[0].text.find(kTestOnlyWord), std::string::npos);
  ASSERT_NE(corpus.test[0].text.find(kTestOnlyWord), std::string::npos);
  EXPECT_GT(t.encode(kTestOnlyWord).size(), 2u);
  // A word as frequent in the training split is one piece.
  EXPECT_EQ(t.encode(kCommonWord).size(), 1u);
}

TEST_F(LmTokenizer, TrainingIsDeterministic) {
  const auto first = read_bytes(trained_->model_path);
  // The same documents in another folder (the path is not part of the model), trained again.
  const auto copy = *root_ / "copy";
  fs::copy(*corpus_, copy);
  const auto again = train_sentencepiece(copy.string(), kVocab);
  EXPECT_EQ(again.sha256, trained_->sha256);
  EXPECT_EQ(read_bytes(again.model_path), first);
  EXPECT_EQ(train_sentencepiece(*corpus_, kVocab).sha256, trained_->sha256);
  EXPECT_EQ(read_bytes(trained_->model_path), first);
}

TEST_F(LmTokenizer, RefusesACorruptOrMismatchingModel) {
  const auto bad = (*root_ / "bad.model").string();
  auto bytes = read_bytes(trained_->model_path);
  bytes[bytes.size() / 2] ^= 0x20;
  write_bytes(bad, bytes);
  write_bytes(bad + ".sha256", trained_->sha256 + "  bad.model\n");
  // Corrupt: its bytes no longer match the recorded checksum (sidecar or checkpoint).
  EXPECT_NE(usage_error_of([&] { load_sentencepiece(bad); }).find("'" + bad + "' has SHA-256"),
            std::string::npos);
  EXPECT_NE(usage_error_of([&] { load_sentencepiece(bad, trained_->sha256); }).find(bad),
            std::string::npos);
  // The right file against another checkpoint's checksum.
  EXPECT_NE(usage_error_of([&] { load_sentencepiece(trained_->model_path, sha256_hex("x")); })
                .find("not the recorded " + sha256_hex("x")),
            std::string::npos);
  // A file that is not a model at all, with a matching checksum.
  write_bytes(bad, "not a model");
  EXPECT_NE(usage_error_of([&] { load_sentencepiece(bad, sha256_hex("not a model")); })
                .find("'" + bad + "' is not a SentencePiece model"),
            std::string::npos);
  // Missing file, missing checksum file.
  EXPECT_NE(usage_error_of([&] { load_sentencepiece(bad + ".none"); }).find("does not exist"),
            std::string::npos);
  fs::remove(bad + ".sha256");
  EXPECT_NE(usage_error_of([&] { load_sentencepiece(bad); }).find("no checksum file"),
            std::string::npos);
  // Ids outside the vocabulary.
  const auto t = load_sentencepiece(trained_->model_path);
  EXPECT_NE(usage_error_of([&] { t.decode({kVocab}); }).find("outside"), std::string::npos);
}

TEST_F(LmTokenizer, RefusesAMissingCorpusOrAVocabularyTooLargeForIt) {
  EXPECT_NE(usage_error_of([&] { train_sentencepiece((*root_ / "none").string(), kVocab); })
                .find("does not exist"),
            std::string::npos);
  const auto message = usage_error_of([&] { train_sentencepiece(*corpus_, 20000); });
  EXPECT_NE(message.find("corpus '" + *corpus_ + "'"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_FALSE(fs::exists(sentencepiece_model_path(*corpus_, 20000)));
  EXPECT_NE(usage_error_of([&] { train_sentencepiece(*corpus_, 0); }), "");
}

TEST(LmTokenizerBytes, IsTheIdentityOnBytes) {
  const auto t = Tokenizer::bytes();
  EXPECT_EQ(t.kind(), TokenizerKind::Bytes);
  EXPECT_EQ(t.vocab_size(), 256);
  EXPECT_EQ(t.identity(), "bytes vocab=256");
  EXPECT_EQ(t.sha256(), "");
  const std::string s = "caf\xc3\xa9 \x01\xff";
  EXPECT_EQ(t.encode(s), (std::vector<int32_t>{99, 97, 102, 0xc3, 0xa9, 32, 1, 255}));
  EXPECT_EQ(t.decode(t.encode(s)), s);
  EXPECT_NE(usage_error_of([&] { t.decode({256}); }), "");
}
