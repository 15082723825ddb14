// The GPU kernels' tile algorithm (kernels/cuda/tile_algorithm.h), run on the CPU tile by tile
// in the GPU's order (tile_simulation.h), against the float64 reference: outputs, the row
// log-sum-exp and the gradients of q, k, v and the gate, for softmax, FoX and FPA (exact and
// straight-through), in float64 (tolerance 1e-10, relative to the largest reference value with
// test_fused_support.h's floor) and float32 (2e-5). Fields with ties (integer walks, plateaus
// spanning tiles, a constant field) make the latest-argmin rule decide the exact gradient; steep
// walks push the soft minimum's weights apart by thousands in log space; offsets of 1e3 and 1e4
// show that the field's level does not enter the rounding. FPA_TILE_VERBOSE=1 prints every case's
// errors.
#include "tile_test_support.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fpa::testing {
namespace {

// Runs one case in float64 and float32 against the reference; returns the worst errors seen.
struct Worst {
  double f64 = 0, f32 = 0;
};
void check_inputs(const Inputs& in, const Shape& s, Mode mode, Gate gate, double offset,
                  Worst& worst) {
  const Result want = run(in, reference_options(mode), at::kDouble);
  const at::Tensor want_lse = reference_lse(in, mode);
  for (auto dtype : {at::kDouble, at::kFloat}) {
    const TileResult got =
        dtype == at::kDouble ? run_tiles<double>(in, mode) : run_tiles<float>(in, mode);
    const Errors e = compare(got.r, want, dtype);
    const double le = lse_error(got.lse, want_lse);
    const double tol = tile_tolerance(dtype);
    EXPECT_LE(e.worst(), tol) << describe(mode, gate, s, dtype, offset) << ": " << e.str();
    EXPECT_LE(le, tol) << describe(mode, gate, s, dtype, offset) << ": lse " << le;
    if (std::getenv("FPA_TILE_VERBOSE"))  // every case's errors
      std::printf("%s: %s lse %.2e\n", describe(mode, gate, s, dtype, offset).c_str(),
                  e.str().c_str(), le);
    double& w = dtype == at::kDouble ? worst.f64 : worst.f32;
    w = std::max({w, e.worst(), le});
  }
}
void check_case(const Shape& s, Mode mode, Gate gate, uint64_t seed, double offset, Worst& worst,
                int64_t dv = 0) {
  Inputs in = make_case(s, mode, gate, seed, offset);
  if (dv > 0) in = with_value_width(in, dv, seed);
  check_inputs(in, s, mode, gate, offset, worst);
}

const std::vector<Shape> kShapes{{1, 1, 1, 16},  {1, 2, 63, 16}, {2, 1, 64, 1},  {1, 1, 65, 64},
                                 {1, 2, 200, 16}, {1, 1, 130, 128}, {1, 1, 513, 16}};

TEST(TileAlgorithm, MatchesReferenceForEveryVariantFieldAndShape) {
  Worst worst;
  uint64_t seed = 100;
  for (Mode mode : {Mode::Softmax, Mode::Fox, Mode::FpaExact, Mode::FpaSoft}) {
    std::vector<Gate> gates{Gate::Random};
    if (mode != Mode::Softmax) gates = {Gate::Random, Gate::Integer, Gate::Flat, Gate::Steep};
    if (mode == Mode::FpaExact || mode == Mode::FpaSoft) {
      gates.push_back(Gate::Plateau);
      gates.push_back(Gate::Constant);
    }
    for (Gate gate : gates)
      for (const Shape& s : kShapes) check_case(s, mode, gate, seed++, 0.0, worst);
  }
  std::printf("worst relative error vs reference: float64 %.3g, float32 %.3g\n", worst.f64,
              worst.f32);
}

// Also values of another width than q and k (dv != d).
TEST(TileAlgorithm, LongSequenceAndWideHeads) {
  Worst worst;
  uint64_t seed = 500;
  for (Mode mode : {Mode::Softmax, Mode::Fox, Mode::FpaExact, Mode::FpaSoft}) {
    const Gate gate = mode == Mode::Softmax ? Gate::Random : Gate::Integer;
    for (const Shape& s : {Shape{1, 1, 513, 64}, Shape{1, 1, 200, 128}})
      check_case(s, mode, gate, seed++, 0.0, worst);
    check_case({2, 1, 100, 16}, mode, gate, seed++, 0.0, worst, /*dv=*/40);  // values wider
    check_case({1, 1, 100, 64}, mode, gate, seed++, 0.0, worst, /*dv=*/8);   // and narrower
  }
  std::printf("worst relative error vs reference: float64 %.3g, float32 %.3g\n", worst.f64,
              worst.f32);
}

// C's split at every level (tile_bias.h): 38 tiles (levels -1 .. 5) of a field with valleys
// (valleys_case), where far pairs' minima lie in C's earlier part for some pairs and in its later
// part for others, so both passes' slots and the finish step's visits of them carry gradient.
TEST(TileAlgorithm, BetweenPartsAtEveryLevel) {
  Worst worst;
  uint64_t seed = 600;
  const Shape s{1, 1, 38 * 64 - 7, 16};
  for (Mode mode : {Mode::FpaExact, Mode::FpaSoft})
    check_inputs(valleys_case(s, mode, seed++), s, mode, Gate::Random, 0.0, worst);
  std::printf("worst relative error vs reference: float64 %.3g, float32 %.3g\n", worst.f64,
              worst.f32);
}

// The soft minimum's weight sums are kept relative to their own minimum (tile_bias.h's SoftSum),
// so a field's level does not enter its exponents: errors at offsets 1e3 and 1e4 are those at 0.
TEST(TileAlgorithm, FieldOffsetsKeepTheErrors) {
  Worst worst;
  uint64_t seed = 700;
  for (Mode mode : {Mode::FpaExact, Mode::FpaSoft})
    for (double offset : {1e3, 1e4, -1e4})
      for (Gate gate : {Gate::Random, Gate::Integer, Gate::Steep})
        check_case({1, 2, 200, 16}, mode, gate, seed++, offset, worst);
  std::printf("worst relative error vs reference: float64 %.3g, float32 %.3g\n", worst.f64,
              worst.f32);
}

// No atomics and fixed summation orders: two runs, the second with every pass's blocks in the
// opposite order, give the same bits.
TEST(TileAlgorithm, RunsAreBitwiseRepeatable) {
  for (Mode mode : {Mode::Softmax, Mode::Fox, Mode::FpaExact, Mode::FpaSoft}) {
    const Inputs in = make_case({2, 2, 200, 16}, mode, Gate::Integer, 900);
    EXPECT_TRUE(same_bits(run_tiles<float>(in, mode), run_tiles<float>(in, mode, true)))
        << name(mode);
    EXPECT_TRUE(same_bits(run_tiles<double>(in, mode), run_tiles<double>(in, mode, true)))
        << name(mode);
  }
}

// A field on a grid of 1/64 is exact in float32 at these levels, and so is the difference of any
// two of its values: the whole float32 run, field gradient included, is the same bit for bit at
// every offset.
TEST(TileAlgorithm, GridFieldGivesTheSameBitsAtEveryOffset) {
  for (Mode mode : {Mode::FpaExact, Mode::FpaSoft}) {
    Inputs in = make_case({1, 2, 200, 16}, mode, Gate::Random, 901);
    const at::Tensor grid = (in.gate * 64).round() / 64;
    in.gate = grid;
    const TileResult base = run_tiles<float>(in, mode);
    for (double offset : {1e3, 1e4, -1e4}) {
      in.gate = grid + offset;
      EXPECT_TRUE(same_bits(run_tiles<float>(in, mode), base)) << name(mode) << " " << offset;
    }
  }
}

// The GPU's field-tile scans by many threads (tile_bias.h: within chunks of kScanChunk, then
// across chunks) give the one-thread scans' values and positions bit for bit: suffix minima of a
// key tile and prefix minima of a query tile, any length up to the tile, fields of few levels
// (many ties, where only the latest position is right) at any offset.
RC_GTEST_PROP(TileAlgorithm, ChunkedMinimumScansEqualTheOneThreadScans, ()) {
  constexpr int kTile = fpa::tiles::kTile;
  const int len = *rc::gen::inRange(1, kTile + 1);
  const int l0 = *rc::gen::inRange(0, 1000) * kTile;
  const float offset = float(*rc::gen::inRange(-1000, 1001));
  const auto levels = *rc::gen::container<std::vector<int>>(size_t(len), rc::gen::inRange(-3, 4));
  float phi[kTile];
  for (int l = 0; l < len; ++l) phi[l] = offset + 0.5f * float(levels[size_t(l)]);
  fpa::tiles::MinAt<float> suffix[kTile], prefix[kTile], suffix_chunk[kTile], prefix_chunk[kTile];
  fpa::tiles::key_tile_suffix_min(phi, l0, len, suffix);
  fpa::tiles::query_tile_prefix_min(phi, l0, len, prefix);
  for (int x = 0; x < len; ++x) {  // step 1 for every position, then step 2
    suffix_chunk[x] = fpa::tiles::key_suffix_min_in_chunk(phi, l0, len, x);
    prefix_chunk[x] = fpa::tiles::query_prefix_min_in_chunk(phi, l0, x);
  }
  for (int x = 0; x < len; ++x) {
    const auto s = fpa::tiles::key_suffix_min_across_chunks(suffix_chunk, len, x);
    const auto p = fpa::tiles::query_prefix_min_across_chunks(prefix_chunk, x);
    RC_ASSERT(s.value == suffix[x].value);
    RC_ASSERT(s.pos == suffix[x].pos);
    RC_ASSERT(p.value == prefix[x].value);
    RC_ASSERT(p.pos == prefix[x].pos);
  }
}

// FoX's scans by chunks (tile_head_scan.h): the chunks cover 0 .. n-1 in order, each position
// once; prefix and suffix sums agree with the one-thread scans in long double to rounding (in
// units of the sum of |x| up to each position, so that cancellation is allowed for); and the
// in-place run (the finish step's) gives the same bits as a run into another array. Lengths
// around multiples of the thread count, so chunks of every length, empty ones included.
RC_GTEST_PROP(TileAlgorithm, HeadScansByChunksEqualTheOneThreadScans, ()) {
  namespace t = fpa::tiles;
  const int64_t n = *rc::gen::oneOf(rc::gen::inRange<int64_t>(0, 3 * t::kHeadScanThreads),
                                    rc::gen::map(rc::gen::inRange(1, 40), [](int m) {
                                      return int64_t(m) * t::kHeadScanThreads - 1 + (m % 3);
                                    }));
  const auto x = *rc::gen::container<std::vector<double>>(
      size_t(n), rc::gen::map(rc::gen::inRange(-100000, 100001),
                              [](int v) { return double(v) / 997.0; }));
  int64_t next = 0;
  for (int c = 0; c < t::kHeadScanThreads; ++c) {
    const t::HeadChunk ch = t::head_chunk(n, c);
    RC_ASSERT(ch.lo == next);
    RC_ASSERT(ch.lo <= ch.hi);
    next = ch.hi;
  }
  RC_ASSERT(next == n);
  for (auto dir : {t::ScanDirection::Prefix, t::ScanDirection::Suffix}) {
    std::vector<double> got(static_cast<size_t>(n)), in_place(x);
    t::scan_head_by_chunks(x.data(), n, dir, got.data());
    t::scan_head_by_chunks(in_place.data(), n, dir, in_place.data());
    RC_ASSERT(std::memcmp(got.data(), in_place.data(), sizeof(double) * size_t(n)) == 0);
    // A sum of m terms in double is off by at most (m - 1) eps times the sum of their |x|; a
    // position's scan adds at most one chunk's terms to at most every chunk's total.
    const int64_t longest = (n + t::kHeadScanThreads - 1) / t::kHeadScanThreads;
    const double bound = double(longest + t::kHeadScanThreads) * DBL_EPSILON;
    long double want = 0, magnitude = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t l = dir == t::ScanDirection::Prefix ? i : n - 1 - i;
      want += x[size_t(l)];
      magnitude += std::fabs(x[size_t(l)]);
      RC_ASSERT(std::fabs(double(got[size_t(l)] - want)) <= bound * double(magnitude));
    }
  }
}

