// FoX's two scans along a head's positions, in double, by chunks, so that a block of
// kHeadScanThreads threads runs them in parallel in one fixed order (the same bits on the GPU, in
// the emulation and in the CPU tile run):
//
//   prefix   F_l = sum_{s <= l} log f_s        (before the forward and the backward: the bias)
//   suffix   d log f_t = sum_{s >= t} dF_s     (the finish step of the backward)
//
// Thread c owns chunk c, [c * len, min(n, (c + 1) * len)) with len = ceil(n / kHeadScanThreads):
//   1. chunk_total: it sums its chunk (prefix: in index order; suffix: from the chunk's end);
//   2. chunk_offsets: one thread turns the totals into each chunk's offset (prefix: the totals
//      before it, in chunk order; suffix: the totals after it, from the last chunk);
//   3. chunk_scan: it walks its chunk again from that offset.
// One thread per head walking all n positions was latency-bound: at batch x heads = 16 and
// n = 16,384 it was 16 threads on the whole GPU, 16,384 dependent steps each, twice per backward.
// Here one block per head runs it, and a thread's longest chain is 2 len + kHeadScanThreads steps.
// scan_head_by_chunks runs the same three steps one chunk after another: the CPU's order.
#pragma once

#include "kernels/cuda/tile_config.h"

namespace fpa::tiles {

constexpr int kHeadScanThreads = 256;  // threads (and chunks) per head

enum class ScanDirection { Prefix, Suffix };

struct HeadChunk {
  int64_t lo, hi;  // [lo, hi), empty when lo == hi
};
FPA_HD HeadChunk head_chunk(int64_t n, int c) {
  const int64_t len = (n + kHeadScanThreads - 1) / kHeadScanThreads;
  const int64_t lo = t_min(n, int64_t(c) * len);
  return HeadChunk{lo, t_min(n, lo + len)};
}

// 1. The sum of x over the chunk, in the scan's direction.
template <class X> FPA_HD double chunk_total(const X* x, HeadChunk ch, ScanDirection dir) {
  double s = 0;
  if (dir == ScanDirection::Prefix) {
    for (int64_t l = ch.lo; l < ch.hi; ++l) s += double(x[l]);
  } else {
    for (int64_t l = ch.hi - 1; l >= ch.lo; --l) s += double(x[l]);
  }
  return s;
}

// 2. In place: the kHeadScanThreads chunk totals become each chunk's offset, the sum of the chunks
// the scan passes before reaching it.
FPA_HD void chunk_offsets(double* totals, ScanDirection dir) {
  double s = 0;
  for (int i = 0; i < kHeadScanThreads; ++i) {
    const int c = dir == ScanDirection::Prefix ? i : kHeadScanThreads - 1 - i;
    const double total = totals[c];
    totals[c] = s;
    s += total;
  }
}

// 3. out = the scan of x over the chunk, starting from its offset (out may be x).
template <class X>
FPA_HD void chunk_scan(const X* x, HeadChunk ch, double offset, ScanDirection dir, double* out) {
  double s = offset;
  if (dir == ScanDirection::Prefix) {
    for (int64_t l = ch.lo; l < ch.hi; ++l) out[l] = s += double(x[l]);
  } else {
    for (int64_t l = ch.hi - 1; l >= ch.lo; --l) out[l] = s += double(x[l]);
  }
}

// The three steps, one chunk after another (the CPU tile run's version of a block's scan).
template <class X> inline void scan_head_by_chunks(const X* x, int64_t n, ScanDirection dir,
                                              double* out) {
  double offsets[kHeadScanThreads];
  for (int c = 0; c < kHeadScanThreads; ++c) offsets[c] = chunk_total(x, head_chunk(n, c), dir);
  chunk_offsets(offsets, dir);
  for (int c = 0; c < kHeadScanThreads; ++c) chunk_scan(x, head_chunk(n, c), offsets[c], dir, out);
}

}  // namespace fpa::tiles
