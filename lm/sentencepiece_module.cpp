// Opening libfpa_sentencepiece_module.so and wrapping its C interface as a Tokenizer
// (lm/sentencepiece_module.h).
#include "lm/sentencepiece_module.h"

#include "experiments/usage_error.h"
#include "lm/sentencepiece_module_abi.h"

#include <fmt/format.h>

#include <dlfcn.h>

#include <filesystem>
#include <memory>
#include <mutex>

namespace fs = std::filesystem;

namespace fpa::lm {

namespace {

// The module's functions, resolved once.
struct Module {
  decltype(&fpa_spm_abi_version) abi_version;
  decltype(&fpa_spm_last_error) last_error;
  decltype(&fpa_spm_model_path) model_path;
  decltype(&fpa_spm_train) train;
  decltype(&fpa_spm_load) load;
  decltype(&fpa_spm_free) free;
  decltype(&fpa_spm_describe) describe;
  decltype(&fpa_spm_encode) encode;
  decltype(&fpa_spm_decode) decode;
};

template <class F>
void resolve(void* handle, const char* name, F& f, const std::string& path) {
  f = reinterpret_cast<F>(dlsym(handle, name));
  if (!f)
    throw UsageError(fmt::format("the SentencePiece module '{}' lacks '{}' (rebuild the target "
                                 "fpa_sentencepiece_module)", path, name));
}

Module open_module() {
  const auto path = sentencepiece_module_path();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw UsageError(fmt::format("the SentencePiece module '{}' is missing (build the target "
                                 "fpa_sentencepiece_module; the sentencepiece tokenizer needs it)",
                                 path));
  // DEEPBIND: the module's protobuf references resolve to its own copy, not LibTorch's.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!handle)
    throw UsageError(fmt::format("the SentencePiece module '{}' cannot be loaded: {}", path,
                                 one_line(dlerror())));
  Module m{};
  resolve(handle, "fpa_spm_abi_version", m.abi_version, path);
  if (m.abi_version() != FPA_SPM_ABI_VERSION)
    throw UsageError(fmt::format("the SentencePiece module '{}' has interface version {}, not {} "
                                 "(rebuild it with this program)", path, m.abi_version(),
                                 FPA_SPM_ABI_VERSION));
  resolve(handle, "fpa_spm_last_error", m.last_error, path);
  resolve(handle, "fpa_spm_model_path", m.model_path, path);
  resolve(handle, "fpa_spm_train", m.train, path);
  resolve(handle, "fpa_spm_load", m.load, path);
  resolve(handle, "fpa_spm_free", m.free, path);
  resolve(handle, "fpa_spm_describe", m.describe, path);
  resolve(handle, "fpa_spm_encode", m.encode, path);
  resolve(handle, "fpa_spm_decode", m.decode, path);
  return m;
}

const Module& module() {
  static std::once_flag once;
  static std::unique_ptr<Module> m;
  std::call_once(once, [] { m = std::make_unique<Module>(open_module()); });  // rethrows, retried
  return *m;
}

// A status of the module as the exception the module's code threw.
void check(int status) {
  if (status == kFpaSpmOk) return;
  const std::string what = module().last_error();
  if (status == kFpaSpmBadInput) throw UsageError(what);
  throw std::runtime_error(what);
}

class ModuleModel : public SubwordModel {
 public:
  ModuleModel(void* handle, int64_t vocab_size) : handle_(handle), vocab_size_(vocab_size) {}
  ~ModuleModel() override { module().free(handle_); }
  int64_t vocab_size() const override { return vocab_size_; }
  std::vector<int32_t> encode(const std::string& text) const override {
    const int32_t* ids = nullptr;
    size_t n = 0;
    check(module().encode(handle_, text.data(), text.size(), &ids, &n));
    return {ids, ids + n};
  }
  std::string decode(const std::vector<int32_t>& ids) const override {
    const char* text = nullptr;
    size_t n = 0;
    check(module().decode(handle_, ids.data(), ids.size(), &text, &n));
    return {text, n};
  }

 private:
  void* handle_;
  int64_t vocab_size_;  // asked once: Tokenizer::decode checks every id against it
};

}  // namespace

std::string sentencepiece_module_path() {
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  const auto bin = ec ? fs::current_path() : exe.parent_path();
  return (bin.parent_path() / "lib" / "libfpa_sentencepiece_module.so").string();
}

std::string module_sentencepiece_model_path(const std::string& corpus_dir, int vocab_size) {
  const char* path = nullptr;
  check(module().model_path(corpus_dir.c_str(), vocab_size, &path));
  return path;
}

Tokenizer module_train_sentencepiece(const std::string& corpus_dir, int vocab_size) {
  const char *path = nullptr, *sha = nullptr;
  check(module().train(corpus_dir.c_str(), vocab_size, &path, &sha));
  const std::string model_path = path, sha256 = sha;
  return module_load_sentencepiece(model_path, sha256);
}

Tokenizer module_load_sentencepiece(const std::string& model_path,
                                    const std::string& expected_sha256) {
  void* handle = nullptr;
  check(module().load(model_path.c_str(), expected_sha256.c_str(), &handle));
  int64_t n = 0;
  const char* sha = nullptr;
  if (const int status = module().describe(handle, &n, &sha); status != kFpaSpmOk) {
    module().free(handle);
    check(status);
  }
  return Tokenizer::sentencepiece(std::make_shared<const ModuleModel>(handle, n), sha);
}

}  // namespace fpa::lm
