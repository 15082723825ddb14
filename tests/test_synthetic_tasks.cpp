// Task tables, their parser, and the generators' ground truth.
#include "synthetic/generator.h"
#include "synthetic/task.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

namespace syn = fpa::synthetic;

namespace {

// The first-passage condition written out directly (independent of fpa::fpa_bias):
// j is in S_i when j <= i and no position in [j, i] lies below phi_j.
bool first_passage_alive(const at::Tensor& field_row, int64_t i, int64_t j) {
  if (j > i) return false;
  auto f = field_row.accessor<double, 1>();
  for (int64_t l = j; l <= i; ++l)
    if (f[l] < f[j]) return false;
  return true;
}

std::vector<std::vector<int>> target_rows(const syn::Batch& b) {
  std::vector<std::vector<int>> rows;
  const int64_t n = b.types.size(1);
  for (int64_t i = 0; i < n; ++i) {
    rows.emplace_back();
    for (int64_t j = 0; j < n; ++j)
      if (b.targets[0][i][j].item<bool>()) rows.back().push_back(int(j));
  }
  return rows;
}

int type_index(const syn::Task& t, const std::string& name) {
  for (size_t c = 0; c < t.types.size(); ++c)
    if (t.types[c].name == name) return int(c);
  ADD_FAILURE() << "no type " << name;
  return 0;
}

syn::Batch hand_batch(const syn::Task& task, const std::vector<std::string>& names) {
  std::mt19937_64 rng(1);
  const auto table = syn::make_payload_table(4, 3, rng);
  std::vector<int64_t> types, payloads;
  for (size_t t = 0; t < names.size(); ++t) {
    types.push_back(type_index(task, names[t]));
    payloads.push_back(int64_t(t % 4));
  }
  return syn::make_batch(task, table, {types}, {payloads});
}

using Rows = std::vector<std::vector<int>>;

}  // namespace

TEST(SyntheticTasks, ShippedFilesEqualBuiltInTables) {
  for (const auto& name : syn::builtin_task_names()) {
    const auto file = syn::load_task_file(std::string(FPA_SOURCE_DIR) + "/synthetic/tasks/" + name + ".task");
    const auto builtin = syn::builtin_task(name);
    EXPECT_EQ(file.name, name);
    ASSERT_EQ(file.types.size(), builtin.types.size()) << name;
    for (size_t c = 0; c < file.types.size(); ++c) {
      EXPECT_EQ(file.types[c].name, builtin.types[c].name);
      EXPECT_EQ(file.types[c].increment, builtin.types[c].increment);
      EXPECT_EQ(file.types[c].weight, builtin.types[c].weight);
      EXPECT_EQ(file.types[c].min_level, builtin.types[c].min_level);
      EXPECT_EQ(file.types[c].max_level, builtin.types[c].max_level);
      EXPECT_EQ(file.types[c].after, builtin.types[c].after);
    }
  }
}

TEST(SyntheticTasks, ParserReadsConstraintsAndComments) {
  const auto t = syn::parse_task("# c\ntask t  # name\n\ntype a +1.5 2 max_level=3\ntype b -1 1 min_level=-2\n", "x");
  EXPECT_EQ(t.name, "t");
  ASSERT_EQ(t.types.size(), 2u);
  EXPECT_EQ(t.types[0].increment, 1.5);
  EXPECT_EQ(t.types[0].max_level, 3);
  EXPECT_TRUE(std::isinf(t.types[0].min_level));
  EXPECT_EQ(t.types[1].min_level, -2);
}

