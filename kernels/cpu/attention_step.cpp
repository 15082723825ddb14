// fpa::attention_step: the cached entry point (kernels/cpu/kv_cache.h). The cache keeps the state
// (keys, values, the carried path minimum); the two implementations below only differ in how one
// query attends over one head's entries:
//   reference : tensor ops (matmul, softmax), clear and slow at one token per step;
//   fused     : one pass over each head's entries, an online softmax (fused_decode.h), no
//               tensor op per step.
// A cache on the tensor path (KvCache::tensor_path(): any device, or tensor_ops on the CPU) takes
// neither: tensor_step below appends each token and attends with tensor ops on the cache's
// device (KvCache::attend_rows), whatever opts.impl says.
#include "kernels/cpu/kv_cache.h"

#include "kernels/checks.h"
#include "kernels/cpu/fused_decode.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace fpa {
namespace {

void validate_step(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
              const at::Tensor& gate, const KvCache& cache, const AttentionOptions& opts) {
  check(q.defined() && k.defined() && v.defined(), "attention_step: q, k and v must be defined");
  check(opts.variant == cache.variant(), "attention_step: the variant must be the cache's");
  const int64_t H = cache.heads();
  check(q.dim() == 3 && q.size(0) == H && q.size(2) == cache.head_dim() && q.size(1) >= 1,
        "attention_step: q must be (H={}, T, D={})", H, cache.head_dim());
  check(k.sizes() == q.sizes(), "attention_step: k must have the shape of q");
  check(v.dim() == 3 && v.size(0) == H && v.size(1) == q.size(1) &&
            v.size(2) == cache.value_dim(),
        "attention_step: v must be (H, T, Dv)");
  check(q.scalar_type() == cache.dtype() && k.scalar_type() == cache.dtype() &&
            v.scalar_type() == cache.dtype(),
        "attention_step: q, k, v must have the cache's dtype");
  check(q.device() == cache.device() && k.device() == cache.device() &&
            v.device() == cache.device(),
        "attention_step: q, k and v must be on the cache's device ({})", cache.device().str());
  check_scale_and_temperature(opts.scale, opts.st_temperature, "attention_step");
  if (opts.variant != Variant::Softmax)
    check(gate.defined() && gate.dim() == 2 && gate.size(0) == H && gate.size(1) == q.size(1),
          "attention_step: gate must be (H, T)");
}

// One query of one head over the head's entries, with tensor ops.
at::Tensor reference_head(const at::Tensor& q, const KvCache& cache, int64_t h, double scale) {
  const int64_t n = cache.size(h);
  std::vector<double> b(static_cast<size_t>(n));
  const auto source = cache.bias_source(h);
  auto mins = source.reader();
  for (int64_t e = 0; e < n; ++e) b[size_t(e)] = source.at(e, mins);
  const auto bias = at::tensor(b, at::kDouble).to(q.scalar_type());
  const auto scores = at::matmul(cache.keys_tensor(h), q) * scale + bias;
  return at::matmul(at::softmax(scores, 0), cache.values_tensor(h));
}

// One token for every head with raw loops (kernels/cpu/fused_decode.h): appends it, then each
// head's query attends over the head's entries; the kernel reads each entry's bias from the
// cache's per-key scalars as it goes.
template <class T>
void fused_token(KvCache& cache, const T* q, const T* k, const T* v, const double* gate,
                 double scale, T* out, std::vector<T>& scratch) {
  cache.append(k, v, gate, 1);
  const int64_t d = cache.head_dim(), dv = cache.value_dim();
  for (int64_t h = 0; h < cache.heads(); ++h)
    fused::decode_head(q + h * d, static_cast<const T*>(cache.keys(h)),
                       static_cast<const T*>(cache.values(h)), cache.size(h), d, dv, T(scale),
                       cache.bias_source(h), scratch, out + h * dv);
}

// The tensor path: per token, append (k, v) for every head and attend q over every head's
// entries with tensor ops on the cache's device. The gate comes to the host once per call (the
// levels are host metadata).
at::Tensor tensor_step(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const at::Tensor& gate, KvCache& cache, double scale) {
  const int64_t H = cache.heads(), T = q.size(1);
  std::vector<double> g(size_t(T * H), 0.0);
  if (cache.variant() != Variant::Softmax) {
    const auto host = gate.to(at::kCPU, at::kDouble).contiguous();  // (H, T)
    const double* gp = host.data_ptr<double>();
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) g[size_t(t * H + h)] = gp[h * T + t];
  }
  std::vector<at::Tensor> outs;
  outs.reserve(size_t(T));
  for (int64_t t = 0; t < T; ++t) {
    cache.append_rows(k.select(1, t), v.select(1, t), g.data() + t * H, 1);
    outs.push_back(cache.attend_rows(q.select(1, t), scale));  // (H, Dv)
  }
  return at::stack(outs, 1);  // (H, T, Dv)
}

}  // namespace

