// Text corpora as documents and the document split (no LibTorch: the tokenizer reads these too;
// the byte-level tokens are in corpus.h).
//
// A corpus is any directory of plain-text documents (regular files, not hidden, read in sorted
// order of file name). The split is by document and fixed: the i-th document in that order
// (0-based) goes to validation when i % 10 == 8, to test when i % 10 == 9, to train otherwise.
// For the Brown corpus (500 documents, named by genre) that is 400/50/50 with every genre in all
// three parts.
#pragma once

#include <string>
#include <vector>

namespace fpa::lm {

struct Document {
  std::string name;
  std::string text;
};

struct Corpus {
  std::vector<Document> train, validation, test;
};

enum class Split { Train, Validation, Test };
Split split_of(size_t index);              // the fixed rule above
std::string to_string(Split s);            // "train", "validation", "test"

// Reads every document of `dir`; throws std::runtime_error naming the problem (missing
// directory, no documents, an unreadable file, too few documents for all three splits).
Corpus load_corpus(const std::string& dir);
Corpus split_documents(std::vector<Document> sorted_documents);

// Brown corpus files: sentences of `word/tag` tokens, one sentence per line, blank lines
// between paragraphs. Returns one sentence per line, tokens joined by single spaces, with each
// token cut at its LAST '/' ("1/2/cd" -> "1/2"); tokens without '/' are kept whole.
std::string strip_brown_tags(const std::string& tagged);
// Converts the Brown files of `raw_dir` (names c[a-r]NN) into `out_dir/<name>.txt`, atomically
// per file. Returns how many documents were written.
int convert_brown(const std::string& raw_dir, const std::string& out_dir);

}  // namespace fpa::lm
