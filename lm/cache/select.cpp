#include "lm/cache/select.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace fpa::cache {
namespace {

struct Ref {  // 24 bytes (a shared pool ranks every entry of every head); indices < 2^32
  double score;
  int64_t position;
  uint32_t head, index;
};

// Higher score first; among equal scores the more recent key first.
bool better(const Ref& a, const Ref& b) {
  return std::tie(a.score, a.position) > std::tie(b.score, b.position);
}

void push_unmarked(const std::vector<HeadView>& heads, const Scores& score, size_t h,
                   const Keep& keep, std::vector<Ref>& pool) {
  for (size_t e = 0; e < heads[h].position.size(); ++e)
    if (!keep[h][e]) pool.push_back({score[h][e], heads[h].position[e], uint32_t(h), uint32_t(e)});
}

void keep_best(std::vector<Ref>& pool, int64_t cap, Keep& keep) {
  cap = std::max<int64_t>(0, std::min<int64_t>(cap, int64_t(pool.size())));
  std::nth_element(pool.begin(), pool.begin() + cap, pool.end(), better);
  for (int64_t r = 0; r < cap; ++r) keep[pool[size_t(r)].head][pool[size_t(r)].index] = true;
}

}  // namespace

int64_t capacity(double fraction, int64_t entries) {
  return int64_t(std::floor(fraction * double(entries) + 1e-9));
}

int64_t capacity_ahead(double budget, int64_t full, int64_t lookahead, int64_t heads) {
  return capacity(budget, (full + lookahead) * heads) - lookahead * heads;
}

size_t newest(const HeadView& h) {
  if (h.position.empty()) return npos;
  return size_t(std::max_element(h.position.begin(), h.position.end()) - h.position.begin());
}

Keep keep_all(const std::vector<HeadView>& heads, bool value) {
  Keep keep(heads.size());
  for (size_t h = 0; h < heads.size(); ++h) keep[h].assign(heads[h].position.size(), value);
  return keep;
}

void keep_window(const HeadView& h, int64_t sinks, int64_t recent, int64_t query,
                 std::vector<bool>& keep) {
  for (size_t e = 0; e < h.position.size(); ++e) {
    const int64_t p = h.position[e];
    if (p < sinks || p > query - recent) keep[e] = true;
  }
}

void keep_top_shared(const std::vector<HeadView>& heads, const Scores& score, int64_t cap,
                     Keep& keep) {
  std::vector<Ref> pool;
  size_t entries = 0;
  for (const auto& h : heads) entries += h.position.size();
  pool.reserve(entries);
  for (size_t h = 0; h < heads.size(); ++h) push_unmarked(heads, score, h, keep, pool);
  keep_best(pool, cap, keep);
}

void keep_top_per_head(const std::vector<HeadView>& heads, const Scores& score, int64_t cap,
                       Keep& keep) {
  std::vector<Ref> pool;
  for (size_t h = 0; h < heads.size(); ++h) {
    pool.clear();
    push_unmarked(heads, score, h, keep, pool);
    keep_best(pool, cap, keep);
  }
}

Scores scores_of(const std::vector<HeadView>& heads, const std::vector<double> HeadView::*signal) {
  Scores out;
  out.reserve(heads.size());
  for (const auto& h : heads) out.push_back(h.*signal);
  return out;
}

Keep keep_newest_and_top_per_head(const Context& c, const Scores& score, double budget) {
  auto keep = keep_all(c.heads, false);
  keep_newest(c.heads, keep);
  keep_top_per_head(c.heads, score, capacity_ahead(budget, c.query + 1, c.lookahead, 1) - 1, keep);
  return keep;
}

int64_t keep_newest(const std::vector<HeadView>& heads, Keep& keep) {
  int64_t n = 0;
  for (size_t h = 0; h < heads.size(); ++h)
    if (const size_t top = newest(heads[h]); top != npos) { keep[h][top] = true; ++n; }
  return n;
}

int64_t duo_full_heads(double budget, int64_t heads, int64_t final_length,
                       int64_t window_entries) {
  if (final_length <= window_entries) return heads;  // a window head keeps everything anyway
  const double k = (budget * double(heads * final_length) - double(heads * window_entries)) /
                   double(final_length - window_entries);
  return std::clamp<int64_t>(int64_t(std::floor(k + 1e-9)), 0, heads);
}

Keep keep_retrieval_heads(const Context& c, const std::vector<double>& head_score,
                          int64_t full_heads, int64_t sinks, int64_t recent) {
  std::vector<size_t> order(c.heads.size());
  for (size_t h = 0; h < order.size(); ++h) order[h] = h;
  // Highest score first; equal scores in head order (stable).
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return head_score[a] > head_score[b]; });
  auto keep = keep_all(c.heads, false);
  for (size_t r = 0; r < order.size(); ++r) {
    const size_t h = order[r];
    if (int64_t(r) < full_heads) {
      keep[h].assign(keep[h].size(), true);
    } else {
      keep_window(c.heads[h], sinks, std::max<int64_t>(1, recent - c.lookahead), c.query, keep[h]);
    }
  }
  return keep;
}

int64_t marked(const std::vector<bool>& mask) {
  return int64_t(std::count(mask.begin(), mask.end(), true));
}

}  // namespace fpa::cache
