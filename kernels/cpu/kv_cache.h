// Cached attention for decoding: fpa::KvCache holds one layer's keys and values per head, and
// fpa::attention_step appends new tokens to it and attends over what it keeps.
//
// Shapes and dtypes (H = heads, T = new tokens, D = head dimension, Dv = value dimension):
//   q, k : (H, T, D), v : (H, T, Dv), float32 or float64 (the cache's dtype), on the cache's device
//   gate : (H, T), the dtype of q, in fpa::attention's convention for the new positions:
//            Softmax: ignored (undefined);  FoX: log forget gates log f_t <= 0;
//            FPA: the field phi_t itself; continue the walk from last_level() (levels of
//            one sequence must share one origin; the bias ignores a common constant).
//   returns (H, T, Dv): new token t attends to every key its head keeps plus new keys <= t.
// Logits are scale * q . k_j + b_ij with the variant's bias, exactly as fpa::attention's:
// decoding token by token with nothing evicted equals the full operator, and with evictions it
// equals the full operator restricted to the kept keys (tests/test_kv_cache.cpp).
//
// Ragged heads: each head keeps its own number of entries (keep() per head); attention for a
// head reads only its entries. Storage grows by doubling, so appending costs O(T) amortised.
//
// The carried path minimum (FPA): a key j keeps its level phi_j and m_j = min_{j<=l<=i} phi_l
// over every token appended so far, evicted ones included; appending phi_t sets
// m_j <- min(m_j, phi_t). So b_ij = m_j - phi_j needs no history: a dropped token's level
// still counts through the m_j of the keys before it. m_j does not decrease with j, so it is
// kept as runs of equal values (fused::MinRun): appending merges the runs at or above phi_t,
// O(1) amortised instead of a write to every key. FoX keeps F_j = sum_{l<=j} log f_l and
// the running F_i, b_ij = F_i - F_j. Both are kept in double, as the fused kernels keep FoX's
// prefix. Tokens of a chunk are appended and attended one at a time, so m_j always refers to
// the query being computed.
//
// Two storages, one state. A cache on the CPU (the default) keeps its keys and values in host
// memory and attends with the raw-pointer kernels above (fused_decode.h); this path is what the
// published CSVs were computed with and is unchanged. A cache built with a device other than the
// CPU, or with tensor_ops = true on the CPU (how tests exercise it without a GPU), keeps the keys,
// values and (while tracked) the accumulated mass as tensors on that device and attends with
// tensor ops there: per token, scores = K q * scale + bias over every head at once (heads padded
// to the longest, padding at -inf), softmax, weights . V. The small per-key metadata (positions,
// levels, FPA's runs of m_j, FoX's F_j) stays on the host in both, so keep(), views()' positions
// and biases and the policies are the same code; the tensor path copies the gate (H numbers) to
// the host and the bias (H x longest) to the device once per token and layer
// (kernels/README.md, "KV-cache decoding on a device").
#pragma once

#include "kernels/attention.h"
#include "kernels/cache_view.h"
#include "kernels/cpu/fused_decode.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace fpa {

class KvCache {
 public:
  KvCache(Variant variant, int64_t heads, int64_t head_dim, int64_t value_dim,
          at::ScalarType dtype, at::Device device = at::kCPU, bool tensor_ops = false);
  // Moved, never copied: a copy would share the key and value storage.
  KvCache(KvCache&&) = default;
  KvCache& operator=(KvCache&&) = default;
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  Variant variant() const { return variant_; }
  int64_t heads() const { return heads_; }
  int64_t head_dim() const { return d_; }
  int64_t value_dim() const { return dv_; }
  at::ScalarType dtype() const { return dtype_; }
  at::Device device() const { return device_; }
  // Whether keys and values are tensors attended with tensor ops (any device but the CPU, or
  // tensor_ops on the CPU); false: the raw-pointer path of the CPU.
  bool tensor_path() const { return tensor_path_; }
  int64_t max_size() const;  // the most entries any head keeps
  int64_t length() const { return length_; }            // tokens appended: the next position
  int64_t size(int64_t h) const { return size_[size_t(h)]; }  // entries head h keeps
  int64_t entries() const;                               // over all heads

  // FPA: phi of the last token; FoX: F of the last token; 0 before any token or for softmax.
  double last_level(int64_t h) const { return last_level_[size_t(h)]; }
  at::Tensor last_levels() const;  // (H) float64

  // One token for every head: k (H x D) and v (H x Dv) contiguous rows of the cache's dtype
  // (raw memory: a step makes no tensor op per token); gate[h * gate_stride] as in the header
  // comment (ignored for softmax).
  void append(const void* k, const void* v, const double* gate, int64_t gate_stride);
  void set_last_query(const void* q, double scale);  // q (H x D), for views()' R
  // The query just attended (q: H x D): set_last_query, then, while mass is tracked, every
  // kept key's weight at this query added to its accumulated mass (H2O's signal; O(entries x D)
  // per query, paid only by callers that track). attention_step calls it after every token.
  void observe_query(const void* q, double scale);
  void track_mass(bool on);      // start (zeroed) or stop accumulating attention mass
  bool tracks_mass() const { return tracks_mass_; }
  void reset_mass();             // every kept key's accumulated mass back to 0

