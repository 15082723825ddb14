#include "csv_writer.h"

#include "atomic_file.h"

#include <stdexcept>

namespace fpa {

CsvWriter::CsvWriter(std::string path, std::vector<std::string> columns)
    : path_(std::move(path)), columns_(std::move(columns)) {}

std::string CsvWriter::escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void CsvWriter::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size())
    throw std::logic_error(fmt::format("CSV {}: row has {} cells, header has {}", path_,
                                       cells.size(), columns_.size()));
  rows_.push_back(std::move(cells));
}

std::string CsvWriter::text() const {
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + cells[i];
    out += '\n';
  };
  line(columns_);
  for (const auto& r : rows_) line(r);
  return out;
}

// Both temporaries are written before either rename (a full disk leaves the old pair); then the
// sidecar first: a run killed between the two renames leaves a sidecar (of this run) next to the
// previous CSV or none, never a CSV without provenance.
void CsvWriter::commit(const Provenance& provenance) {
  write_files_atomic({{path_ + ".json", provenance.to_json()}, {path_, text()}});
}

}  // namespace fpa
