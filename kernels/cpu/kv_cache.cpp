#include "kernels/cpu/kv_cache.h"

#include "kernels/checks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace fpa {
namespace {

template <class T>
double max_abs_dot(const double* q, const T* k, int64_t n, int64_t d) {
  double r = 0;
  for (int64_t j = 0; j < n; ++j) {
    double s = 0;
    for (int64_t c = 0; c < d; ++c) s += q[c] * double(k[j * d + c]);
    r = std::max(r, std::abs(s));
  }
  return r;
}

}  // namespace

KvCache::KvCache(Variant variant, int64_t heads, int64_t head_dim, int64_t value_dim,
                 at::ScalarType dtype)
    : variant_(variant), heads_(heads), d_(head_dim), dv_(value_dim), dtype_(dtype) {
  check(heads > 0 && head_dim > 0 && value_dim > 0, "KvCache: sizes must be positive");
  check(dtype == at::kFloat || dtype == at::kDouble, "KvCache: dtype must be float32 or float64");
  clear();
}

void KvCache::clear() {
  length_ = 0;
  capacity_ = 0;
  k_ = v_ = at::Tensor();
  last_q_.clear();
  size_.assign(size_t(heads_), 0);
  pos_.assign(size_t(heads_), {});
  level_.assign(size_t(heads_), {});
  min_runs_.assign(size_t(heads_), {});
  dense_min_.assign(size_t(heads_), {});
  dense_bias_.assign(size_t(heads_), {});
  dense_end_.assign(size_t(heads_), 0);
  last_level_.assign(size_t(heads_), 0.0);
  mass_.assign(tracks_mass_ ? size_t(heads_) : 0, {});
}

int64_t KvCache::entries() const {
  int64_t n = 0;
  for (auto s : size_) n += s;
  return n;
}

at::Tensor KvCache::last_levels() const {
  return at::tensor(last_level_, at::kDouble);
}

void KvCache::reserve(int64_t need) {
  if (need <= capacity_) return;
  const int64_t capacity = std::max<int64_t>({need, 2 * capacity_, 64});
  auto grow = [&](const at::Tensor& old, int64_t width) {
    auto t = at::empty({heads_, capacity, width}, at::TensorOptions().dtype(dtype_));
    if (capacity_ > 0) t.narrow(1, 0, capacity_).copy_(old);
    return t;
  };
  k_ = grow(k_, d_);
  v_ = grow(v_, dv_);
  capacity_ = capacity;
}

const void* KvCache::keys(int64_t h) const {
  return static_cast<const char*>(k_.data_ptr()) + h * capacity_ * d_ * k_.element_size();
}
const void* KvCache::values(int64_t h) const {
  return static_cast<const char*>(v_.data_ptr()) + h * capacity_ * dv_ * v_.element_size();
}
at::Tensor KvCache::keys_tensor(int64_t h) const { return k_[h].narrow(0, 0, size(h)); }
at::Tensor KvCache::values_tensor(int64_t h) const { return v_[h].narrow(0, 0, size(h)); }

void KvCache::append(const void* k, const void* v, const double* gate, int64_t gate_stride) {
  reserve(*std::max_element(size_.begin(), size_.end()) + 1);
  const int64_t es = k_.element_size();
  auto* kd = static_cast<char*>(k_.data_ptr());
  auto* vd = static_cast<char*>(v_.data_ptr());
  const auto* ks = static_cast<const char*>(k);
  const auto* vs = static_cast<const char*>(v);
  for (int64_t h = 0; h < heads_; ++h) {
    const size_t hh = size_t(h);
    const int64_t at = size_[hh];
    std::memcpy(kd + (h * capacity_ + at) * d_ * es, ks + h * d_ * es, size_t(d_ * es));
    std::memcpy(vd + (h * capacity_ + at) * dv_ * es, vs + h * dv_ * es, size_t(dv_ * es));
    pos_[hh].push_back(length_);
    double level = 0;
    if (variant_ == Variant::Fpa) {
      level = gate[h * gate_stride];
      // The carried path minimum: every kept key's m_j now includes phi_t, i.e. the runs at or
      // above phi_t merge into one at phi_t, which the new key (m_t = phi_t) joins.
      auto& runs = min_runs_[hh];
      int64_t first = at;
      while (!runs.empty() && runs.back().value >= level) {
        first = runs.back().first;
        runs.pop_back();
      }
      runs.push_back({first, level});
      dense_end_[hh] = std::min(dense_end_[hh], first);  // the merged entries' m_j changed
    } else if (variant_ == Variant::Fox) {
      level = last_level_[hh] + gate[h * gate_stride];  // F_t = F_{t-1} + log f_t
    }
    level_[hh].push_back(level);
    if (tracks_mass_) mass_[hh].push_back(0.0);
    last_level_[hh] = level;
    ++size_[hh];
  }
  ++length_;
}

