#include "kernels/cpu/kv_cache.h"

#include "kernels/checks.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

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
                 at::ScalarType dtype, at::Device device, bool tensor_ops)
    : variant_(variant), heads_(heads), d_(head_dim), dv_(value_dim), dtype_(dtype),
      device_(device), tensor_path_(tensor_ops || !device.is_cpu()) {
  check(heads > 0 && head_dim > 0 && value_dim > 0, "KvCache: sizes must be positive");
  check(dtype == at::kFloat || dtype == at::kDouble, "KvCache: dtype must be float32 or float64");
  clear();
}

void KvCache::clear() {
  length_ = 0;
  capacity_ = 0;
  k_ = v_ = at::Tensor();
  last_q_.clear();
  last_q_rows_ = mass_rows_ = at::Tensor();
  size_.assign(size_t(heads_), 0);
  pos_.assign(size_t(heads_), {});
  level_.assign(size_t(heads_), {});
  min_runs_.assign(size_t(heads_), {});
  dense_min_.assign(size_t(heads_), {});
  dense_bias_.assign(size_t(heads_), {});
  dense_end_.assign(size_t(heads_), 0);
  last_level_.assign(size_t(heads_), 0.0);
  mass_.assign(tracks_mass_ && !tensor_path_ ? size_t(heads_) : 0, {});
}

int64_t KvCache::max_size() const { return *std::max_element(size_.begin(), size_.end()); }

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
  if (tensor_path_) {
    // The tensor path's storage is updated in place from inside and outside inference mode (a
    // decoder steps in it, policies evict outside it): every op on it runs in inference mode.
    c10::InferenceMode inference;
    // Zeros, not empty: the storage past a head's entries enters the padded tensor ops (a NaN
    // there would survive a zero weight).
    const auto o = at::TensorOptions().dtype(dtype_).device(device_);
    auto grow = [&](const at::Tensor& old, int64_t width) {
      auto t = at::zeros({heads_, capacity, width}, o);
      if (capacity_ > 0) t.narrow(1, 0, capacity_).copy_(old);
      return t;
    };
    k_ = grow(k_, d_);
    v_ = grow(v_, dv_);
    if (tracks_mass_) {
      auto m = at::zeros({heads_, capacity}, o.dtype(at::kDouble));
      if (capacity_ > 0) m.narrow(1, 0, capacity_).copy_(mass_rows_);
      mass_rows_ = m;
    }
    capacity_ = capacity;
    return;
  }
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
    append_level(h, variant_ == Variant::Softmax ? 0.0 : gate[h * gate_stride]);
  }
  ++length_;
}

void KvCache::append_level(int64_t h, double gate_value) {
  const size_t hh = size_t(h);
  const int64_t at = size_[hh];
  {
    pos_[hh].push_back(length_);
    double level = 0;
    if (variant_ == Variant::Fpa) {
      level = gate_value;
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
      level = last_level_[hh] + gate_value;  // F_t = F_{t-1} + log f_t
    }
    level_[hh].push_back(level);
    if (tracks_mass_ && !tensor_path_) mass_[hh].push_back(0.0);
    last_level_[hh] = level;
    ++size_[hh];
  }
}

void KvCache::append_rows(const at::Tensor& k, const at::Tensor& v, const double* gate,
                          int64_t gate_stride) {
  check(tensor_path_, "KvCache::append_rows: the cache is on the raw-pointer path");
  c10::InferenceMode inference;
  reserve(max_size() + 1);
  const bool uniform = std::all_of(size_.begin(), size_.end(), [&](int64_t s) { return s == size_[0]; });
  if (uniform) {  // every head appends at one index: one copy per tensor
    k_.select(1, size_[0]).copy_(k);
    v_.select(1, size_[0]).copy_(v);
    if (tracks_mass_) mass_rows_.select(1, size_[0]).zero_();
  } else {  // ragged heads: (head, size) index pairs
    const auto l = at::TensorOptions().dtype(at::kLong);
    const auto heads = at::arange(heads_, l.device(device_));
    const auto at_ = at::tensor(size_, l).to(device_);
    k_.index_put_({heads, at_}, k);
    v_.index_put_({heads, at_}, v);
    if (tracks_mass_) mass_rows_.index_put_({heads, at_}, at::zeros({heads_}, mass_rows_.options()));
  }
  for (int64_t h = 0; h < heads_; ++h)
    append_level(h, variant_ == Variant::Softmax ? 0.0 : gate[h * gate_stride]);
  ++length_;
}

