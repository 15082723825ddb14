// The `sentencepiece` tokenizer: training a model on a corpus's training split, saving it beside
// the corpus with its checksum, and loading it as a Tokenizer (lm/tokenizer.h).
//
// NOT LINKED WITH LIBTORCH. Debian's libsentencepiece0 (0.1.97) carries its own copy of protobuf
// (3.14.0) and exports its symbols; LibTorch loads libprotobuf.so.32 (3.21.12), whose start-up code
// then calls into SentencePiece's copy: a test linking both died before main (SIGSEGV in
// ReflectionOps::FindInitializationErrors). So fpa_lm_sentencepiece, the one library that links
// SentencePiece, is linked only into torch-free programs. A LibTorch tool takes ids made by such a
// program, or loads SentencePiece as a module of its own: in a scratch program with LibTorch loaded,
// a shared library linking SentencePiece opened with dlopen(RTLD_LOCAL | RTLD_DEEPBIND) trained and
// round-tripped; without RTLD_DEEPBIND it aborted (protobuf's version check, 3.14.0 vs 3.21.12).
//
// A model is one file saved beside its corpus, never inside it (load_corpus would read it as a
// document): <corpus-dir>.spm-<vocab>.model, with <model>.sha256 beside it (`sha256sum` format).
// The SHA-256 names the model: Tokenizer::identity() carries it into checkpoints, and loading
// refuses a file whose bytes differ from the checksum it is given.
//
// Round trip: decode(encode(text)) == text for every valid UTF-8 text that does not contain U+2581
// ("▁", SentencePiece's own whitespace mark, which decodes as a space). No normalisation is
// applied (no NFKC, whitespace kept as it is, no leading space added); characters the model has no
// piece for (newlines, rare symbols) are encoded as their UTF-8 bytes (byte fallback), so nothing
// becomes <unk>. Each malformed UTF-8 byte decodes as U+FFFD.
#pragma once

#include "lm/tokenizer.h"

#include <string>

namespace fpa::lm {

// Loads a SentencePiece model. `expected_sha256` (64 hex digits, from a checkpoint) must equal the
// file's SHA-256; when empty, the checksum in <model_path>.sha256 must. A missing, unreadable,
// corrupt or mismatching file is a UsageError naming it.
Tokenizer load_sentencepiece(const std::string& model_path,
                             const std::string& expected_sha256 = "");

struct TrainedTokenizer {
  std::string model_path;
  std::string sha256;
};

// Where train_sentencepiece saves the model of `corpus_dir` for `vocab_size`.
std::string sentencepiece_model_path(const std::string& corpus_dir, int vocab_size);
// Trains a SentencePiece model (unigram) with `vocab_size` pieces on the training split of
// load_corpus(corpus_dir) only, and writes it and its checksum atomically at
// sentencepiece_model_path(). Deterministic: the same documents and vocabulary size give the same
// bytes. A missing corpus, or a vocabulary the training text cannot fill, is a UsageError.
TrainedTokenizer train_sentencepiece(const std::string& corpus_dir, int vocab_size);

}  // namespace fpa::lm
