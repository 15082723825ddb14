// The plain C interface of the SentencePiece module (libfpa_sentencepiece_module.so), the one way
// a LibTorch program reaches SentencePiece: the two carry clashing copies of protobuf and cannot
// be linked into one program (lm/sentencepiece_tokenizer.h), so the module is opened with
// dlopen(RTLD_LOCAL | RTLD_DEEPBIND) by lm/sentencepiece_module.cpp. C types only: no C++ object
// or exception crosses the boundary.
//
// Every function returns kFpaSpmOk, kFpaSpmBadInput (a UsageError inside: a missing corpus, a
// mismatching checksum, a vocabulary the text cannot fill) or kFpaSpmFailure; after a failure
// fpa_spm_last_error() is its one-line message. Returned strings and arrays belong to the module
// and stay valid on the calling thread until its next call.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { kFpaSpmOk = 0, kFpaSpmFailure = 1, kFpaSpmBadInput = 2 };
// Bumped when a signature below changes; the wrapper refuses a module of another version.
#define FPA_SPM_ABI_VERSION 1

int fpa_spm_abi_version(void);
const char* fpa_spm_last_error(void);
// Where fpa_spm_train saves the model of `corpus_dir` for `vocab_size`.
int fpa_spm_model_path(const char* corpus_dir, int vocab_size, const char** path);
// Trains on the corpus's training split and saves the model and its .sha256 beside the corpus.
int fpa_spm_train(const char* corpus_dir, int vocab_size, const char** path, const char** sha256);
// Loads a model whose SHA-256 must equal `expected_sha256`, or, when that is "", its .sha256 file's.
int fpa_spm_load(const char* model_path, const char* expected_sha256, void** model);
void fpa_spm_free(void* model);
int fpa_spm_describe(void* model, int64_t* vocab_size, const char** sha256);
int fpa_spm_encode(void* model, const char* text, size_t length, const int32_t** ids, size_t* n);
int fpa_spm_decode(void* model, const int32_t* ids, size_t n, const char** text, size_t* length);

#ifdef __cplusplus
}
#endif
