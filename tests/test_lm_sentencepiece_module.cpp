// The SentencePiece module in a LibTorch process (lm/sentencepiece_module.h, lm/corpus_tokenizer.h):
// LibTorch operations run before and after the module is opened (linked together, the two crash
// before main); a model trained through it round-trips every document, is saved with its checksum,
// is reused, and a changed file is refused; token streams and windows of sub-word ids; the bytes
// kind keeps corpus.h's tensors exactly.
#include "experiments/usage_error.h"
#include "lm/corpus_tokenizer.h"
#include "lm/data.h"
#include "lm/evaluate.h"
#include "lm/model.h"
#include "lm/sentencepiece_module.h"
#include "lm/sha256.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace fpa::lm;

namespace {

constexpr int kVocab = 320;  // 259 ids are <unk>, <s>, </s> and the 256 bytes

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// 20 documents of about 2 KB of words made of syllables, a non-ASCII word among them.
std::string make_corpus(const fs::path& root) {
  static const char* syllables[] = {"ka", "ro", "mi", "te", "sun", "lo", "par", "ve",
                                    "di", "on", "bre", "tu", "shi", "ga", "nel", "po"};
  std::mt19937 rng(11);
  std::vector<std::string> words{"caf\xc3\xa9"};
  for (int w = 0; w < 200; ++w) {
    std::string word;
    for (int s = 1 + rng() % 3; s > 0; --s) word += syllables[rng() % 16];
    words.push_back(word);
  }
  const auto dir = root / "corpus";
  fs::create_directories(dir);
  for (int d = 0; d < 20; ++d) {
    std::ostringstream text;
    while (text.tellp() < 2000) {
      for (int w = 5 + rng() % 8; w > 0; --w) text << words[rng() % words.size()] << ' ';
      text << ".\n";
    }
    std::ofstream(dir / ("doc" + std::to_string(10 + d) + ".txt"), std::ios::binary) << text.str();
  }
  return dir.string();
}

// A LibTorch computation whose answer is known: torch works in this process.
void expect_torch_works() {
  const auto a = torch::arange(6, torch::kFloat).view({2, 3});
  EXPECT_EQ(torch::matmul(a, a.t()).sum().item<float>(), 5.f + 14.f + 14.f + 50.f);
}

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

class LmSentencePieceModule : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    expect_torch_works();  // LibTorch first, as lm-train has it
    root_ = new fs::path(fs::temp_directory_path() /
                         ("fpa-lm-spm-module-" + std::to_string(::getpid())));
    fs::remove_all(*root_);
    corpus_ = new std::string(make_corpus(*root_));
    tokenizer_ = new Tokenizer(run_tokenizer(TokenizerKind::SentencePiece, *corpus_, kVocab));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*root_);
    delete root_;
    delete corpus_;
    delete tokenizer_;
  }
  static std::string model_path() { return *corpus_ + ".spm-" + std::to_string(kVocab) + ".model"; }
  static fs::path* root_;
  static std::string* corpus_;
  static Tokenizer* tokenizer_;
};
fs::path* LmSentencePieceModule::root_ = nullptr;
std::string* LmSentencePieceModule::corpus_ = nullptr;
Tokenizer* LmSentencePieceModule::tokenizer_ = nullptr;

TEST_F(LmSentencePieceModule, ModuleSitsBesideTheExecutablesFolder) {
  // Tests run from build/tests, tools from build/bin: both find build/lib.
  EXPECT_EQ(fs::path(sentencepiece_module_path()).filename(), "libfpa_sentencepiece_module.so");
  EXPECT_EQ(fs::path(sentencepiece_module_path()).parent_path().filename(), "lib");
  EXPECT_TRUE(fs::is_regular_file(sentencepiece_module_path()));
}

TEST_F(LmSentencePieceModule, TorchRunsBesideTheModule) {
  expect_torch_works();
  // A model's forward pass on sub-word windows, with the module open.
  ModelConfig c;
  c.vocab_size = kVocab;
  c.hidden = 32;
  c.layers = 1;
  c.heads = 2;
  c.context = 16;
  torch::manual_seed(0);
  LanguageModel model(c);
  const auto corpus = load_corpus(*corpus_);
  WindowSampler sampler(split_stream(*tokenizer_, corpus.train), c.context + 1, 0);
  const auto loss = model->loss(sampler.next_batch(4)).item<double>();
  EXPECT_NEAR(loss, std::log(double(kVocab)), 0.5);  // an untrained model: about uniform
}

TEST_F(LmSentencePieceModule, SavedWithItsChecksumAndNamedByIt) {
  const auto bytes = read_bytes(model_path());
  const auto sum = sha256_hex(bytes);
  EXPECT_EQ(tokenizer_->sha256(), sum);
  EXPECT_EQ(read_bytes(model_path() + ".sha256"),
            sum + "  corpus.spm-" + std::to_string(kVocab) + ".model\n");
  EXPECT_EQ(tokenizer_->identity(),
            "sentencepiece vocab=" + std::to_string(kVocab) + " sha256=" + sum);
  EXPECT_EQ(checkpoint_tokenizer(*tokenizer_), tokenizer_->identity());
  EXPECT_EQ(checkpoint_tokenizer(Tokenizer::bytes()), "");  // byte-level checkpoints: no key
  EXPECT_EQ(module_sentencepiece_model_path(*corpus_ + "/", kVocab), model_path());
}