TEST(SyntheticTasks, ParserRejectsBadFilesWithFileAndLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"task t\ntype a 1\n", "f.task:2: expected `type <name>"},
      {"task t\ntype a x 1\n", "f.task:2: increment of type 'a' is not a finite number: 'x'"},
      {"task t\ntype a 1 0\n", "f.task:2: weight of type 'a' must be a positive number, got '0'"},
      {"task t\ntype a 1 -3\n", "f.task:2: weight of type 'a' must be a positive number"},
      {"task t\ntype a 1 1\n\ntype a 2 1\n", "f.task:4: duplicate type name 'a'"},
      {"task t\ntype a 1 1 depth=3\n", "f.task:2: unknown constraint 'depth'"},
      {"task t\ntype a 1 1 max_level=\n", "f.task:2: expected min_level=<number>"},
      {"task t\ntype a 1 1 min_level=2 max_level=1\n", "f.task:2: type 'a' has min_level > max_level"},
      {"task t\nkind a 1 1\n", "f.task:2: unknown keyword 'kind'"},
      {"task t\ntask u\n", "f.task:2: second `task` line"},
      {"task t\n# nothing\n", "f.task:2: no `type` lines"},
      {"type a 1 1\n", "f.task:1: no `task <name>` line"},
      {"task t\ntype a -1 1 min_level=0\n", "no token type is allowed at the start"},
      {"task t\ntype a 1 1\ntype b 1 1 after=a,c\n", "f.task:3: after= names unknown type 'c'"},
      {"task t\ntype a 1 1 after=a,,b\n", "f.task:2: empty name in 'after=a,,b'"},
      {"task t\ntype a 1 1 after=a\n", "no token type is allowed at the start"},
  };
  for (const auto& [text, expected] : cases) {
    try {
      syn::parse_task(text, "f.task");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const syn::TaskFileError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(expected), std::string::npos) << msg << "\n  expected: " << expected;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
    }
  }
  try {
    syn::load_task_file("/no/such/file.task");
    ADD_FAILURE() << "missing file accepted";
  } catch (const syn::TaskFileError& e) {
    EXPECT_EQ(std::string(e.what()), "/no/such/file.task: cannot read task file");
  }
  EXPECT_THROW(syn::resolve_task("no-such-task"), syn::TaskFileError);
}

TEST(SyntheticTasks, BracketsHandExample) {
  // push push pop filler push pop pop: levels 1 2 1 1 2 1 0
  const auto b = hand_batch(syn::builtin_task("brackets"),
                            {"push", "push", "pop", "filler", "push", "pop", "pop"});
  EXPECT_EQ(target_rows(b), (Rows{{0}, {0, 1}, {0, 2}, {0, 2, 3}, {0, 2, 3, 4}, {0, 2, 3, 5}, {6}}));
}

TEST(SyntheticTasks, DipsHandExample) {
  // up2 down1 flat down2 up1 up2: levels 2 1 1 -1 0 2
  const auto b = hand_batch(syn::builtin_task("dips"), {"up2", "down1", "flat", "down2", "up1", "up2"});
  EXPECT_EQ(target_rows(b), (Rows{{0}, {1}, {1, 2}, {3}, {3, 4}, {3, 4, 5}}));
}

TEST(SyntheticTasks, EraseHandExample) {
  // The first clear erases the stretch 1-2 and keeps the anchor 0; the second erases only the
  // stretch 7 since the anchor 6, which keeps the older content 4-5. Levels: 1 2 2 1 2 2 3 4 3.
  const auto b = hand_batch(syn::builtin_task("erase"), {"anchor", "open", "content", "clear", "open",
                                                          "content", "anchor", "open", "clear"});
  EXPECT_EQ(target_rows(b), (Rows{{0}, {0, 1}, {0, 1, 2}, {0, 3}, {0, 3, 4}, {0, 3, 4, 5},
                                  {0, 3, 4, 5, 6}, {0, 3, 4, 5, 6, 7}, {0, 3, 4, 5, 6, 8}}));
  // y_i is the mean payload over S_i: at i = 3 the payloads of positions 0 and 3.
  std::mt19937_64 rng(1);
  const auto table = syn::make_payload_table(4, 3, rng);
  const auto expect = (table[0] + table[3]) / 2;
  EXPECT_TRUE(at::allclose(b.y[0][3], expect));
}