void KvCache::set_last_query(const void* q, double scale) {
  last_q_.resize(size_t(heads_ * d_));
  AT_DISPATCH_FLOATING_TYPES(dtype_, "KvCache::set_last_query", [&] {
    const auto* p = static_cast<const scalar_t*>(q);
    for (size_t c = 0; c < last_q_.size(); ++c) last_q_[c] = double(p[c]);
  });
  scale_ = scale;
}

void KvCache::track_mass(bool on) {
  tracks_mass_ = on;
  mass_.assign(on ? size_t(heads_) : 0, {});
  for (int64_t h = 0; on && h < heads_; ++h) mass_[size_t(h)].assign(size_t(size(h)), 0.0);
}

void KvCache::reset_mass() {
  for (auto& m : mass_) std::fill(m.begin(), m.end(), 0.0);
}

void KvCache::observe_query(const void* q, double scale) {
  set_last_query(q, scale);
  if (!tracks_mass_) return;
  for (int64_t h = 0; h < heads_; ++h) {
    last_weights(h, weights_);
    auto& m = mass_[size_t(h)];
    for (size_t e = 0; e < m.size(); ++e) m[e] += weights_[e];
  }
}

void KvCache::last_weights(int64_t h, std::vector<double>& out) const {
  const int64_t n = size(h);
  out.resize(size_t(n));
  if (n == 0 || last_q_.empty()) return;
  const auto source = bias_source(h);
  auto mins = source.reader();
  const double* q = last_q_.data() + h * d_;
  AT_DISPATCH_FLOATING_TYPES(dtype_, "KvCache::last_weights", [&] {
    const auto* k = static_cast<const scalar_t*>(keys(h));
    for (int64_t e = 0; e < n; ++e) {
      double s = 0;
      for (int64_t c = 0; c < d_; ++c) s += q[c] * double(k[e * d_ + c]);
      out[size_t(e)] = scale_ * s + source.at(e, mins);
    }
  });
  const double top = *std::max_element(out.begin(), out.end());
  double sum = 0;
  for (auto& x : out) sum += (x = std::exp(x - top));
  for (auto& x : out) x /= sum;
}

fused::DecodeBias KvCache::bias_source(int64_t h) const {
  fused::DecodeBias b;
  switch (variant_) {
    case Variant::Fpa:
      b.level = level_[size_t(h)].data();
      b.runs = min_runs_[size_t(h)].data();
      b.n_runs = int64_t(min_runs_[size_t(h)].size());
      b.dense = dense_min_[size_t(h)].data();
      b.dense_bias = dense_bias_[size_t(h)].data();
      b.dense_end = dense_end_[size_t(h)];
      break;
    case Variant::Fox:
      b.level = level_[size_t(h)].data();
      b.last = last_level_[size_t(h)];
      break;
    case Variant::Softmax: break;
  }
  return b;
}

