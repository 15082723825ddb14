#include "lm/passkey/filler.h"

#include "lm/corpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace fpa::passkey {
namespace {

constexpr const char* kCorpusPrefix = "corpus-";

bool is_corpus_filler(const std::string& filler) { return filler.rfind(kCorpusPrefix, 0) == 0; }

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

}  // namespace

void add_filler_options(Cli& cli, const std::vector<std::string>& allowed, bool declare_corpus) {
  cli.add()
      ("filler", po::value<std::string>()->default_value(allowed.front()),
       fmt::format("where the filler comes from: {} (repeated: the classic sentences or "
                   "--filler-file, repeated; corpus-<split>: a passage of that split of --corpus "
                   "per prompt, picked by --seed)", joined(allowed)).c_str())
      ("filler-file", po::value<std::string>()->default_value(""),
       "text repeated as the filler with --filler repeated (default: the classic sentences)");
  if (declare_corpus)
    cli.add()("corpus", po::value<std::string>()->default_value("data/brown/text"),
              "directory of text documents whose split a corpus-<split> filler reads");
  cli.require(
      [allowed](const po::variables_map& vm) {
        const auto f = vm["filler"].as<std::string>();
        return std::find(allowed.begin(), allowed.end(), f) != allowed.end();
      },
      fmt::format("--filler must be one of {}", joined(allowed)));
  cli.require(
      [](const po::variables_map& vm) {
        return !is_corpus_filler(vm["filler"].as<std::string>()) ||
               vm["filler-file"].as<std::string>().empty();
      },
      "--filler-file is the text of --filler repeated; a corpus-<split> filler reads --corpus");
  cli.input("filler-file", PathKind::File);
  cli.input("--corpus of --filler", PathKind::Dir, [](const Cli& c) {
    return is_corpus_filler(c.get<std::string>("filler"))
               ? std::vector<std::string>{c.get<std::string>("corpus")}
               : std::vector<std::string>{};
  });
}

std::string split_filler_text(const std::string& corpus_dir, const std::string& split) {
  const auto corpus = lm::load_corpus(corpus_dir);  // UsageError naming the folder when bad
  const auto& docs = split == "train" ? corpus.train
                     : split == "validation" ? corpus.validation : corpus.test;
  std::string text;
  for (const auto& d : docs) {
    std::istringstream words(d.text);
    for (std::string w; words >> w;) text += w + " ";
  }
  return text;
}

void apply_filler_options(const Cli& cli, PromptConfig& pc) {
  const auto filler = cli.get<std::string>("filler");
  pc.filler_source = filler;
  pc.filler_seed = cli.seed();
  if (is_corpus_filler(filler)) {
    const auto corpus = cli.get<std::string>("corpus");
    if (corpus.empty()) fail_usage(fmt::format("--filler {} needs --corpus", filler));
    try {
      pc.filler = split_filler_text(corpus, filler.substr(std::string(kCorpusPrefix).size()));
    } catch (const std::exception& e) {
      fail_usage(fmt::format("--filler {}: {}", filler, e.what()));
    }
    if (pc.filler.empty()) fail_usage(fmt::format("--filler {}: the split holds no text", filler));
  } else if (!cli.get<std::string>("filler-file").empty()) {
    pc.filler = read_filler_file(cli.get<std::string>("filler-file"));
  }
}

}  // namespace fpa::passkey
