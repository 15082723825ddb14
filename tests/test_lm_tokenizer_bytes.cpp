// The tokenizer's bytes kind gives exactly corpus.h's byte tokens (LibTorch, for encode_bytes).
#include "lm/corpus.h"
#include "lm/tokenizer.h"

#include <gtest/gtest.h>

using namespace fpa::lm;

namespace {

std::vector<int32_t> ids_of(const at::Tensor& t) {
  const auto l = t.to(at::kLong).contiguous();
  return {l.data_ptr<int64_t>(), l.data_ptr<int64_t>() + l.numel()};
}

}  // namespace

TEST(LmTokenizerBytes, EqualsTheByteTokensOfCorpusH) {
  const auto t = Tokenizer::bytes();
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte += char(b);
  const std::vector<std::string> texts{"", every_byte, "caf\xc3\xa9 \x01\xff"};
  for (const auto& text : texts) {
    EXPECT_EQ(t.encode(text), ids_of(encode_bytes(text)));
    EXPECT_EQ(t.decode(t.encode(text)), decode_bytes(encode_bytes(text)));
  }
  const std::vector<Document> docs{{"a", "ab"}, {"b", ""}, {"c", every_byte}};
  EXPECT_EQ(t.encode_stream(docs), ids_of(token_stream(docs)));
}
