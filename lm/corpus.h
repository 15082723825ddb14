// Byte-level tokens of a corpus (the documents and the split are in documents.h).
//
// Tokens are bytes (vocabulary 256). A split is one byte stream: each document followed by '\n'.
// lm/tokenizer.h's `bytes` kind gives the same ids without LibTorch.
#pragma once

#include "lm/documents.h"

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace fpa::lm {

at::Tensor encode_bytes(const std::string& text);   // int64 (N,)
std::string decode_bytes(const at::Tensor& tokens); // any integer dtype, values in [0, 256)
// The documents of one split as one uint8 stream, each document followed by '\n'.
at::Tensor token_stream(const std::vector<Document>& docs);

}  // namespace fpa::lm