at::Tensor KvCache::bias_rows(at::ScalarType dtype) const {
  const int64_t n = max_size();
  std::vector<double> b(size_t(heads_ * n), -std::numeric_limits<double>::infinity());
  for (int64_t h = 0; h < heads_; ++h) {
    const auto source = bias_source(h);
    auto mins = source.reader();
    for (int64_t e = 0; e < size(h); ++e) b[size_t(h * n + e)] = source.at(e, mins);
  }
  return at::tensor(b, at::kDouble).view({heads_, n}).to(device_, dtype);
}

at::Tensor KvCache::attend_rows(const at::Tensor& q, double scale) {
  check(tensor_path_, "KvCache::attend_rows: the cache is on the raw-pointer path");
  c10::InferenceMode inference;
  const int64_t n = max_size();
  const auto keys = k_.narrow(1, 0, n), values = v_.narrow(1, 0, n);
  const auto scores = at::bmm(keys, q.unsqueeze(-1)).squeeze(-1) * scale + bias_rows(dtype_);
  const auto weights = at::softmax(scores, -1);  // (H, n), 0 past each head's entries
  last_q_rows_ = q.clone();
  scale_ = scale;
  if (tracks_mass_) mass_rows_.narrow(1, 0, n).add_(weights.to(at::kDouble));
  return at::bmm(weights.unsqueeze(1), values).squeeze(1);
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
  if (tensor_path_) {
    c10::InferenceMode inference;
    mass_rows_ = on && capacity_ > 0
                     ? at::zeros({heads_, capacity_}, at::TensorOptions().dtype(at::kDouble).device(device_))
                     : at::Tensor();
    return;
  }
  mass_.assign(on ? size_t(heads_) : 0, {});
  for (int64_t h = 0; on && h < heads_; ++h) mass_[size_t(h)].assign(size_t(size(h)), 0.0);
}

void KvCache::reset_mass() {
  if (mass_rows_.defined()) {
    c10::InferenceMode inference;
    mass_rows_.zero_();
  }
  for (auto& m : mass_) std::fill(m.begin(), m.end(), 0.0);
}

void KvCache::observe_query(const void* q, double scale) {
  check(!tensor_path_, "KvCache::observe_query: the tensor path observes in attend_rows");
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
  const int64_t es = capacity_ > 0 && !tensor_path_ ? k_.element_size() : 0;
  // Tensor path: every head's kept rows gathered at once (index 0 and zeros past a head's kept
  // entries), checked and taken before the metadata changes.
  at::Tensor gather, valid;
  int64_t widest = 0;
  std::optional<c10::InferenceMode> inference;
  if (tensor_path_) inference.emplace();
  if (tensor_path_ && capacity_ > 0) {
    for (const auto& idx : kept) widest = std::max<int64_t>(widest, int64_t(idx.size()));
    std::vector<int64_t> g(size_t(heads_ * widest), 0);
    std::vector<uint8_t> ok(size_t(heads_ * widest), 0);
    for (int64_t h = 0; h < heads_ && h < int64_t(kept.size()); ++h)
      for (size_t s = 0; s < kept[size_t(h)].size(); ++s) {
        g[size_t(h * widest) + s] = kept[size_t(h)][s];
        ok[size_t(h * widest) + s] = 1;
      }
    gather = at::tensor(g, at::kLong).view({heads_, widest}).to(device_);
    valid = at::tensor(ok, at::kByte).view({heads_, widest}).to(at::kBool).to(device_);
  }
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
    if (tensor_path_) {  // the metadata here, the rows after the loop
      auto& pos = pos_[hh];
      auto& level = level_[hh];
      for (size_t s = 0; s < idx.size(); ++s) {
        pos[s] = pos[size_t(idx[s])];
        level[s] = level[size_t(idx[s])];
      }
      size_[hh] = int64_t(idx.size());
      pos.resize(idx.size());
      level.resize(idx.size());
      continue;
    }
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
    if (tracks_mass_ && !tensor_path_) {
      auto& m = mass_[hh];
      for (size_t s = 0; s < idx.size(); ++s) m[s] = m[size_t(idx[s])];
      m.resize(idx.size());
    }
    size_[hh] = int64_t(idx.size());
    pos_[hh].resize(idx.size());
    level_[hh].resize(idx.size());
  }
  if (gather.defined() && widest > 0) {
    auto rows = [&](at::Tensor& storage) {
      const auto& idx = storage.dim() == 3
                            ? gather.unsqueeze(-1).expand({heads_, widest, storage.size(2)})
                            : gather;
      const auto& ok = storage.dim() == 3 ? valid.unsqueeze(-1) : valid;
      const auto picked = at::gather(storage, 1, idx);
      storage.narrow(1, 0, widest).copy_(at::where(ok, picked, at::zeros({}, picked.options())));
    };
    rows(k_);
    rows(v_);
    if (tracks_mass_) rows(mass_rows_);
  }
}