void KvCache::keep(const std::vector<std::vector<int64_t>>& kept) {
  check(kept.size() == size_t(heads_), "KvCache::keep: one index list per head");
  const int64_t es = capacity_ > 0 ? k_.element_size() : 0;
  for (int64_t h = 0; h < heads_; ++h) {
    const size_t hh = size_t(h);
    const auto& idx = kept[hh];
    for (size_t s = 0; s < idx.size(); ++s)
      check(idx[s] >= 0 && idx[s] < size_[hh] && (s == 0 || idx[s] > idx[s - 1]),
            "KvCache::keep: head {}: indices must ascend within [0, {})", h, size_[hh]);
    if (variant_ == Variant::Fpa) {
      // The kept entries keep their m_j: runs over the new indices, and every m_j in the
      // per-key array (read where policies keep scattered keys, about one run each), with
      // float32's b_j beside it.
      const auto source = bias_source(h);
      auto mins = source.reader();
      // (Written to spare buffers swapped in afterwards: no allocation once they have grown.)
      const bool with_bias = dtype_ == at::kFloat;
      auto& runs = spare_.runs;
      auto& dense = spare_.dense;
      auto& dense_bias = spare_.dense_bias;
      runs.clear();
      dense.resize(idx.size());
      dense_bias.resize(with_bias ? idx.size() : 0);
      for (size_t s = 0; s < idx.size(); ++s) {
        const double m = source.min_at(idx[s], mins);
        dense[s] = m;
        if (with_bias) dense_bias[s] = float(m - level_[hh][size_t(idx[s])]);
        if (runs.empty() || runs.back().value != m) runs.push_back({int64_t(s), m});
      }
      std::swap(min_runs_[hh], runs);
      std::swap(dense_min_[hh], dense);
      std::swap(dense_bias_[hh], dense_bias);
      dense_end_[hh] = int64_t(idx.size());
    }
    if (int64_t(idx.size()) == size_[hh]) continue;
    auto* kd = static_cast<char*>(k_.data_ptr()) + h * capacity_ * d_ * es;
    auto* vd = static_cast<char*>(v_.data_ptr()) + h * capacity_ * dv_ * es;
    // idx[s] >= s, so compacting front to back never overwrites an entry still to be read.
    // Kept entries that were consecutive move together (a window or a budget drops a few
    // entries from long stretches): one memmove per stretch, not per entry.
    auto& pos = pos_[hh];
    auto& level = level_[hh];
    for (size_t s = 0, e; s < idx.size(); s = e) {
      const int64_t from = idx[s];
      for (e = s + 1; e < idx.size() && idx[e] == from + int64_t(e - s);) ++e;
      if (from == int64_t(s)) continue;
      const int64_t count = int64_t(e - s);
      std::memmove(kd + int64_t(s) * d_ * es, kd + from * d_ * es, size_t(count * d_ * es));
      std::memmove(vd + int64_t(s) * dv_ * es, vd + from * dv_ * es, size_t(count * dv_ * es));
      std::copy(pos.begin() + from, pos.begin() + from + count, pos.begin() + int64_t(s));
      std::copy(level.begin() + from, level.begin() + from + count, level.begin() + int64_t(s));
    }
    if (tracks_mass_) {
      auto& m = mass_[hh];
      for (size_t s = 0; s < idx.size(); ++s) m[s] = m[size_t(idx[s])];
      m.resize(idx.size());
    }
    size_[hh] = int64_t(idx.size());
    pos_[hh].resize(idx.size());
    level_[hh].resize(idx.size());
  }
}

std::vector<CacheHeadView> KvCache::views(bool with_r) const {
  CacheSignals s;
  s.r = with_r;
  return views(s);
}

std::vector<CacheHeadView> KvCache::views(const CacheSignals& signals) const {
  check(!signals.mass || tracks_mass_, "KvCache::views: the mass is asked for but not tracked");
  const bool with_r = signals.r;
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<CacheHeadView> out(static_cast<size_t>(heads_));
  for (int64_t h = 0; h < heads_; ++h) {
    auto& view = out[size_t(h)];
    const int64_t n = size(h);
    view.position = pos_[size_t(h)];
    view.bias.resize(size_t(n));
    const auto source = bias_source(h);
    auto mins = source.reader();
    for (int64_t e = 0; e < n; ++e) view.bias[size_t(e)] = source.at(e, mins);
    if (!with_r) {
      view.r = std::numeric_limits<double>::quiet_NaN();
    } else if (!last_q_.empty() && n > 0) {
      AT_DISPATCH_FLOATING_TYPES(dtype_, "KvCache::views", [&] {
        view.r = scale_ * max_abs_dot(last_q_.data() + h * d_,
                                      static_cast<const scalar_t*>(keys(h)), n, d_);
      });
    }
    if (signals.weight) last_weights(h, view.weight);
    if (signals.mass) view.mass = mass_[size_t(h)];
    view.q_norm = nan;
    if (signals.key_norm) {
      view.key_norm.resize(size_t(n));
      AT_DISPATCH_FLOATING_TYPES(dtype_, "KvCache::views norms", [&] {
        const auto* k = static_cast<const scalar_t*>(keys(h));
        for (int64_t e = 0; e < n; ++e) {
          double s = 0;
          for (int64_t c = 0; c < d_; ++c) s += double(k[e * d_ + c]) * double(k[e * d_ + c]);
          view.key_norm[size_t(e)] = std::sqrt(s);
        }
      });
      if (!last_q_.empty()) {
        double s = 0;
        for (int64_t c = 0; c < d_; ++c) s += last_q_[size_t(h * d_ + c)] * last_q_[size_t(h * d_ + c)];
        view.q_norm = scale_ * std::sqrt(s);
      }
    }
  }
  return out;
}

}  // namespace fpa
