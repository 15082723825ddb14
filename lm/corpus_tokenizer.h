// The tokenizer of a run and a corpus's token ids as tensors (LibTorch).
//
// Training (lm-train): the bytes kind, or the corpus's SentencePiece model of `vocab_size` pieces,
// trained on the training split on first use and reused afterwards (checked against its .sha256
// file), through lm/sentencepiece_module.h. Evaluation: the tokenizer a checkpoint records, found
// beside the corpus it is given and checked against the recorded SHA-256.
//
// The bytes kind keeps exactly corpus.h's tensors (uint8 streams, encode_bytes), so byte-level
// runs are bit-identical to the runs made before this file; sub-word ids are int32 streams.
#pragma once

#include "lm/corpus.h"
#include "lm/tokenizer.h"

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace fpa::lm {

// Throws UsageError: a missing module, a vocabulary the training text cannot fill, a model file
// that differs from its checksum, a vocabulary other than `vocab_size`.
Tokenizer run_tokenizer(TokenizerKind kind, const std::string& corpus_dir, int64_t vocab_size);

// What a checkpoint stores under its `tokenizer` key: the identity line for sentencepiece, ""
// (no key) for bytes, so byte-level checkpoints are written as before.
std::string checkpoint_tokenizer(const Tokenizer& tokenizer);
// The tokenizer a checkpoint recorded ("": bytes, as every checkpoint before sub-word tokens),
// loaded from beside `corpus_dir`. A missing or mismatching model file is a UsageError naming it.
Tokenizer recorded_tokenizer(const std::string& recorded, const std::string& corpus_dir);

// The documents of a split as one stream, each followed by the ids of "\n" (bytes: token_stream).
at::Tensor split_stream(const Tokenizer& tokenizer, const std::vector<Document>& docs);
// One document and its "\n" as int64 ids (bytes: encode_bytes(text + '\n')).
at::Tensor document_tokens(const Tokenizer& tokenizer, const std::string& text);
// The UTF-8 bytes ids[1..] stand for (the predicted tokens of a document that starts at ids[0]):
// bits per byte divides by these.
int64_t predicted_bytes(const Tokenizer& tokenizer, const at::Tensor& ids);

}  // namespace fpa::lm
