#include "lm/tokenizer.h"

#include "experiments/usage_error.h"

#include <fmt/format.h>

#include <stdexcept>

namespace fpa::lm {

namespace {
constexpr int64_t kByteVocab = 256;
}

std::string to_string(TokenizerKind kind) {
  return kind == TokenizerKind::Bytes ? "bytes" : "sentencepiece";
}

TokenizerKind parse_tokenizer_kind(const std::string& name) {
  if (name == "bytes") return TokenizerKind::Bytes;
  if (name == "sentencepiece") return TokenizerKind::SentencePiece;
  throw std::invalid_argument(fmt::format("unknown tokenizer '{}' (bytes, sentencepiece)", name));
}

Tokenizer Tokenizer::bytes() { return Tokenizer(); }

Tokenizer Tokenizer::sentencepiece(std::shared_ptr<const SubwordModel> model, std::string sha256) {
  Tokenizer t;
  t.kind_ = TokenizerKind::SentencePiece;
  t.model_ = std::move(model);
  t.sha256_ = std::move(sha256);
  return t;
}

int64_t Tokenizer::vocab_size() const {
  return kind_ == TokenizerKind::Bytes ? kByteVocab : model_->vocab_size();
}

std::string Tokenizer::identity() const {
  if (kind_ == TokenizerKind::Bytes) return fmt::format("bytes vocab={}", kByteVocab);
  return fmt::format("sentencepiece vocab={} sha256={}", vocab_size(), sha256_);
}

std::vector<int32_t> Tokenizer::encode(const std::string& text) const {
  if (kind_ != TokenizerKind::Bytes) return model_->encode(text);
  std::vector<int32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  for (auto id : ids)
    if (id < 0 || id >= vocab_size())
      throw UsageError(fmt::format("token id {} is outside the tokenizer's vocabulary ({})", id,
                                   identity()));
  if (kind_ != TokenizerKind::Bytes) return model_->decode(ids);
  std::string text(ids.size(), '\0');
  for (size_t i = 0; i < ids.size(); ++i) text[i] = static_cast<char>(ids[i]);
  return text;
}

std::vector<int32_t> Tokenizer::encode_stream(const std::vector<Document>& docs) const {
  const auto separator = encode("\n");
  std::vector<int32_t> stream;
  for (const auto& d : docs) {
    const auto ids = encode(d.text);
    stream.insert(stream.end(), ids.begin(), ids.end());
    stream.insert(stream.end(), separator.begin(), separator.end());
  }
  return stream;
}

}  // namespace fpa::lm
