// Training a SentencePiece model on a corpus's training split (lm/sentencepiece_tokenizer.h).
#include "lm/sentencepiece_tokenizer.h"

#include "experiments/atomic_file.h"
#include "experiments/usage_error.h"
#include "lm/sha256.h"

#include <fmt/format.h>
#include <sentencepiece_trainer.h>

#include <filesystem>
#include <sstream>
#include <unordered_map>
#include <utility>

namespace fs = std::filesystem;

namespace fpa::lm {

namespace {

// SentencePiece 0.1 returns its own util::Status, 0.2 Abseil's absl::Status.
using SentencePieceStatus =
    decltype(std::declval<const sentencepiece::SentenceIterator&>().status());

// The training split's documents, one non-empty line at a time (SentencePiece's "sentences";
// Brown has one sentence per line).
class LineIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(const std::vector<Document>& docs) : docs_(docs) { advance(); }
  bool done() const override { return doc_ >= docs_.size(); }
  void Next() override { advance(); }
  const std::string& value() const override { return line_; }
  SentencePieceStatus status() const override { return {}; }

 private:
  void advance() {
    while (doc_ < docs_.size()) {
      const auto& text = docs_[doc_].text;
      if (pos_ >= text.size()) {
        ++doc_;
        pos_ = 0;
        continue;
      }
      auto end = text.find('\n', pos_);
      if (end == std::string::npos) end = text.size();
      line_ = text.substr(pos_, end - pos_);
      pos_ = end + 1;
      if (!line_.empty()) return;
    }
  }

  const std::vector<Document>& docs_;
  size_t doc_ = 0, pos_ = 0;
  std::string line_;
};

}  // namespace

std::string sentencepiece_model_path(const std::string& corpus_dir, int vocab_size) {
  // Absolute, so that the model lands beside the folder even for "." or "corpus/".
  auto dir = fs::absolute(corpus_dir).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return fmt::format("{}.spm-{}.model", dir, vocab_size);
}

TrainedTokenizer train_sentencepiece(const std::string& corpus_dir, int vocab_size) {
  if (vocab_size < 1)
    throw UsageError(fmt::format("tokenizer vocabulary size {} must be positive", vocab_size));
  const auto corpus = load_corpus(corpus_dir);  // UsageError for a missing or too small corpus
  const std::unordered_map<std::string, std::string> options{
      {"model_type", "unigram"},
      {"vocab_size", std::to_string(vocab_size)},
      // Exact round trip (sentencepiece_tokenizer.h): no NFKC, no whitespace folding, no added
      // leading space; characters without a piece become their bytes instead of <unk>.
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "false"},
      {"byte_fallback", "true"},
      // Determinism (the same corpus and size give the same file, so its SHA-256 names it).
      // input_sentence_size 0: every sentence of the split, no sample (0.1.97's sampler has a
      // fixed seed, but a sample would leave training text out and tie the model to that
      // generator), hence nothing to shuffle. num_threads pinned: the EM step sums expected counts
      // per thread, so the thread count changes the model (1, 2, 4 and 16 threads gave four
      // different models on one input); 1, so that no machine trains a different one. No
      // self-test sample and no differential-privacy noise (both random).
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      {"num_threads", "1"},
      {"self_test_sample_size", "0"},
      {"enable_differential_privacy", "false"},
      // Lines longer than this would be skipped silently (the default is 4192 bytes); a user's
      // files may hold a paragraph per line.
      {"max_sentence_length", std::to_string(1 << 20)},
      {"minloglevel", "1"},  // SentencePiece's progress lines (warnings and errors still print)
  };
  LineIterator lines(corpus.train);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(options, &lines, &model);
  if (!status.ok())
    throw UsageError(fmt::format(
        "corpus '{}': SentencePiece cannot train {} pieces on its {} training documents: {}",
        corpus_dir, vocab_size, corpus.train.size(), one_line(status.ToString())));
  TrainedTokenizer out{sentencepiece_model_path(corpus_dir, vocab_size), sha256_hex(model)};
  // Model first, checksum second: a write cut between the two renames leaves a pair that load()
  // refuses, never a checksum that vouches for a file it was not computed from.
  write_files_atomic({{out.model_path, model},
                      {out.model_path + ".sha256",
                       fmt::format("{}  {}\n", out.sha256,
                                   fs::path(out.model_path).filename().string())}});
  return out;
}

}  // namespace fpa::lm