TEST_F(LmSentencePieceModule, RoundTripsEveryDocumentOfEverySplit) {
  const auto corpus = load_corpus(*corpus_);
  for (const auto* split : {&corpus.train, &corpus.validation, &corpus.test})
    for (const auto& d : *split) {
      const auto ids = tokenizer_->encode(d.text);
      for (auto id : ids) ASSERT_TRUE(id >= 0 && id < kVocab) << d.name;
      EXPECT_EQ(tokenizer_->decode(ids), d.text) << d.name;
      // Pieces, not bytes (bytes would give at least one id a byte): SentencePiece 0.1.99 gives
      // 0.39-0.40 ids a byte on these documents, 0.2.2 (a different unigram model from the same
      // options) 0.53-0.60.
      EXPECT_LT(ids.size() * 4, d.text.size() * 3) << d.name;
    }
  // The stream: int32 ids, each document followed by the ids of "\n".
  const auto stream = split_stream(*tokenizer_, corpus.test);
  EXPECT_EQ(stream.scalar_type(), at::kInt);
  std::vector<int32_t> ids(stream.data_ptr<int32_t>(), stream.data_ptr<int32_t>() + stream.numel());
  EXPECT_EQ(tokenizer_->decode(ids), corpus.test[0].text + "\n" + corpus.test[1].text + "\n");
  // One document for evaluation, and the bytes its predicted tokens stand for.
  const auto doc = document_tokens(*tokenizer_, corpus.test[0].text);
  EXPECT_EQ(doc.scalar_type(), at::kLong);
  EXPECT_TRUE(doc.equal(stream.narrow(0, 0, doc.numel()).to(at::kLong)));
  const auto first = tokenizer_->decode({int32_t(doc[0].item<int64_t>())});
  EXPECT_EQ(predicted_bytes(*tokenizer_, doc),
            int64_t(corpus.test[0].text.size() + 1 - first.size()));
}

TEST_F(LmSentencePieceModule, SubwordWindowsComeFromTheStream) {
  const auto corpus = load_corpus(*corpus_);
  const auto stream = split_stream(*tokenizer_, corpus.train).to(at::kLong);
  WindowSampler sampler(split_stream(*tokenizer_, corpus.train), 9, 3);
  const auto batch = sampler.next_batch(5);
  for (int64_t b = 0; b < 5; ++b) {
    bool found = false;
    for (int64_t s = 0; s + 9 <= stream.numel() && !found; ++s)
      found = stream.narrow(0, s, 9).equal(batch[b]);
    EXPECT_TRUE(found) << "window " << b;
  }
  EXPECT_GT(batch.max().item<int64_t>(), 255);  // ids beyond a byte survive the sampler
}

TEST_F(LmSentencePieceModule, ReusedWhenSavedAndRefusedWhenChanged) {
  const auto before = fs::last_write_time(model_path());
  const auto again = run_tokenizer(TokenizerKind::SentencePiece, *corpus_, kVocab);
  EXPECT_EQ(again.identity(), tokenizer_->identity());
  EXPECT_EQ(fs::last_write_time(model_path()), before);  // loaded, not retrained
  // What a checkpoint recorded, loaded from beside the corpus.
  EXPECT_EQ(recorded_tokenizer(tokenizer_->identity(), *corpus_).identity(), tokenizer_->identity());
  EXPECT_EQ(recorded_tokenizer("", *corpus_).kind(), TokenizerKind::Bytes);
  // Another checksum than the file's: refused, naming the file.
  const auto other = "sentencepiece vocab=" + std::to_string(kVocab) + " sha256=" + std::string(64, 'a');
  auto why = usage_error_of([&] { recorded_tokenizer(other, *corpus_); });
  EXPECT_NE(why.find(model_path()), std::string::npos) << why;
  EXPECT_NE(why.find("SHA-256"), std::string::npos) << why;
  EXPECT_NE(usage_error_of([&] { recorded_tokenizer("wordpiece vocab=9", *corpus_); }), "");
  // A model for a vocabulary that was never trained: missing.
  why = usage_error_of([&] { recorded_tokenizer("sentencepiece vocab=321 sha256=" + std::string(64, 'a'), *corpus_); });
  EXPECT_NE(why.find("does not exist"), std::string::npos) << why;
  // A changed file no longer matches its .sha256: refused on reuse (restored afterwards).
  const auto bytes = read_bytes(model_path());
  std::ofstream(model_path(), std::ios::binary | std::ios::app) << 'x';
  why = usage_error_of([&] { run_tokenizer(TokenizerKind::SentencePiece, *corpus_, kVocab); });
  std::ofstream(model_path(), std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_NE(why.find("SHA-256"), std::string::npos) << why;
  expect_torch_works();
}

TEST_F(LmSentencePieceModule, TooLargeAVocabularyIsBadInput) {
  const auto why = usage_error_of([&] { run_tokenizer(TokenizerKind::SentencePiece, *corpus_, 50277); });
  EXPECT_NE(why.find("Vocabulary size too high"), std::string::npos) << why;
}

TEST(LmCorpusTokenizerBytes, KeepsCorpusTensorsExactly) {
  const std::vector<Document> docs{{"a", "ab\xc3\xa9"}, {"b", "c"}};
  const auto bytes = Tokenizer::bytes();
  const auto stream = split_stream(bytes, docs);
  EXPECT_EQ(stream.scalar_type(), at::kByte);
  EXPECT_TRUE(stream.equal(token_stream(docs)));
  EXPECT_TRUE(document_tokens(bytes, "ab").equal(encode_bytes("ab\n")));
  EXPECT_EQ(predicted_bytes(bytes, encode_bytes("ab\n")), 2);
}
