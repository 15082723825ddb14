// The SentencePiece tokenizer for programs that link LibTorch: SentencePiece is opened as a module
// of its own (libfpa_sentencepiece_module.so, lm/sentencepiece_module_abi.h) with
// dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND), so its copy of protobuf never meets LibTorch's
// (linked together, the program crashes before main: lm/sentencepiece_tokenizer.h). DEEPBIND makes
// the module resolve its own symbols first; tests/test_lm_sentencepiece_module.cpp runs it beside
// LibTorch operations.
//
// Where the module is: <folder of the running executable>/../lib/libfpa_sentencepiece_module.so,
// the build's layout (executables in build/bin and build/tests, the module in build/lib). A missing
// or unloadable module is a UsageError (one line naming the path and the target that builds it).
// The module is opened once per process and never closed.
#pragma once

#include "lm/tokenizer.h"

#include <string>

namespace fpa::lm {

std::string sentencepiece_module_path();

// lm/sentencepiece_tokenizer.h's functions, through the module. Both throw UsageError on bad input
// (a missing corpus or model, a mismatching SHA-256, a vocabulary the text cannot fill).
std::string module_sentencepiece_model_path(const std::string& corpus_dir, int vocab_size);
// Trains and saves the model of `corpus_dir` (its training split) and returns it loaded.
Tokenizer module_train_sentencepiece(const std::string& corpus_dir, int vocab_size);
// `expected_sha256` "": the model's .sha256 file must match it.
Tokenizer module_load_sentencepiece(const std::string& model_path,
                                    const std::string& expected_sha256 = "");

}  // namespace fpa::lm