TEST(SyntheticTasks, TargetSetsAreFirstPassageSetsOfTheField) {
  std::mt19937_64 rng(7);
  for (const auto& name : syn::builtin_task_names()) {
    const auto task = syn::builtin_task(name);
    const auto table = syn::make_payload_table(16, 8, rng);
    const auto b = syn::sample_batch(task, table, 8, 40, rng);
    for (int64_t s = 0; s < 8; ++s) {
      const auto field = b.field[s].contiguous();
      const auto targets = b.targets[s].contiguous();
      auto T = targets.accessor<bool, 2>();
      for (int64_t i = 0; i < 40; ++i) {
        at::Tensor sum = at::zeros({8});
        int count = 0;
        for (int64_t j = 0; j < 40; ++j) {
          const bool alive = first_passage_alive(field, i, j);
          ASSERT_EQ(T[i][j], alive) << name << " seq " << s << " i " << i << " j " << j;
          if (alive) { sum += table[b.payloads[s][j].item<int64_t>()]; ++count; }
        }
        ASSERT_TRUE(at::allclose(b.y[s][i], sum / count, 1e-5, 1e-6)) << name;
      }
    }
  }
}

TEST(SyntheticTasks, GeneratorRespectsConstraintsAndWeights) {
  std::mt19937_64 rng(3);
  const auto table = syn::make_payload_table(16, 8, rng);
  const auto brackets = syn::sample_batch(syn::builtin_task("brackets"), table, 64, 64, rng);
  EXPECT_GE(brackets.field.min().item<double>(), 0.0);
  EXPECT_LE(brackets.field.max().item<double>(), 8.0);
  const auto erase = syn::sample_batch(syn::builtin_task("erase"), table, 128, 128, rng);
  // `after` constraints: open only at the start or after anchor/clear; content and clear only
  // inside a stretch (after open/content).  Types: 0 anchor, 1 open, 2 content, 3 clear.
  const auto et = erase.types.contiguous();
  auto E = et.accessor<int64_t, 2>();
  for (int64_t s = 0; s < 128; ++s)
    for (int64_t t = 0; t < 128; ++t) {
      const int64_t prev = t ? E[s][t - 1] : -1;
      if (E[s][t] == 1) ASSERT_TRUE(prev == -1 || prev == 0 || prev == 3);
      if (E[s][t] == 2 || E[s][t] == 3) ASSERT_TRUE(prev == 1 || prev == 2);
    }
  // The long-run token fractions are anchors 30% and clears 10%; skip the first 32 positions,
  // where the start still matters.
  const auto late = erase.types.slice(1, 32);
  const double total = double(late.numel());
  EXPECT_NEAR((late == 0).sum().item<double>() / total, 0.30, 0.02);
  EXPECT_NEAR((late == 3).sum().item<double>() / total, 0.10, 0.02);
  const auto dips = syn::sample_batch(syn::builtin_task("dips"), table, 256, 64, rng);
  const std::vector<double> w = {0.1, 0.2, 0.3, 0.2, 0.2};
  for (int c = 0; c < 5; ++c)
    EXPECT_NEAR((dips.types == c).sum().item<double>() / double(dips.types.numel()), w[c], 0.02);
  // Same stream, same sequences.
  std::mt19937_64 a(11), b(11);
  EXPECT_TRUE(at::equal(syn::sample_batch(syn::builtin_task("dips"), table, 4, 32, a).types,
                        syn::sample_batch(syn::builtin_task("dips"), table, 4, 32, b).types));
}

TEST(SyntheticTasks, UnsatisfiableConstraintsFailWithAClearMessage) {
  // After one `up`, no type may follow: level 1 allows neither.
  const auto task = syn::parse_task("task stuck\ntype up 1 1 max_level=1\n", "stuck.task");
  std::mt19937_64 rng(0);
  const auto table = syn::make_payload_table(2, 2, rng);
  try {
    syn::sample_batch(task, table, 1, 3, rng);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no token type is allowed at level 1"), std::string::npos);
  }
}