// C's split (tile_bias.h): for tiles a .. b between a tile pair, the level's two parts partition
// C, the earlier depending on a and the level only, the later on b and the level only; and both
// passes' walks (the dQ pass's a falling with b fixed, the dK/dV pass's b rising with a fixed)
// carry exactly those parts: their minima are those of the ranges, on tile minima with ties.
RC_GTEST_PROP(TileAlgorithm, SplitBetweenWalksCarryTheLevelsParts, ()) {
  namespace t = fpa::tiles;
  const int tiles = *rc::gen::inRange(2, 600);
  const auto values = *rc::gen::container<std::vector<int>>(size_t(tiles), rc::gen::inRange(0, 6));
  auto tile_min = [&](int x) { return t::MinAt<float>{float(values[size_t(x)]), x}; };
  auto range_min = [&](int first, int last) {
    t::MinAt<float> m = t::empty_min<float>();
    for (int x = first; x <= last; ++x) m = t::min_latest(m, tile_min(x));
    return m;
  };
  auto check = [&](const t::SplitBetween<float>& s, int a, int b) {
    const int level = t::between_level(a, b);
    RC_ASSERT(s.level == level);
    const int split = t::later_part_first(b, level);
    RC_ASSERT(t::earlier_part_last(a, level) + 1 == split);  // a partition of [a, b]
    RC_ASSERT(a <= split);
    RC_ASSERT(split <= b);
    const auto e = range_min(a, split - 1), l = range_min(split, b);
    RC_ASSERT(s.earlier.min.value == e.value);
    RC_ASSERT(s.earlier.min.pos == e.pos);
    RC_ASSERT(s.later.min.value == l.value);
    RC_ASSERT(s.later.min.pos == l.pos);
  };
  const int b = *rc::gen::inRange(0, tiles);
  t::SplitBetween<float> down = t::empty_split<float>();
  for (int a = b; a >= 0; --a) {
    const bool ends = down.level != t::kNoLevel && down.level != t::between_level(a, b);
    RC_ASSERT(t::level_ends(down, a, b) == ends);
    down = t::split_add_earlier(down, tile_min(a), t::soft_sum_of(0.0f), a, b, 1.0f);
    check(down, a, b);
    if (a < b) RC_ASSERT(t::between_level(a, b) >= t::between_level(a + 1, b));
  }
  const int a = *rc::gen::inRange(0, tiles);
  t::SplitBetween<float> up = t::empty_split<float>();
  for (int bb = a; bb < tiles; ++bb) {
    up = t::split_add_later(up, tile_min(bb), t::soft_sum_of(0.0f), a, bb, 1.0f);
    check(up, a, bb);
  }
}