std::vector<CacheHeadView> KvCache::views(bool with_r) const {
  CacheSignals s;
  s.r = with_r;
  return views(s);
}

void KvCache::fill_positions_and_bias(int64_t h, CacheHeadView& view) const {
  const int64_t n = size(h);
  view.position = pos_[size_t(h)];
  view.bias.resize(size_t(n));
  const auto source = bias_source(h);
  auto mins = source.reader();
  for (int64_t e = 0; e < n; ++e) view.bias[size_t(e)] = source.at(e, mins);
}

std::vector<CacheHeadView> KvCache::views(const CacheSignals& signals) const {
  check(!signals.mass || tracks_mass_, "KvCache::views: the mass is asked for but not tracked");
  if (tensor_path_) return tensor_views(signals);
  const bool with_r = signals.r;
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<CacheHeadView> out(static_cast<size_t>(heads_));
  for (int64_t h = 0; h < heads_; ++h) {
    auto& view = out[size_t(h)];
    const int64_t n = size(h);
    fill_positions_and_bias(h, view);
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

// The tensor path's views: positions and biases from the host metadata as on the CPU path, the
// signals with tensor ops on the device in float64 (as the CPU path computes them), each copied
// to the host once for all heads.
std::vector<CacheHeadView> KvCache::tensor_views(const CacheSignals& signals) const {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<CacheHeadView> out(static_cast<size_t>(heads_));
  for (int64_t h = 0; h < heads_; ++h) {
    auto& view = out[size_t(h)];
    const int64_t n = size(h);
    fill_positions_and_bias(h, view);
    view.r = signals.r ? 0.0 : nan;
    view.q_norm = nan;
    if (signals.weight) view.weight.assign(size_t(n), 0.0);
  }
  const int64_t n = max_size();
  if (n == 0) return out;
  c10::InferenceMode inference;
  const bool query = last_q_rows_.defined();
  // Per head: its first size(h) numbers of a (H, n) float64 tensor.
  const auto per_head = [&](const at::Tensor& t, std::vector<double> CacheHeadView::*field) {
    const auto host = t.to(at::kCPU, at::kDouble).contiguous();
    const double* p = host.data_ptr<double>();
    for (int64_t h = 0; h < heads_; ++h)
      (out[size_t(h)].*field).assign(p + h * n, p + h * n + size(h));
  };
  const auto keys = k_.narrow(1, 0, n).to(at::kDouble);
  if (query && (signals.r || signals.weight)) {
    const auto q = last_q_rows_.to(at::kDouble);
    const auto dots = at::bmm(keys, q.unsqueeze(-1)).squeeze(-1);  // (H, n)
    if (signals.r) {
      const auto sizes = at::tensor(size_, at::kLong).to(device_);
      const auto pad = at::arange(n, sizes.options()).unsqueeze(0) >= sizes.unsqueeze(1);
      const auto r = (dots.abs().masked_fill(pad, 0.0).amax(-1) * scale_).to(at::kCPU).contiguous();
      for (int64_t h = 0; h < heads_; ++h) out[size_t(h)].r = r[h].item<double>();
    }
    if (signals.weight)
      per_head(at::softmax(dots * scale_ + bias_rows(at::kDouble), -1), &CacheHeadView::weight);
  }
  if (signals.mass) per_head(mass_rows_.narrow(1, 0, n), &CacheHeadView::mass);
  if (signals.key_norm) {
    per_head(keys.norm(2, -1), &CacheHeadView::key_norm);
    if (query) {
      const auto qn = (last_q_rows_.to(at::kDouble).norm(2, -1) * scale_).to(at::kCPU).contiguous();
      for (int64_t h = 0; h < heads_; ++h) out[size_t(h)].q_norm = qn[h].item<double>();
    }
  }
  return out;
}

}  // namespace fpa
