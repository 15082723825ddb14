// Tokenizers of the language models: `bytes` (ids 0..255, exactly corpus.h's byte tokens) and
// `sentencepiece` (a sub-word model trained with SentencePiece on a corpus's training split, for
// presets with a larger vocabulary such as `paper`; trained and loaded by
// lm/sentencepiece_tokenizer.h). No LibTorch and no SentencePiece here: ids are plain vectors,
// and a sub-word model is reached through SubwordModel.
//
// identity() is the one line a checkpoint records: it names the kind, the vocabulary size and,
// for a trained model, the SHA-256 of its file, so ids are never read with another tokenizer.
#pragma once

#include "lm/documents.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fpa::lm {

enum class TokenizerKind { Bytes, SentencePiece };
std::string to_string(TokenizerKind kind);                   // "bytes", "sentencepiece"
TokenizerKind parse_tokenizer_kind(const std::string& name);  // throws std::invalid_argument

// A trained sub-word model: ids in [0, vocab_size()).
class SubwordModel {
 public:
  virtual ~SubwordModel() = default;
  virtual int64_t vocab_size() const = 0;
  virtual std::vector<int32_t> encode(const std::string& text) const = 0;
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
};

class Tokenizer {
 public:
  static Tokenizer bytes();
  // A SentencePiece model whose file has SHA-256 `sha256` (lm/sentencepiece_tokenizer.h).
  static Tokenizer sentencepiece(std::shared_ptr<const SubwordModel> model, std::string sha256);

  TokenizerKind kind() const { return kind_; }
  int64_t vocab_size() const;
  // Empty for the bytes kind.
  const std::string& sha256() const { return sha256_; }
  // One line for checkpoints: "bytes vocab=256" or "sentencepiece vocab=<n> sha256=<hex>".
  std::string identity() const;

  std::vector<int32_t> encode(const std::string& text) const;
  // Ids outside [0, vocab_size()) are a UsageError.
  std::string decode(const std::vector<int32_t>& ids) const;
  // The documents of one split as one stream, each document followed by the ids of "\n" (the
  // bytes kind gives corpus.h's token_stream).
  std::vector<int32_t> encode_stream(const std::vector<Document>& docs) const;

 private:
  TokenizerKind kind_ = TokenizerKind::Bytes;
  std::string sha256_;
  std::shared_ptr<const SubwordModel> model_;  // sentencepiece kind
};

}  // namespace fpa::lm