  // The tensor path (tensor_path()): one token for every head, k (H x D) and v (H x Dv) tensors
  // on the cache's device, gate as in append(); then attend_rows attends the query q (H x D) over
  // every head's entries with tensor ops and returns (H x Dv), recording q for views() and
  // adding the weights to the mass while tracked (observe_query's role).
  void append_rows(const at::Tensor& k, const at::Tensor& v, const double* gate,
                   int64_t gate_stride);
  at::Tensor attend_rows(const at::Tensor& q, double scale);
  // Every head's bias at the last query as a (H x max_size()) tensor of `dtype` on the cache's
  // device, -inf past each head's entries.
  at::Tensor bias_rows(at::ScalarType dtype) const;

  // Keeps, for each head h, the entries kept[h] (ascending indices into its current entries).
  void keep(const std::vector<std::vector<int64_t>>& kept);
  // Per head: positions, bias at the last query and the optional signals asked for
  // (kernels/cache_view.h): R, weights at the last query, key norms (a pass over every key
  // each), and the accumulated mass (only while tracked).
  std::vector<CacheHeadView> views(const CacheSignals& signals) const;
  std::vector<CacheHeadView> views(bool with_r = true) const;  // views({r = with_r})
  void clear();

  // Head h's storage, for the implementations: keys (size x D) and values (size x Dv) rows,
  // positions, and the per-key levels (FPA: phi_j, with m_j in bias_source's runs; FoX: F_j).
  const void* keys(int64_t h) const;
  const void* values(int64_t h) const;
  const std::vector<int64_t>& positions(int64_t h) const { return pos_[size_t(h)]; }
  const std::vector<double>& levels(int64_t h) const { return level_[size_t(h)]; }
  at::Tensor keys_tensor(int64_t h) const;    // (size, D) view of the storage
  at::Tensor values_tensor(int64_t h) const;  // (size, Dv)
  // Where head h's biases b_ij at the last query come from (the formula in the header
  // comment), for the kernels and views(): valid until the cache next changes.
  fused::DecodeBias bias_source(int64_t h) const;

 private:
  void reserve(int64_t need);
  void append_level(int64_t h, double gate_value);  // metadata of one appended entry, both paths
  std::vector<CacheHeadView> tensor_views(const CacheSignals& signals) const;
  // Head h's positions and biases at the last query, from the host metadata (both paths' views).
  void fill_positions_and_bias(int64_t h, CacheHeadView& view) const;

  Variant variant_;
  int64_t heads_, d_, dv_;
  at::ScalarType dtype_;
  at::Device device_;
  bool tensor_path_;
  at::Tensor last_q_rows_;  // tensor path: the last query (H, D) on the device
  at::Tensor mass_rows_;    // tensor path: accumulated mass (H, capacity) float64, while tracked
  int64_t length_ = 0, capacity_ = 0;
  at::Tensor k_, v_;             // (H, capacity, D), (H, capacity, Dv)
  std::vector<double> last_q_;   // (H x D), empty before the first query
  double scale_ = 1.0;
  std::vector<int64_t> size_;
  std::vector<std::vector<int64_t>> pos_;
  std::vector<std::vector<double>> level_;
  std::vector<std::vector<fused::MinRun>> min_runs_;  // FPA: m_j as runs (fused_decode.h)
  // FPA: m_j per entry as of the last keep(), valid below dense_end_ (appends lower it to the
  // first entry whose run they merged).
  std::vector<std::vector<double>> dense_min_;
  std::vector<std::vector<float>> dense_bias_;  // float32 caches: float(m_j - phi_j) there
  std::vector<int64_t> dense_end_;
  struct {  // keep()'s buffers for the next head's runs and arrays
    std::vector<fused::MinRun> runs;
    std::vector<double> dense;
    std::vector<float> dense_bias;
  } spare_;
  std::vector<double> last_level_;
  bool tracks_mass_ = false;
  std::vector<std::vector<double>> mass_;  // per head and entry, while tracked
  std::vector<double> weights_;            // observe_query's scratch
  // Head h's softmax weights at the last query (scale q . k_j + b_ij), into `out`.
  void last_weights(int64_t h, std::vector<double>& out) const;
};

// Appends the T new tokens to `cache` and returns their attention outputs (shapes above).
// opts.variant must be the cache's; opts.impl Reference (tensor ops) or Fused (one pass over
// each head's entries, no tensor op per key); opts.scale 0 means 1/sqrt(D).
at::Tensor attention_step(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const at::Tensor& gate, KvCache& cache, const AttentionOptions& opts);

// One token on raw float32 rows, for a caller that computes q, k, v and the gate itself (a
// model's single-token step, lm/token_step.h): the fused implementation of attention_step for
// T = 1, without tensors. q, k (H x D), v and out (H x Dv) contiguous; gate[h] as in the header
// comment (null for softmax); scale 0 means 1/sqrt(D).
void attention_step_token(KvCache& cache, const float* q, const float* k, const float* v,
                          const double* gate, double scale, float* out);

}  // namespace fpa
