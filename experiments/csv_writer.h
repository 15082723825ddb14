// A results table written atomically, with its provenance beside it.
//
// Rows are collected in memory; commit() writes <path>.json with the Provenance (configuration,
// seed, code version, wall time) and <path>, each to a temporary file (both in full, every write
// checked), then renames them, the sidecar first: an interrupted run never leaves a CSV without
// one, nor a half-written CSV, and a full disk leaves the old pair.
#pragma once

#include "provenance.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace fpa {

class CsvWriter {
 public:
  CsvWriter(std::string path, std::vector<std::string> columns);

  // One row, one cell per column, formatted with fmt ("{}": shortest round-trip for doubles).
  template <class... Cells>
  void row(const Cells&... cells) {
    add_row({cell(cells)...});
  }
  void add_row(std::vector<std::string> cells);

  void commit(const Provenance& provenance);  // sidecar, then CSV, both atomically

  const std::string& path() const { return path_; }
  size_t rows() const { return rows_.size(); }
  std::string text() const;

 private:
  template <class T>
  static std::string cell(const T& x) { return escape(fmt::format("{}", x)); }
  static std::string escape(const std::string& s);

  std::string path_;
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace fpa
