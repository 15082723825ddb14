// The SentencePiece module's C interface (lm/sentencepiece_module_abi.h) over
// lm/sentencepiece_tokenizer.h. Built only into libfpa_sentencepiece_module.so, never linked with
// LibTorch.
#include "lm/sentencepiece_module_abi.h"

#include "experiments/usage_error.h"
#include "lm/sentencepiece_tokenizer.h"

#include <exception>
#include <string>
#include <vector>

using namespace fpa::lm;

namespace {

// Per thread, so that two threads' results never overwrite each other.
thread_local std::string t_error, t_path, t_sha, t_text;
thread_local std::vector<int32_t> t_ids;

// Runs `f`, turning exceptions into the status codes of the interface.
template <class F>
int guarded(F&& f) {
  try {
    f();
    return kFpaSpmOk;
  } catch (const fpa::UsageError& e) {
    t_error = e.what();
    return kFpaSpmBadInput;
  } catch (const std::exception& e) {
    t_error = e.what();
    return kFpaSpmFailure;
  } catch (...) {
    t_error = "unknown error in the SentencePiece module";
    return kFpaSpmFailure;
  }
}

const Tokenizer& tokenizer_of(void* model) { return *static_cast<const Tokenizer*>(model); }

}  // namespace

extern "C" {

int fpa_spm_abi_version(void) { return FPA_SPM_ABI_VERSION; }

const char* fpa_spm_last_error(void) { return t_error.c_str(); }

int fpa_spm_model_path(const char* corpus_dir, int vocab_size, const char** path) {
  return guarded([&] {
    t_path = sentencepiece_model_path(corpus_dir, vocab_size);
    *path = t_path.c_str();
  });
}

int fpa_spm_train(const char* corpus_dir, int vocab_size, const char** path, const char** sha256) {
  return guarded([&] {
    const auto trained = train_sentencepiece(corpus_dir, vocab_size);
    t_path = trained.model_path;
    t_sha = trained.sha256;
    *path = t_path.c_str();
    *sha256 = t_sha.c_str();
  });
}

int fpa_spm_load(const char* model_path, const char* expected_sha256, void** model) {
  *model = nullptr;
  return guarded([&] { *model = new Tokenizer(load_sentencepiece(model_path, expected_sha256)); });
}

void fpa_spm_free(void* model) { delete static_cast<Tokenizer*>(model); }

int fpa_spm_describe(void* model, int64_t* vocab_size, const char** sha256) {
  return guarded([&] {
    *vocab_size = tokenizer_of(model).vocab_size();
    t_sha = tokenizer_of(model).sha256();
    *sha256 = t_sha.c_str();
  });
}

int fpa_spm_encode(void* model, const char* text, size_t length, const int32_t** ids, size_t* n) {
  return guarded([&] {
    t_ids = tokenizer_of(model).encode(std::string(text, length));
    *ids = t_ids.data();
    *n = t_ids.size();
  });
}

int fpa_spm_decode(void* model, const int32_t* ids, size_t n, const char** text, size_t* length) {
  return guarded([&] {
    t_text = tokenizer_of(model).decode(std::vector<int32_t>(ids, ids + n));
    *text = t_text.data();
    *length = t_text.size();
  });
}

}  // extern "C"