// The finish step's between_total visits, for tile K, exactly the written slots whose part covers
// K: with every slot's weight sum equal to the tile's (ratio 1), the straight-through total is the
// sum of those slots' values, counted here over every tile pair's two parts; and so does it spread
// over any number of lanes (the finish kernel's threads), each slot visited by one lane.
RC_GTEST_PROP(TileAlgorithm, FinishVisitsTheSlotsCoveringEachTile, ()) {
  namespace t = fpa::tiles;
  const int tiles = *rc::gen::inRange(1, 300);
  const int slots = t::level_slots(tiles);
  const t::SoftSum<float> w = t::soft_sum_of(0.0f);
  std::vector<t::BetweenSlot<float>> later(size_t(tiles * slots), t::empty_slot<float>()),
      earlier(later);
  std::vector<double> want(size_t(tiles), 0.0);
  auto write = [&](t::BetweenSlot<float>& s, int first, int last) {
    if (s.pos >= 0) return;  // one slot per (tile, level), shared by its pairs
    s = t::BetweenSlot<float>{float(*rc::gen::inRange(1, 1000)), first, w};
    for (int k = first; k <= last; ++k) want[size_t(k)] += double(s.sum);
  };
  for (int i = 2; i < tiles; ++i)
    for (int j = 0; j + 2 <= i; ++j) {
      const int a = j + 1, b = i - 1, level = t::between_level(a, b);
      RC_ASSERT(level + 1 < slots);
      write(later[size_t(i * slots + level + 1)], t::later_part_first(b, level), b);
      if (level >= 0)
        write(earlier[size_t(j * slots + level + 1)], a, t::earlier_part_last(a, level));
    }
  const int lanes = *rc::gen::element(1, 2, 7, t::kTile, 300);
  for (int k = 0; k < tiles; ++k) {
    RC_ASSERT(t::between_total(later.data(), earlier.data(), tiles, k, true, w, 1.0f) ==
              want[size_t(k)]);
    RC_ASSERT(t::between_total_by_lanes(later.data(), earlier.data(), tiles, k, true, w, 1.0f,
                                        lanes) == want[size_t(k)]);
  }
}

}  // namespace
}  // namespace fpa::testing
