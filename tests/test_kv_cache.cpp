// fpa::attention_step over fpa::KvCache (kernels/cpu/kv_cache.h) equals the full operator
// restricted to the kept keys: decoding in chunks, with random per-head evictions between chunks,
// for every variant and implementation, in float64 (unit cases and a RapidCheck property); the
// same for the tensor path (KvCache with tensor_ops on the CPU: what a GPU cache runs), which also
// matches the raw-pointer path in lockstep, outputs and views.
#include "kernels/attention.h"
#include "kernels/cpu/kv_cache.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <limits>
#include <random>

namespace fpa {
namespace {

struct Problem {
  at::Tensor q, k, v, gate;  // (H, N, D) and gate (H, N) in the operator's convention
};

Problem make_problem(Variant variant, int64_t heads, int64_t n, int64_t d, uint64_t seed) {
  at::manual_seed(seed);
  const auto o = at::TensorOptions().dtype(at::kDouble);
  Problem p{at::randn({heads, n, d}, o), at::randn({heads, n, d}, o), at::randn({heads, n, d}, o),
            {}};
  // Non-monotone fields (FPA differs from FoX), gates spread over (0, 1).
  if (variant == Variant::Fpa) p.gate = at::cumsum(at::randn({heads, n}, o) * 1.5, -1);
  if (variant == Variant::Fox) p.gate = at::log_sigmoid(at::randn({heads, n}, o) * 2.0 + 1.0);
  return p;
}

// evicted_at[h][j]: the first query that no longer sees key j in head h (n when never evicted).
// The expected output: the full operator's logits with those entries masked out.
at::Tensor restricted_full(const Problem& p, Variant variant,
                           const std::vector<std::vector<int64_t>>& evicted_at) {
  const int64_t H = p.q.size(0), N = p.q.size(1);
  at::Tensor bias;
  if (variant == Variant::Fpa) bias = fpa_bias(p.gate);
  else if (variant == Variant::Fox) bias = fox_bias(p.gate);
  else bias = at::zeros({H, N, N}, p.q.options()).masked_fill(
                  at::ones({N, N}, at::kBool).triu(1), -std::numeric_limits<double>::infinity());
  auto mask = at::zeros({H, N, N}, at::kBool);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t i = evicted_at[size_t(h)][size_t(j)]; i < N; ++i) mask[h][i][j] = true;
  const double scale = 1.0 / std::sqrt(double(p.q.size(2)));
  const auto logits = (at::matmul(p.q, p.k.transpose(-1, -2)) * scale + bias)
                          .masked_fill(mask, -std::numeric_limits<double>::infinity());
  return at::matmul(at::softmax(logits, -1), p.v);
}

// Decodes the problem in chunks of the given sizes; after each chunk every head keeps each
// older entry with probability keep_p (its newest entry always), drawn from `seed`. In float32
// the inputs are rounded to float32 first and the expected output is computed from them in
// float64, so the error is the decoder's own.
double decode_error(Variant variant, Impl impl, int64_t heads, int64_t n, int64_t d,
                    const std::vector<int64_t>& chunks, double keep_p, uint64_t seed,
                    at::ScalarType dtype = at::kDouble, bool tensor_ops = false) {
  Problem p = make_problem(variant, heads, n, d, seed);
  for (auto* t : {&p.q, &p.k, &p.v, &p.gate})
    if (t->defined()) *t = t->to(dtype).to(at::kDouble);
  KvCache cache(variant, heads, d, d, dtype, at::kCPU, tensor_ops);
  AttentionOptions opts;
  opts.variant = variant;
  opts.impl = impl;
  std::vector<std::vector<int64_t>> evicted_at(size_t(heads), std::vector<int64_t>(size_t(n), n));
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution keep(keep_p);
  std::vector<at::Tensor> outs;
  int64_t s = 0;
  for (size_t c = 0; s < n; ++c) {
    const int64_t e = std::min(n, s + chunks[c % chunks.size()]);
    const auto gate = p.gate.defined() ? p.gate.slice(1, s, e).to(dtype) : at::Tensor();
    outs.push_back(attention_step(p.q.slice(1, s, e).to(dtype), p.k.slice(1, s, e).to(dtype),
                                  p.v.slice(1, s, e).to(dtype), gate, cache, opts)
                       .to(at::kDouble));
    std::vector<std::vector<int64_t>> kept(static_cast<size_t>(heads));
    for (int64_t h = 0; h < heads; ++h) {
      const auto& pos = cache.positions(h);
      for (size_t i = 0; i < pos.size(); ++i) {
        if (i + 1 == pos.size() || keep(rng)) kept[size_t(h)].push_back(int64_t(i));
        else evicted_at[size_t(h)][size_t(pos[i])] = e;
      }
    }
    cache.keep(kept);
    s = e;
  }
  return (at::cat(outs, 1) - restricted_full(p, variant, evicted_at)).abs().max().item<double>();
}

const Variant kVariants[] = {Variant::Softmax, Variant::Fox, Variant::Fpa};
const Impl kImpls[] = {Impl::Reference, Impl::Fused};

TEST(KvCache, TokenByTokenEqualsFullOperator) {
  for (auto variant : kVariants)
    for (auto impl : kImpls)
      EXPECT_LT(decode_error(variant, impl, 3, 40, 8, {1}, 1.0, 1), 1e-10)
          << to_string(variant) << " " << to_string(impl);
}

TEST(KvCache, ChunksWithEvictionsEqualFullOperatorOnKeptKeys) {
  for (auto variant : kVariants)
    for (auto impl : kImpls)
      EXPECT_LT(decode_error(variant, impl, 4, 60, 8, {7, 1, 3}, 0.6, 2), 1e-10)
          << to_string(variant) << " " << to_string(impl);
}

// float32 through the fused decoder's vector kernel (head widths that are multiples of 8, with
// a cache length that leaves keys past the last block of 8) and its portable loops (width 12).
TEST(KvCache, Float32DecodingMatchesFloat64Reference) {
  for (auto variant : kVariants)
    for (int64_t d : {8, 16, 32, 64, 12, 24})
      EXPECT_LT(decode_error(variant, Impl::Fused, 3, 77, d, {1, 5}, 0.7, 4, at::kFloat), 2e-5)
          << to_string(variant) << " d " << d;
}

// The tensor path (tensor_ops: a GPU cache's code, on the CPU): the same properties, float64 to
// 1e-10 and float32 to 2e-5 (the bound of the fused float32 kernel above).
TEST(KvCacheTensorPath, TokenByTokenEqualsFullOperator) {
  for (auto variant : kVariants)
    EXPECT_LT(decode_error(variant, Impl::Fused, 3, 40, 8, {1}, 1.0, 1, at::kDouble, true), 1e-10)
        << to_string(variant);
}

TEST(KvCacheTensorPath, ChunksWithEvictionsEqualFullOperatorOnKeptKeys) {
  for (auto variant : kVariants)
    for (uint64_t seed : {2, 7})
      EXPECT_LT(decode_error(variant, Impl::Fused, 4, 60, 8, {7, 1, 3}, 0.6, seed, at::kDouble, true),
                1e-10)
          << to_string(variant) << " seed " << seed;
}

TEST(KvCacheTensorPath, Float32DecodingMatchesFloat64Reference) {
  for (auto variant : kVariants)
    for (int64_t d : {8, 12, 32})
      EXPECT_LT(decode_error(variant, Impl::Fused, 3, 77, d, {1, 5}, 0.7, 4, at::kFloat, true), 2e-5)
          << to_string(variant) << " d " << d;
}

// The tensor path and the raw-pointer path in lockstep on one problem, evicting the same entries
// (ragged heads) with mass tracked: float64 outputs and views within 1e-12, biases (the host
// metadata: positions, FPA's m_j after evictions, FoX's F_j) identical; float32 outputs within
// 1e-5 of each other (rounding only).
TEST(KvCacheTensorPath, MatchesRawPointerPathInLockstep) {
  for (auto dtype : {at::kDouble, at::kFloat})
    for (auto variant : kVariants) {
      const int64_t H = 3, n = 50, d = 16;
      const Problem p = make_problem(variant, H, n, d, 11);
      KvCache raw(variant, H, d, d, dtype), tens(variant, H, d, d, dtype, at::kCPU, true);
      ASSERT_FALSE(raw.tensor_path());
      ASSERT_TRUE(tens.tensor_path());
      raw.track_mass(true);
      tens.track_mass(true);
      AttentionOptions opts;
      opts.variant = variant;
      opts.impl = Impl::Fused;
      std::mt19937_64 rng(5);
      std::bernoulli_distribution keep(0.7);
      const double tol = dtype == at::kDouble ? 1e-12 : 1e-5;
      CacheSignals all;
      all.r = all.weight = all.mass = all.key_norm = true;
      for (int64_t s = 0, c = 0; s < n; ++c) {
        const int64_t e = std::min(n, s + (c % 3 == 0 ? 6 : 1));
        const auto slice = [&](const at::Tensor& t) {
          return t.defined() ? t.slice(1, s, e).to(dtype) : at::Tensor();
        };
        const auto a = attention_step(slice(p.q), slice(p.k), slice(p.v), slice(p.gate), raw, opts);
        const auto b = attention_step(slice(p.q), slice(p.k), slice(p.v), slice(p.gate), tens, opts);
        EXPECT_LT((a - b).abs().max().item<double>(), tol) << to_string(variant) << " at " << e;
        const auto va = raw.views(all), vb = tens.views(all);
        std::vector<std::vector<int64_t>> kept(static_cast<size_t>(H));
        for (int64_t h = 0; h < H; ++h) {
          const auto& x = va[size_t(h)];
          const auto& y = vb[size_t(h)];
          ASSERT_EQ(x.position, y.position);
          EXPECT_EQ(x.bias, y.bias) << to_string(variant) << " head " << h << " at " << e;
          EXPECT_NEAR(x.r, y.r, 1e-9 * std::max(1.0, std::abs(x.r)));
          EXPECT_NEAR(x.q_norm, y.q_norm, 1e-9 * std::max(1.0, x.q_norm));
          ASSERT_EQ(x.weight.size(), y.weight.size());
          for (size_t j = 0; j < x.weight.size(); ++j) {
            EXPECT_NEAR(x.weight[j], y.weight[j], 1e-9);
            EXPECT_NEAR(x.mass[j], y.mass[j], dtype == at::kDouble ? 1e-9 : 1e-5);
            EXPECT_NEAR(x.key_norm[j], y.key_norm[j], 1e-9);
          }
          for (size_t i = 0; i < x.position.size(); ++i)
            if (i + 1 == x.position.size() || keep(rng)) kept[size_t(h)].push_back(int64_t(i));
        }
        raw.keep(kept);
        tens.keep(kept);
        s = e;
      }
      EXPECT_EQ(raw.entries(), tens.entries());
    }
}

// A NaN in the query reaches the output (the vector kernel's exponential and running maximum
// must not drop it), for head widths on the vector kernel and off it, in both dtypes.
TEST(KvCache, NanQueryGivesNanOutput) {
  for (auto dtype : {at::kFloat, at::kDouble})
    for (int64_t d : {16, 12}) {
      const int64_t H = 2, n = 21;
      at::manual_seed(3);
      const auto o = at::TensorOptions().dtype(dtype);
      const auto k = at::randn({H, n, d}, o), v = at::randn({H, n, d}, o);
      auto q = at::randn({H, n, d}, o);
      q[0][n - 1][3] = std::numeric_limits<double>::quiet_NaN();
      const auto gate = at::cumsum(at::randn({H, n}, o), -1);
      KvCache cache(Variant::Fpa, H, d, d, dtype);
      AttentionOptions opts;
      opts.variant = Variant::Fpa;
      opts.impl = Impl::Fused;
      (void)attention_step(q.narrow(1, 0, n - 1), k.narrow(1, 0, n - 1), v.narrow(1, 0, n - 1),
                           gate.narrow(1, 0, n - 1), cache, opts);
      const auto out = attention_step(q.narrow(1, n - 1, 1), k.narrow(1, n - 1, 1),
                                       v.narrow(1, n - 1, 1), gate.narrow(1, n - 1, 1), cache, opts);
      EXPECT_TRUE(out[0].isnan().all().item<bool>()) << c10::toString(dtype) << " d " << d;
      EXPECT_FALSE(out[1].isnan().any().item<bool>()) << c10::toString(dtype) << " d " << d;
    }
}

// FPA's carried minimum must count the levels of evicted tokens: evict everything but the newest
// entry of each head while the field dips, and the kept keys still see those dips.
TEST(KvCache, EvictedDipsStillCount) {
 for (bool tensor_ops : {false, true}) {
  KvCache cache(Variant::Fpa, 1, 2, 2, at::kDouble, at::kCPU, tensor_ops);
  AttentionOptions opts;
  opts.variant = Variant::Fpa;
  const auto o = at::TensorOptions().dtype(at::kDouble);
  const auto step = [&](double phi) {
    attention_step(at::ones({1, 1, 2}, o), at::ones({1, 1, 2}, o), at::ones({1, 1, 2}, o),
                   at::full({1, 1}, phi, o), cache, opts);
  };
  step(0.0);   // key 0, level 0
  step(-3.0);  // dips 3 below key 0
  cache.keep({{0}});  // drop the dip's own key
  step(1.0);
  const auto views = cache.views();
  ASSERT_EQ(views[0].position, (std::vector<int64_t>{0, 2}));
  EXPECT_DOUBLE_EQ(views[0].bias[0], -3.0);
  EXPECT_DOUBLE_EQ(views[0].bias[1], 0.0);
  EXPECT_EQ(cache.length(), 3);
  EXPECT_EQ(cache.entries(), 2);
 }
}

TEST(KvCache, ViewsReportTheOperatorsBiasAndR) {
  const Problem p = make_problem(Variant::Fox, 2, 12, 4, 3);
  KvCache cache(Variant::Fox, 2, 4, 4, at::kDouble);
  AttentionOptions opts;
  opts.variant = Variant::Fox;
  opts.impl = Impl::Fused;
  attention_step(p.q, p.k, p.v, p.gate, cache, opts);
  const auto views = cache.views();
  const auto bias = fox_bias(p.gate);
  const auto r = (at::matmul(p.k, p.q.select(1, 11).unsqueeze(-1)).abs() / 2.0).amax({1, 2});
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t j = 0; j < 12; ++j)
      EXPECT_NEAR(views[size_t(h)].bias[size_t(j)], bias[h][11][j].item<double>(), 1e-12);
    EXPECT_NEAR(views[size_t(h)].r, r[h].item<double>(), 1e-12);
  }
}

