#include "lm/corpus_tokenizer.h"

#include "experiments/usage_error.h"
#include "lm/sentencepiece_module.h"

#include <fmt/format.h>

#include <filesystem>
#include <regex>

namespace fpa::lm {

namespace {

std::vector<int32_t> ids_of(const at::Tensor& t) {
  const auto c = t.to(at::kInt).contiguous();
  const auto* p = c.data_ptr<int32_t>();
  return {p, p + c.numel()};
}

at::Tensor tensor_of(const std::vector<int32_t>& ids, at::ScalarType type) {
  return at::tensor(at::ArrayRef<int32_t>(ids), at::kInt).to(type);
}

}  // namespace

Tokenizer run_tokenizer(TokenizerKind kind, const std::string& corpus_dir, int64_t vocab_size) {
  if (kind == TokenizerKind::Bytes) return Tokenizer::bytes();
  const auto path = module_sentencepiece_model_path(corpus_dir, int(vocab_size));
  std::error_code ec;
  // Reused when saved: training is deterministic, so retraining would give the same file.
  auto t = std::filesystem::exists(path, ec) ? module_load_sentencepiece(path)
                                             : module_train_sentencepiece(corpus_dir, int(vocab_size));
  if (t.vocab_size() != vocab_size)
    throw UsageError(fmt::format("tokenizer model '{}' has {} pieces, the model's vocab-size is {}",
                                 path, t.vocab_size(), vocab_size));
  return t;
}

std::string checkpoint_tokenizer(const Tokenizer& tokenizer) {
  return tokenizer.kind() == TokenizerKind::Bytes ? "" : tokenizer.identity();
}

Tokenizer recorded_tokenizer(const std::string& recorded, const std::string& corpus_dir) {
  if (recorded.empty()) return Tokenizer::bytes();
  std::smatch m;
  static const std::regex kIdentity("sentencepiece vocab=([0-9]{1,9}) sha256=([0-9a-f]{64})");
  if (!std::regex_match(recorded, m, kIdentity))
    throw UsageError(fmt::format("the checkpoint's tokenizer '{}' is not one this build knows",
                                 one_line(recorded)));
  const auto path = module_sentencepiece_model_path(corpus_dir, std::stoi(m[1]));
  try {
    return module_load_sentencepiece(path, m[2]);
  } catch (const UsageError& e) {
    // e.what() names the file and both checksums.
    throw UsageError(fmt::format("the checkpoint's tokenizer (sentencepiece vocab={}): {}",
                                 m[1].str(), e.what()));
  }
}

at::Tensor split_stream(const Tokenizer& tokenizer, const std::vector<Document>& docs) {
  if (tokenizer.kind() == TokenizerKind::Bytes) return token_stream(docs);
  return tensor_of(tokenizer.encode_stream(docs), at::kInt);
}

at::Tensor document_tokens(const Tokenizer& tokenizer, const std::string& text) {
  if (tokenizer.kind() == TokenizerKind::Bytes) return encode_bytes(text + '\n');
  auto ids = tokenizer.encode(text);
  const auto newline = tokenizer.encode("\n");  // as split_stream separates documents
  ids.insert(ids.end(), newline.begin(), newline.end());
  return tensor_of(ids, at::kLong);
}

int64_t predicted_bytes(const Tokenizer& tokenizer, const at::Tensor& ids) {
  if (ids.numel() < 2) return 0;
  if (tokenizer.kind() == TokenizerKind::Bytes) return ids.numel() - 1;
  const auto all = ids_of(ids);
  // The first token's bytes off the whole text's (decoding ids[1..] alone could split a character).
  return int64_t(tokenizer.decode(all).size()) - int64_t(tokenizer.decode({all[0]}).size());
}

}  // namespace fpa::lm
