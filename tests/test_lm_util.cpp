#include "test_lm_util.h"

#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;

namespace fpa::lm::lmtest {

std::string make_temp_dir(const std::string& tag) {
  auto dir = fs::temp_directory_path() / ("fpa-lm-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string make_corpus(int docs, int words_per_doc, unsigned seed) {
  static const std::vector<std::string> words{"the", "cat", "sat", "on", "a", "mat", "and",
                                              "dog", "ran", "far", ".", ","};
  const auto dir = make_temp_dir("corpus" + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int d = 0; d < docs; ++d) {
    std::ofstream out(fs::path(dir) / ("doc" + std::to_string(100 + d) + ".txt"));
    for (int w = 0; w < words_per_doc; ++w) out << words[rng() % words.size()] << ' ';
  }
  return dir;
}

ModelConfig micro_model(AttentionKind kind) {
  ModelConfig c;
  c.kind = kind;
  c.hidden = 32;
  c.layers = 1;
  c.heads = 2;
  c.context = 16;
  return c;
}

TrainConfig micro_train(int64_t steps) {
  TrainConfig t;
  t.steps = steps;
  t.batch = 4;
  t.warmup = 2;
  t.lr = 3e-3;
  t.val_every = 2;
  t.val_windows = 4;
  t.checkpoint_every = 2;
  return t;
}

}  // namespace fpa::lm::lmtest