// The policies' signals: the weights at the last query are the full operator's last attention
// row; the accumulated mass is the sum of each key's column over the queries since it entered
// (after an eviction, of the queries that still saw it); key norms are the keys' L2 norms.
TEST(KvCache, ViewsReportWeightsMassAndNorms) {
  for (bool tensor_ops : {false, true})
  for (auto variant : {Variant::Softmax, Variant::Fox, Variant::Fpa})
    for (auto impl : {Impl::Reference, Impl::Fused}) {
      const Problem p = make_problem(variant, 2, 12, 4, 5);
      KvCache cache(variant, 2, 4, 4, at::kDouble, at::kCPU, tensor_ops);
      cache.track_mass(true);
      AttentionOptions opts;
      opts.variant = variant;
      opts.impl = impl;
      attention_step(p.q.narrow(1, 0, 5), p.k.narrow(1, 0, 5), p.v.narrow(1, 0, 5),
                     variant == Variant::Softmax ? at::Tensor() : p.gate.narrow(1, 0, 5), cache, opts);
      for (int64_t t = 5; t < 12; ++t)  // single tokens too
        attention_step(p.q.narrow(1, t, 1), p.k.narrow(1, t, 1), p.v.narrow(1, t, 1),
                       variant == Variant::Softmax ? at::Tensor() : p.gate.narrow(1, t, 1), cache, opts);
      CacheSignals all;
      all.weight = all.mass = all.key_norm = true;
      const auto views = cache.views(all);
      at::Tensor bias;
      if (variant == Variant::Fpa) bias = fpa_bias(p.gate);
      else if (variant == Variant::Fox) bias = fox_bias(p.gate);
      else bias = at::zeros({2, 12, 12}, at::kDouble).masked_fill(
                      at::ones({12, 12}, at::kBool).triu(1), -std::numeric_limits<double>::infinity());
      const auto weights = at::softmax(at::matmul(p.q, p.k.transpose(-1, -2)) / 2.0 + bias, -1);
      const auto mass = weights.sum(1);
      const auto norms = p.k.norm(2, -1);
      for (int64_t h = 0; h < 2; ++h) {
        EXPECT_NEAR(views[size_t(h)].q_norm, p.q[h][11].norm().item<double>() / 2.0, 1e-12);
        for (int64_t j = 0; j < 12; ++j) {
          EXPECT_NEAR(views[size_t(h)].weight[size_t(j)], weights[h][11][j].item<double>(), 1e-12);
          EXPECT_NEAR(views[size_t(h)].mass[size_t(j)], mass[h][j].item<double>(), 1e-12);
          EXPECT_NEAR(views[size_t(h)].key_norm[size_t(j)], norms[h][j].item<double>(), 1e-12);
        }
      }
      // Evict every other key; the kept keys carry their mass, later queries add to it.
      cache.keep({{1, 3, 5, 7, 9, 11}, {0, 2, 4, 6, 8, 10, 11}});
      const auto after = cache.views(all);
      EXPECT_NEAR(after[1].mass[6], mass[1][11].item<double>(), 1e-12);
      EXPECT_NEAR(after[0].mass[2], mass[0][5].item<double>(), 1e-12);
      cache.reset_mass();
      EXPECT_EQ(cache.views(all)[0].mass, std::vector<double>(6, 0.0));
    }
  KvCache untracked(Variant::Fpa, 1, 4, 4, at::kDouble);
  CacheSignals mass;
  mass.mass = true;
  EXPECT_THROW(untracked.views(mass), std::invalid_argument);  // asked for, never tracked
}

