// Selection helpers the cache policies are built from (lm/cache/policy.h): capacities under a
// budget, the newest key of a head, a window of sinks and recent keys, and keeping the
// top-scoring entries from a shared pool or per head.
#pragma once

#include "lm/cache/policy.h"

#include <cstdint>
#include <vector>

namespace fpa::cache {

// floor(fraction x entries), robust to the rounding of fraction x entries.
int64_t capacity(double fraction, int64_t entries);

// Entries `heads` heads may keep now so that, after `lookahead` more tokens (one entry per head
// each), they still hold at most budget x full at that query: full = i + 1 keys per head.
int64_t capacity_ahead(double budget, int64_t full, int64_t lookahead, int64_t heads);

// Index of a head's newest key (the current token), or npos for an empty head.
constexpr size_t npos = size_t(-1);
size_t newest(const HeadView& h);

// A keep mask of the views' shape, every entry `value`.
Keep keep_all(const std::vector<HeadView>& heads, bool value);

// Marks the first `sinks` positions and the entries of positions > query - recent.
void keep_window(const HeadView& h, int64_t sinks, int64_t recent, int64_t query,
                 std::vector<bool>& keep);

// score[h][e]: higher is kept first; ties go to the more recent key.
using Scores = std::vector<std::vector<double>>;

// Keeps, among the entries not yet marked in `keep`, the `cap` best by score. Shared: one pool
// over all heads; per head: `cap` in every head.
void keep_top_shared(const std::vector<HeadView>& heads, const Scores& score, int64_t cap,
                     Keep& keep);
void keep_top_per_head(const std::vector<HeadView>& heads, const Scores& score, int64_t cap,
                       Keep& keep);

// One vector signal of every view (&HeadView::bias, ::weight, ::mass) as scores.
Scores scores_of(const std::vector<HeadView>& heads, const std::vector<double> HeadView::*signal);

// The common per-head rule: each head keeps its newest key and its best-scoring others, as many
// as the budget allows at the query after the lookahead.
Keep keep_newest_and_top_per_head(const Context& c, const Scores& score, double budget);

// Marks every head's newest key; returns how many were marked.
int64_t keep_newest(const std::vector<HeadView>& heads, Keep& keep);

// DuoAttention's head-level allocation (Xiao et al. 2025): the heads with the highest
// head_score keep every key ("retrieval heads"), the others the first `sinks` positions and the
// last `recent` ("streaming heads"). How many heads keep everything follows from the budget at
// the final length: full_heads x N + (H - full_heads) x (sinks + recent) <= budget x H x N.
int64_t duo_full_heads(double budget, int64_t heads, int64_t final_length, int64_t window_entries);
Keep keep_retrieval_heads(const Context& c, const std::vector<double>& head_score,
                          int64_t full_heads, int64_t sinks, int64_t recent);

// Entries already marked in mask.
int64_t marked(const std::vector<bool>& mask);

}  // namespace fpa::cache
