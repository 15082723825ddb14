// Loading a SentencePiece model and using it (training: sentencepiece_train.cpp).
#include "lm/sentencepiece_tokenizer.h"

#include "experiments/usage_error.h"
#include "lm/sha256.h"

#include <fmt/format.h>
#include <sentencepiece_processor.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fpa::lm {

namespace {

class SentencePieceModel : public SubwordModel {
 public:
  explicit SentencePieceModel(std::unique_ptr<sentencepiece::SentencePieceProcessor> p)
      : p_(std::move(p)) {}
  int64_t vocab_size() const override { return p_->GetPieceSize(); }
  std::vector<int32_t> encode(const std::string& text) const override {
    std::vector<int> ids;
    const auto status = p_->Encode(text, &ids);
    if (!status.ok())
      throw std::runtime_error("SentencePiece encode failed: " + one_line(status.ToString()));
    return {ids.begin(), ids.end()};
  }
  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string text;
    const auto status = p_->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
    if (!status.ok())
      throw std::runtime_error("SentencePiece decode failed: " + one_line(status.ToString()));
    return text;
  }

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> p_;
};

std::string read_model(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw UsageError(fmt::format("tokenizer model '{}' does not exist", path));
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  if (!in || s.str().empty())
    throw UsageError(fmt::format("tokenizer model '{}' cannot be read or is empty", path));
  return s.str();
}

// The checksum recorded beside the model: the first word of <model>.sha256.
std::string recorded_sha256(const std::string& model_path) {
  const auto sidecar = model_path + ".sha256";
  std::ifstream in(sidecar);
  std::string sum;
  if (!(in >> sum))
    throw UsageError(fmt::format("tokenizer model '{}' has no checksum file '{}'", model_path,
                                 sidecar));
  return sum;
}

}  // namespace

Tokenizer load_sentencepiece(const std::string& model_path, const std::string& expected_sha256) {
  const auto bytes = read_model(model_path);
  const auto expected = expected_sha256.empty() ? recorded_sha256(model_path) : expected_sha256;
  const auto actual = sha256_hex(bytes);
  if (actual != expected)
    throw UsageError(fmt::format(
        "tokenizer model '{}' has SHA-256 {}, not the recorded {} (changed or corrupt; retrain it "
        "or use the file the checkpoint was trained with)",
        model_path, actual, one_line(expected)));
  auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = processor->LoadFromSerializedProto(bytes);
  if (!status.ok())
    throw UsageError(fmt::format("tokenizer model '{}' is not a SentencePiece model: {}",
                                 model_path, one_line(status.ToString())));
  return Tokenizer::sentencepiece(std::make_shared<SentencePieceModel>(std::move(processor)),
                                  actual);
}

}  // namespace fpa::lm