TEST(KvCache, RejectsBadInput) {
  KvCache cache(Variant::Fpa, 2, 4, 4, at::kDouble);
  AttentionOptions opts;
  opts.variant = Variant::Fpa;
  const auto x = at::zeros({2, 1, 4}, at::kDouble);
  EXPECT_THROW(attention_step(x, x, x, at::Tensor(), cache, opts), std::invalid_argument);
  opts.variant = Variant::Fox;
  EXPECT_THROW(attention_step(x, x, x, at::zeros({2, 1}, at::kDouble), cache, opts),
               std::invalid_argument);
  opts.variant = Variant::Fpa;
  opts.scale = std::numeric_limits<double>::infinity();  // NaN logits, refused
  EXPECT_THROW(attention_step(x, x, x, at::zeros({2, 1}, at::kDouble), cache, opts),
               std::invalid_argument);
  opts.scale = 0;
  attention_step(x, x, x, at::zeros({2, 1}, at::kDouble), cache, opts);
  EXPECT_THROW(cache.keep({{1}, {0}}), std::invalid_argument);  // index past the entries
  EXPECT_THROW(cache.keep({{0}}), std::invalid_argument);       // one list per head
}

RC_GTEST_PROP(KvCacheProperty, DecodingEqualsFullOperatorOnKeptKeys, ()) {
  const auto variant = *rc::gen::element(Variant::Softmax, Variant::Fox, Variant::Fpa);
  const auto impl = *rc::gen::element(Impl::Reference, Impl::Fused);
  const int64_t heads = *rc::gen::inRange<int64_t>(1, 4);
  const int64_t n = *rc::gen::inRange<int64_t>(1, 50);
  const int64_t d = *rc::gen::element<int64_t>(1, 3, 8, 16);
  const auto dtype = *rc::gen::element(at::kDouble, at::kFloat);
  const auto chunks = *rc::gen::nonEmpty(rc::gen::container<std::vector<int64_t>>(
      rc::gen::inRange<int64_t>(1, 9)));
  const double keep_p = *rc::gen::element(1.0, 0.8, 0.3);
  const uint64_t seed = *rc::gen::inRange<uint64_t>(0, 1000000);
  const bool tensor_ops = *rc::gen::arbitrary<bool>();
  const double err = decode_error(variant, impl, heads, n, d, chunks, keep_p, seed, dtype, tensor_ops);
  RC_LOG() << to_string(variant) << " " << to_string(impl) << (tensor_ops ? " tensor" : "") << " H " << heads << " N " << n
           << " D " << d << " keep " << keep_p << " seed " << seed << " "
           << c10::toString(dtype) << ": " << err << "\n";
  RC_ASSERT(err < (dtype == at::kDouble ? 1e-10 : 2e-5));
}

}  // namespace
}  // namespace fpa