at::Tensor attention_step(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const at::Tensor& gate, KvCache& cache, const AttentionOptions& opts) {
  validate_step(q, k, v, gate, cache, opts);
  if (cache.tensor_path())
    return tensor_step(q, k, v, gate, cache,
                       opts.scale > 0 ? opts.scale : 1.0 / std::sqrt(double(cache.head_dim())));
  check(opts.impl == Impl::Reference || opts.impl == Impl::Fused,
        "attention_step: implementations are 'reference' and 'fused' (no CUDA step yet)");
  const int64_t H = cache.heads(), T = q.size(1), dv = cache.value_dim();
  const double scale = opts.scale > 0 ? opts.scale : 1.0 / std::sqrt(double(cache.head_dim()));
  // Token-major rows: token t's (H, D) block is contiguous (for one token of the models' split
  // heads the transposes are views and contiguous() copies nothing).
  const auto qt = q.transpose(0, 1).contiguous(), kt = k.transpose(0, 1).contiguous(),
             vt = v.transpose(0, 1).contiguous();
  // The gate as float64 (T, H), token-major; zeros for softmax.
  std::vector<double> g(size_t(T * H), 0.0);
  if (opts.variant != Variant::Softmax)
    AT_DISPATCH_FLOATING_TYPES(gate.scalar_type(), "attention_step gate", [&] {
      const auto* gp = gate.data_ptr<scalar_t>();
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < T; ++t)
          g[size_t(t * H + h)] = double(gp[h * gate.stride(0) + t * gate.stride(1)]);
    });
  auto out = at::empty({T, H, dv}, q.options());
  const int64_t d = cache.head_dim(), es = q.element_size();
  const auto* qp = static_cast<const char*>(qt.data_ptr());
  const auto* kp = static_cast<const char*>(kt.data_ptr());
  const auto* vp = static_cast<const char*>(vt.data_ptr());
  for (int64_t t = 0; t < T; ++t) {
    if (opts.impl == Impl::Reference) {
      cache.append(kp + t * H * d * es, vp + t * H * dv * es, g.data() + t * H, 1);
      for (int64_t h = 0; h < H; ++h) out[t][h].copy_(reference_head(qt[t][h], cache, h, scale));
      if (cache.tracks_mass()) cache.observe_query(qp + t * H * d * es, scale);
    } else {
      AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "attention_step", [&] {
        std::vector<scalar_t> scratch;
        const auto row = [&](const char* p, int64_t w) {
          return reinterpret_cast<const scalar_t*>(p) + t * H * w;
        };
        fused_token<scalar_t>(cache, row(qp, d), row(kp, d), row(vp, dv), g.data() + t * H, scale,
                              out.data_ptr<scalar_t>() + t * H * dv, scratch);
      });
      if (cache.tracks_mass()) cache.observe_query(qp + t * H * d * es, scale);
    }
  }
  cache.set_last_query(qp + (T - 1) * H * d * es, scale);
  return out.transpose(0, 1);
}

void attention_step_token(KvCache& cache, const float* q, const float* k, const float* v,
                          const double* gate, double scale, float* out) {
  check(cache.dtype() == at::kFloat, "attention_step_token: the cache must be float32");
  check(!cache.tensor_path(), "attention_step_token: the cache is on the tensor path (attention_step)");
  check(std::isfinite(scale) && scale >= 0,
        "attention_step_token: scale must be finite and >= 0 (0 means 1/sqrt(D))");
  if (scale == 0) scale = 1.0 / std::sqrt(double(cache.head_dim()));
  thread_local std::vector<float> scratch;
  fused_token(cache, q, k, v, gate, scale, out, scratch);
  cache.observe_query(q, scale);
}

}  // namespace fpa
