// attention-bench's study (kernels/bench/attention_bench_study.h) called in-process on tiny
// problems: one row per case in the documented order, the reference only up to its longest n,
// decode rows with their memory rates, and the reference's n x n matrices seen by the meter.
#include "kernels/bench/attention_bench_study.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace fpa;
using namespace fpa::bench;

namespace {

using Row = std::map<std::string, std::string>;

// The table's rows by column name (no cell of this table holds a comma).
std::vector<Row> rows_of(const std::string& csv) {
  std::istringstream in(csv);
  auto split = [](const std::string& line) {
    std::vector<std::string> cells;
    std::istringstream s(line);
    std::string cell;
    while (std::getline(s, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    return cells;
  };
  std::string line;
  std::getline(in, line);
  const auto header = split(line);
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    const auto cells = split(line);
    Row r;
    for (size_t i = 0; i < header.size(); ++i) r[header[i]] = i < cells.size() ? cells[i] : "";
    rows.push_back(r);
  }
  return rows;
}

}  // namespace

TEST(AttentionBenchStudy, TimesEveryCaseOfATinyConfiguration) {
  AttentionBenchSettings s;
  s.lengths = {16, 32};
  s.impls = {Impl::Reference, Impl::Fused};
  s.variants = {Variant::Fpa, Variant::Softmax};
  s.passes = {"fwd", "fwd_bwd", "decode"};
  s.fpa_modes = s.reference_fpa_modes = {FpaBackward::Exact};
  s.head_dim = 8;
  s.heads = 2;
  s.repeats = 1;
  s.warmup = 0;
  s.reference_repeats = 1;
  s.reference_warmup = 0;
  s.max_reference_n = 16;
  s.tile = 16;
  s.out = "unused.csv";  // never committed here
  const auto result = run_attention_bench(s);
  EXPECT_GT(result.matmul_gflops, 0.0);
  EXPECT_GT(result.tile_gemm_gflops, 0.0);
  const auto rows = rows_of(result.table.text());

  // n = 16: 2 variants x 2 impls x 3 passes; n = 32: the fused implementation only.
  ASSERT_EQ(rows.size(), 12u + 6u);
  for (const auto& r : rows) {
    const bool decode = r.at("pass") == "decode", fused = r.at("impl") == "fused";
    EXPECT_TRUE(r.at("impl") == "fused" || r.at("n") == "16") << "reference beyond its longest n";
    EXPECT_EQ(r.at("tile"), fused ? "16" : "0");
    EXPECT_EQ(r.at("fpa_backward"), r.at("variant") == "fpa" ? "exact" : "-");
    EXPECT_EQ(r.at("cache_gbps").empty(), !decode);
    EXPECT_EQ(r.at("read_gbps").empty(), !decode);
    EXPECT_GT(std::stod(r.at("median_ms")), 0.0);
    EXPECT_EQ(r.at("repeats"), "1");
    EXPECT_EQ(r.at("dtype"), "float32");
  }
  // The meter sees the reference's n x n matrices: at least one float32 n x n per head.
  const auto ref_fwd = std::find_if(rows.begin(), rows.end(), [](const Row& r) {
    return r.at("impl") == "reference" && r.at("pass") == "fwd" && r.at("variant") == "fpa";
  });
  ASSERT_NE(ref_fwd, rows.end());
  EXPECT_GE(std::stoll(ref_fwd->at("peak_extra_bytes")), 2 * 16 * 16 * 4);
}

// --device picks where every case runs: on the CPU the cuda implementation is skipped (with a
// note), whether or not this build has it, instead of running its rows on a GPU.
TEST(AttentionBenchStudy, RunsOnlyTheImplementationsOfItsDevice) {
  AttentionBenchSettings s;
  s.lengths = {16};
  s.impls = {Impl::Cuda, Impl::Fused};
  s.variants = {Variant::Fox};
  s.passes = {"fwd"};
  s.head_dim = 8;
  s.heads = 1;
  s.repeats = 1;
  s.warmup = 0;
  s.tile = 16;
  s.out = "unused.csv";
  const auto rows = rows_of(run_attention_bench(s).table.text());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("impl"), "fused");
}
