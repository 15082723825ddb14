// Corpus: tag stripping, the document split, byte tokens, loading a directory (generated text).
#include "lm/corpus.h"
#include "lm/data.h"
#include "test_lm_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace fpa::lm;

TEST(LmCorpus, StripsBrownTagsAtTheLastSlash) {
  const std::string tagged =
      "\n\n\tThe/at jury/nn said/vbd 1/2/cd ``/`` no/at ''/'' ./.\n\n\n"
      "\tIt/pps was/bedz well/rb-hl ./.\n";
  EXPECT_EQ(strip_brown_tags(tagged), "The jury said 1/2 `` no '' .\nIt was well .\n");
}

TEST(LmCorpus, KeepsTokensWithoutTags) {
  EXPECT_EQ(strip_brown_tags("plain words /x y/\n"), "plain words /x y\n");
}

TEST(LmCorpus, SplitRuleIsEveryTenthDocument) {
  std::vector<Document> docs;
  for (int i = 0; i < 30; ++i) docs.push_back({std::to_string(i), "d" + std::to_string(i)});
  const auto c = split_documents(docs);
  ASSERT_EQ(c.train.size(), 24u);
  ASSERT_EQ(c.validation.size(), 3u);
  ASSERT_EQ(c.test.size(), 3u);
  EXPECT_EQ(c.validation[0].name, "8");
  EXPECT_EQ(c.validation[2].name, "28");
  EXPECT_EQ(c.test[1].name, "19");
}

TEST(LmCorpus, LoadsADirectoryInSortedOrderAndSkipsHiddenFiles) {
  const auto dir = fpa::lm::lmtest::make_temp_dir("load");
  for (int i = 19; i >= 0; --i) {  // written in reverse order
    std::ofstream(fs::path(dir) / (std::string(1, char('a' + i)) + ".txt")) << "doc " << i;
  }
  std::ofstream(fs::path(dir) / ".complete") << "stamp";
  const auto c = load_corpus(dir);
  ASSERT_EQ(c.train.size() + c.validation.size() + c.test.size(), 20u);
  EXPECT_EQ(c.train[0].name, "a.txt");
  EXPECT_EQ(c.validation[0].text, "doc 8");
  EXPECT_EQ(c.test[1].text, "doc 19");
  fs::remove_all(dir);
}

TEST(LmCorpus, MissingOrTooSmallDirectoryIsAClearError) {
  EXPECT_THROW(load_corpus("/nonexistent/fpa-corpus"), std::runtime_error);
  const auto dir = fpa::lm::lmtest::make_temp_dir("small");
  std::ofstream(fs::path(dir) / "one.txt") << "x";
  EXPECT_THROW(load_corpus(dir), std::runtime_error);
  fs::remove_all(dir);
}

TEST(LmCorpus, BytesRoundTripAndStreamsSeparateDocuments) {
  const std::string s = "caf\xc3\xa9 \x01\xff";
  const auto t = encode_bytes(s);
  EXPECT_EQ(t.numel(), int64_t(s.size()));
  EXPECT_EQ(t[4].item<int64_t>(), 0xa9);
  EXPECT_EQ(decode_bytes(t), s);
  const auto stream = token_stream({{"a", "ab"}, {"b", "c"}});
  EXPECT_EQ(decode_bytes(stream), "ab\nc\n");
}

TEST(LmCorpus, SamplerStateRestoresTheSameBatches) {
  const auto stream = encode_bytes(std::string(500, 'x') + "abcdefghij").to(at::kByte);
  WindowSampler a(stream, 8, 7);
  a.next_batch(3);
  const auto saved = a.state();
  const auto expected = a.next_batch(5);
  WindowSampler b(stream, 8, 999);
  b.set_state(saved);
  EXPECT_TRUE(b.next_batch(5).equal(expected));
}
