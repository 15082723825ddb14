#include "lm/documents.h"

#include "experiments/atomic_file.h"
#include "experiments/usage_error.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace fpa::lm {

Split split_of(size_t index) {
  switch (index % 10) {
    case 8: return Split::Validation;
    case 9: return Split::Test;
    default: return Split::Train;
  }
}

std::string to_string(Split s) {
  switch (s) {
    case Split::Train: return "train";
    case Split::Validation: return "validation";
    case Split::Test: return "test";
  }
  return "?";
}

namespace {

std::string read_whole(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read '{}'", p.string()));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw std::runtime_error(fmt::format("error reading '{}'", p.string()));
  return s.str();
}

}  // namespace

Corpus split_documents(std::vector<Document> docs) {
  Corpus c;
  for (size_t i = 0; i < docs.size(); ++i) {
    switch (split_of(i)) {
      case Split::Train: c.train.push_back(std::move(docs[i])); break;
      case Split::Validation: c.validation.push_back(std::move(docs[i])); break;
      case Split::Test: c.test.push_back(std::move(docs[i])); break;
    }
  }
  return c;
}

Corpus load_corpus(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw UsageError(fmt::format(
        "corpus directory '{}' does not exist (for Brown run lm/fetch_brown.sh first)", dir));
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (e.is_regular_file() && !name.empty() && name[0] != '.') files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.size() < 10)
    throw UsageError(fmt::format(
        "corpus directory '{}' has {} documents; the split needs at least 10", dir, files.size()));
  std::vector<Document> docs;
  for (const auto& f : files) docs.push_back({f.filename().string(), read_whole(f)});
  auto corpus = split_documents(std::move(docs));
  // An empty split would give a perplexity of 0/0 (nan) instead of an error.
  for (auto [split, part] : {std::pair{Split::Train, &corpus.train},
                             std::pair{Split::Validation, &corpus.validation},
                             std::pair{Split::Test, &corpus.test}}) {
    size_t bytes = 0;
    for (const auto& d : *part) bytes += d.text.size();
    if (bytes == 0)
      throw UsageError(fmt::format("corpus directory '{}': the {} documents are all empty", dir,
                                   to_string(split)));
  }
  return corpus;
}

std::string strip_brown_tags(const std::string& tagged) {
  std::istringstream lines(tagged);
  std::string line, out;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string token, sentence;
    while (words >> token) {
      const auto slash = token.rfind('/');
      const auto word = (slash == std::string::npos || slash == 0) ? token : token.substr(0, slash);
      if (!sentence.empty()) sentence += ' ';
      sentence += word;
    }
    if (!sentence.empty()) out += sentence + '\n';
  }
  return out;
}

int convert_brown(const std::string& raw_dir, const std::string& out_dir) {
  static const std::regex brown_name("c[a-r][0-9][0-9]");
  std::error_code ec;
  if (!fs::is_directory(raw_dir, ec))
    throw UsageError(fmt::format("Brown directory '{}' does not exist", raw_dir));
  int n = 0;
  for (const auto& e : fs::directory_iterator(raw_dir)) {
    const auto name = e.path().filename().string();
    if (!e.is_regular_file() || !std::regex_match(name, brown_name)) continue;
    write_file_atomic((fs::path(out_dir) / (name + ".txt")).string(),
                      strip_brown_tags(read_whole(e.path())));
    ++n;
  }
  if (n == 0) throw UsageError(fmt::format("--raw: no Brown files (c[a-r]NN) in '{}'", raw_dir));
  return n;
}

}  // namespace fpa::lm
