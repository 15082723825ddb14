// Incremental decoding (lm/decode.h) equals the full forward pass; eviction through a policy
// changes outputs by no more than the T5 bound allows; a passkey prompt runs under every policy.
#include "lm/cache/policy.h"
#include "lm/decode.h"
#include "lm/model.h"
#include "lm/passkey/evaluate.h"

#include "experiments/usage_error.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>

using namespace fpa;
using namespace fpa::lm;

namespace {

// The largest |a - b|, infinite where it is NaN (std::max would drop a NaN, and a NaN step pass).
double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  const double d = (a - b).abs().max().item<double>();
  return std::isnan(d) ? HUGE_VAL : d;
}

// A tiny random model. The gate projections get large weights so that FPA's field goes up and
// down (non-monotone: FPA differs from FoX) and FoX's gates vary.
LanguageModel tiny_model(AttentionKind kind, at::ScalarType dtype, double gate_std = 1.0) {
  torch::manual_seed(7);
  ModelConfig c;
  c.kind = kind;
  c.hidden = 32;
  c.heads = 4;
  c.layers = 2;
  c.context = 64;
  LanguageModel m(c);
  torch::NoGradGuard g;
  for (auto& b : m->blocks)
    if (b->attn->gate_proj) {
      b->attn->gate_proj->weight.normal_(0.0, gate_std);
      b->attn->gate_proj->bias.normal_(0.0, 0.5);
    }
  m->to(dtype);
  m->eval();
  return m;
}

at::Tensor random_tokens(int64_t n) { return at::randint(0, 256, {n}, at::kLong); }

std::unique_ptr<cache::Policy> policy_named(const std::string& name, double budget = 0.25,
                                            double epsilon = 1e-3) {
  cache::Settings s;
  s.budget = budget;
  s.epsilon = epsilon;
  return cache::make_policy(name, s);
}

// A policy's choice on the decoder's current cache.
cache::Keep choose(const cache::Policy& p, const IncrementalDecoder& d, int64_t final_length) {
  const auto views = d.views(p.reads());
  return cache::select_checked(p, cache::Context{views, d.length() - 1, final_length, 0, {}});
}

const AttentionKind kKinds[] = {AttentionKind::Fpa, AttentionKind::Fox, AttentionKind::Transformer,
                                AttentionKind::SoftmaxNope};

}  // namespace

// Tolerance: 1e-9 in float64 (the two paths sum in different orders), 2e-4 in float32.
TEST(PasskeyDecode, TokenByTokenEqualsFullForward) {
  for (auto dtype : {at::kDouble, at::kFloat}) {
    const double tol = dtype == at::kDouble ? 1e-9 : 2e-4;
    for (auto kind : kKinds) {
      auto model = tiny_model(kind, dtype);
      const auto tokens = random_tokens(48);
      at::Tensor full;
      {
        torch::NoGradGuard g;
        full = model->forward(tokens.unsqueeze(0))[0];
      }
      // Both implementations of the cached operator (kernels/cpu/kv_cache.h).
      for (auto impl : {fpa::Impl::Reference, fpa::Impl::Fused}) {
        IncrementalDecoder dec(model, impl);
        std::vector<at::Tensor> rows;
        for (int64_t t = 0; t < tokens.size(0); ++t) rows.push_back(dec.step(tokens.slice(0, t, t + 1)));
        const double err = (at::cat(rows, 0) - full).abs().max().item<double>();
        EXPECT_LT(err, tol) << to_string(kind) << " " << c10::toString(dtype) << " "
                            << fpa::to_string(impl);
      }
      // Chunks of uneven sizes give the same logits.
      IncrementalDecoder dec(model);
      std::vector<at::Tensor> rows;
      for (int64_t s = 0; s < tokens.size(0); s += 11) rows.push_back(dec.step(tokens.slice(0, s, std::min<int64_t>(s + 11, 48))));
      EXPECT_LT((at::cat(rows, 0) - full).abs().max().item<double>(), tol) << to_string(kind);
      EXPECT_EQ(dec.cached_entries(), 48 * 2 * 4);
    }
  }
}

TEST(PasskeyDecode, ViewsReportBiasesOfTheCache) {
  auto model = tiny_model(AttentionKind::Fpa, at::kDouble);
  const auto tokens = random_tokens(20);
  IncrementalDecoder dec(model);
  dec.step(tokens);
  const auto views = dec.views();
  ASSERT_EQ(views.size(), 8u);
  // The bias of the first layer's keys at the last query, against the operator's bias matrix.
  auto& a = *model->blocks[0]->attn;
  torch::NoGradGuard g;
  auto x = model->blocks[0]->attn_norm(model->embed(tokens.unsqueeze(0)));
  auto bias = fpa::fpa_bias(a.operator_gate(a.token_gate(x)))[0];  // (H, N, N)
  for (int h = 0; h < 4; ++h) {
    ASSERT_EQ(views[size_t(h)].position.size(), 20u);
    EXPECT_GT(views[size_t(h)].r, 0.0);
    for (int j = 0; j < 20; ++j)
      EXPECT_NEAR(views[size_t(h)].bias[size_t(j)], bias[h][19][j].item<double>(), 1e-9);
  }
}

// Certified eviction with a small epsilon: entries are dropped, and the logits stay close to the
// full cache's (T5 bounds each layer's attention output change by 2 epsilon V).
TEST(PasskeyDecode, CertifiedEvictionDropsKeysAndKeepsOutputs) {
  auto model = tiny_model(AttentionKind::Fpa, at::kDouble, 3.0);
  const auto tokens = random_tokens(96);
  IncrementalDecoder full(model), pruned(model);
  const auto policy = policy_named("fpa-certified", 0.25, 1e-6);
  double worst = 0;
  for (int64_t t = 0; t < 96; ++t) {
    const auto a = full.step(tokens.slice(0, t, t + 1));
    const auto b = pruned.step(tokens.slice(0, t, t + 1));
    worst = std::max(worst, max_abs_diff(a, b));
    pruned.keep(choose(*policy, pruned, 96));
  }
  EXPECT_LT(pruned.cached_entries(), full.cached_entries() * 9 / 10);  // something was evicted
  EXPECT_LT(worst, 1e-3);
}

// A whole passkey prompt under each policy on an untrained tiny model: the mechanics (answer
// length, achieved occupancy), not the accuracy.
TEST(PasskeyDecode, PromptUnderEveryPolicy) {
  auto model = tiny_model(AttentionKind::Fpa, at::kFloat);
  passkey::PromptConfig pc;
  const auto prompt = passkey::make_prompt(pc, 600, 0.5, "12345");
  IncrementalDecoder dec(model);
  for (const auto& reg : cache::registry()) {
    const auto policy = policy_named(reg.name);
    passkey::DecodeSchedule schedule;
    schedule.chunk = 64;
    schedule.evict_every = 16;
    schedule.timed_tokens = 100;
    const std::vector<double> scores(size_t(dec.heads()), 0.5);
    const auto r = passkey::run_prompt(dec, prompt, *policy,
                                       policy->needs_head_scores() ? scores : std::vector<double>{},
                                       schedule);
    EXPECT_EQ(r.generated.size(), 5u);
    if (reg.name == "full") EXPECT_DOUBLE_EQ(r.occupancy, 1.0);
    // Within budget at every answer query; at most 16 tokens' worth (16 x 0.75 / 600) below it.
    if (policy->budgeted() && reg.name.rfind("duo-", 0) != 0) {
      EXPECT_LE(r.occupancy, 0.25 + 1e-9) << reg.name;
      EXPECT_GE(r.occupancy, 0.25 - 0.025) << reg.name;
    }
  }
}

// SnapKV's observed queries must be decoded one at a time: observe < timed tokens (and < the
// prompt's length). One check (check_observe_window) that run_prompt makes for every caller, with
// passkey-eval's message (a UsageError: exit 2 there); other policies are not concerned.
TEST(PasskeyDecode, ObserveWindowMustLieInTheSingleTokenTail) {
  cache::Settings s;
  s.observe = 8;
  const auto snapkv = cache::make_policy("snapkv", s), window = cache::make_policy("window", s);
  passkey::DecodeSchedule schedule;
  schedule.timed_tokens = 9;
  EXPECT_NO_THROW(passkey::check_observe_window(schedule, *snapkv));
  EXPECT_NO_THROW(passkey::check_observe_window(schedule, *snapkv, 9));
  EXPECT_THROW(passkey::check_observe_window(schedule, *snapkv, 8), UsageError);
  schedule.timed_tokens = 8;
  try {
    passkey::check_observe_window(schedule, *snapkv);
    ADD_FAILURE() << "observe 8 with 8 timed tokens passed";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--observe must be smaller than --timed-tokens (snapkv observes the "
                           "single-token tail)");
  }
  EXPECT_NO_THROW(passkey::check_observe_window(schedule, *window, 1));
  // run_prompt refuses before decoding anything.
  auto model = tiny_model(AttentionKind::Fpa, at::kFloat);
  IncrementalDecoder dec(model);
  const auto prompt = passkey::make_prompt(passkey::PromptConfig{}, 600, 0.5, "12345");
  EXPECT_THROW(passkey::run_prompt(dec, prompt, *snapkv, {}, schedule), UsageError);
  EXPECT_EQ(dec.length(), 0);
  // At the limit, observe = timed tokens - 1, the observed queries are the single-token steps
  // before the last: the prompt runs, and its one eviction compresses the cache.
  schedule.timed_tokens = 9;
  const auto r = passkey::run_prompt(dec, prompt, *snapkv, {}, schedule);
  EXPECT_EQ(r.generated.size(), 5u);
  EXPECT_LT(r.occupancy, 1.0);
}

// The certified policy's occupancy follows the field: with constant increments (weights 0) a
// rising field keeps every key alive (occupancy exactly 1), a steeply falling one leaves only the
// keys since the last eviction (at most 16 + a few of 600 at each answer query).
TEST(PasskeyDecode, CertifiedOccupancyFollowsTheField) {
  passkey::PromptConfig pc;
  const auto prompt = passkey::make_prompt(pc, 600, 0.5, "12345");
  const auto policy = policy_named("fpa-certified");
  passkey::DecodeSchedule schedule;
  schedule.chunk = 64;
  schedule.evict_every = 16;
  schedule.timed_tokens = 100;
  for (double increment : {2.0, -30.0}) {
    auto model = tiny_model(AttentionKind::Fpa, at::kFloat);
    {
      torch::NoGradGuard g;
      for (auto& b : model->blocks) {
        b->attn->gate_proj->weight.zero_();
        b->attn->gate_proj->bias.fill_(increment);
      }
    }
    IncrementalDecoder dec(model);
    const auto r = passkey::run_prompt(dec, prompt, *policy, {}, schedule);
    if (increment > 0) EXPECT_DOUBLE_EQ(r.occupancy, 1.0);
    else EXPECT_LT(r.occupancy, 0.06);
  }
}

// The fused single-token step (lm/token_step.h, float32) against the module path with the
// reference operator, with evictions: the same keys kept, the same logits up to float32 rounding.
TEST(PasskeyDecode, FusedTokenStepEqualsModulePathWithEvictions) {
  for (auto kind : kKinds) {
    auto model = tiny_model(kind, at::kFloat, 3.0);
    const auto tokens = random_tokens(80);
    IncrementalDecoder fused(model, fpa::Impl::Fused), modules(model, fpa::Impl::Reference);
    const auto policy = policy_named("budget", 0.5);
    double worst = 0;
    for (int64_t t = 0; t < 80; ++t) {
      const auto a = fused.step(tokens.slice(0, t, t + 1));
      const auto b = modules.step(tokens.slice(0, t, t + 1));
      worst = std::max(worst, max_abs_diff(a, b));
      if (t % 8 == 7) {  // the module path's choice, applied to both
        const auto keep = choose(*policy, modules, 80);
        fused.keep(keep);
        modules.keep(keep);
      }
    }
    EXPECT_LT(fused.cached_entries(), 80 * 2 * 4);  // something was evicted
    EXPECT_LT(worst, 2e-4) << to_string(kind);
  }
}

// step_token (one token, float32 logits, no tensor operator on the fused float32 path) gives the
// logits step() gives for the same token, for every variant, dtype and implementation.
TEST(PasskeyDecode, StepTokenEqualsStep) {
  for (auto dtype : {at::kFloat, at::kDouble})
    for (auto kind : kKinds)
      for (auto impl : {fpa::Impl::Reference, fpa::Impl::Fused}) {
        auto model = tiny_model(kind, dtype, 3.0);
        const auto tokens = random_tokens(40);
        IncrementalDecoder by_tensor(model, impl), by_token(model, impl);
        for (int64_t t = 0; t < 40; ++t) {
          const auto a = by_tensor.step(tokens.slice(0, t, t + 1))[0].to(at::kFloat).contiguous();
          const auto& b = by_token.step_token(tokens[t].item<int64_t>());
          ASSERT_EQ(int64_t(b.size()), a.numel());
          ASSERT_TRUE(std::equal(b.begin(), b.end(), a.data_ptr<float>()))
              << to_string(kind) << " " << c10::toString(dtype) << " " << fpa::to_string(impl)
              << " token " << t;
        }
        EXPECT_EQ(by_token.length(), 40);
        EXPECT_EQ(by_token.cached_entries(), by_tensor.cached_entries());
      }
}

// Views without R: the same positions and biases, R NaN, and the policy that reads R refuses
// them instead of using a made-up value.
TEST(PasskeyDecode, ViewsWithoutRAreRefusedByTheCertifiedPolicy) {
  auto model = tiny_model(AttentionKind::Fpa, at::kFloat, 3.0);
  IncrementalDecoder dec(model);
  dec.step(random_tokens(30));
  const auto with = dec.views(), without = dec.views(false);
  ASSERT_EQ(with.size(), without.size());
  EXPECT_EQ(int64_t(without.size()), dec.heads());
  for (size_t h = 0; h < with.size(); ++h) {
    EXPECT_EQ(with[h].position, without[h].position);
    EXPECT_EQ(with[h].bias, without[h].bias);
    EXPECT_GT(with[h].r, 0.0);
    EXPECT_TRUE(std::isnan(without[h].r));
  }
  const auto certified = policy_named("fpa-certified"), budget = policy_named("budget");
  EXPECT_TRUE(certified->reads().r);
  EXPECT_THROW(cache::select_checked(*certified, cache::Context{without, 29, 30, 0, {}}),
               std::invalid_argument);
  EXPECT_FALSE(budget->reads().r);
  EXPECT_EQ(cache::select_checked(*budget, cache::Context{without, 29, 30, 0, {}}),
            cache::select_checked(*budget, cache::Context{with, 29, 30, 0, {}}));
}

// The tensor path of the KV cache (kernels/cpu/kv_cache.h: what a model on a GPU decodes with),
// forced on the CPU: token by token, in chunks and through step_token it equals the full forward
// pass (1e-9 in float64, 2e-4 in float32, the bounds of the CPU paths above).
TEST(PasskeyDecodeTensorCache, EqualsFullForward) {
  for (auto dtype : {at::kDouble, at::kFloat}) {
    const double tol = dtype == at::kDouble ? 1e-9 : 2e-4;
    for (auto kind : kKinds) {
      auto model = tiny_model(kind, dtype);
      const auto tokens = random_tokens(48);
      at::Tensor full;
      {
        torch::NoGradGuard g;
        full = model->forward(tokens.unsqueeze(0))[0];
      }
      IncrementalDecoder by_token(model, fpa::Impl::Fused, true), chunks(model, fpa::Impl::Fused, true),
          floats(model, fpa::Impl::Fused, true);
      std::vector<at::Tensor> rows, chunk_rows;
      double worst_token = 0;
      for (int64_t t = 0; t < 48; ++t) {
        rows.push_back(by_token.step(tokens.slice(0, t, t + 1)));
        const auto& f = floats.step_token(tokens[t].item<int64_t>());
        const auto expect = full[t].to(at::kFloat).contiguous();
        for (size_t i = 0; i < f.size(); ++i)
          worst_token = std::max(worst_token, double(std::abs(f[i] - expect.data_ptr<float>()[i])));
      }
      for (int64_t s = 0; s < 48; s += 11)
        chunk_rows.push_back(chunks.step(tokens.slice(0, s, std::min<int64_t>(s + 11, 48))));
      EXPECT_LT((at::cat(rows, 0) - full).abs().max().item<double>(), tol) << to_string(kind);
      EXPECT_LT((at::cat(chunk_rows, 0) - full).abs().max().item<double>(), tol) << to_string(kind);
      EXPECT_LT(worst_token, 2e-4) << to_string(kind);
      EXPECT_EQ(chunks.cached_entries(), 48 * 2 * 4);
    }
  }
}

// The tensor path against the CPU's fused path (lm/token_step.h's raw rows, the published
// path) in float32 under evicting policies, each reading its own signals (bias, R, weights, the
// tracked mass, key norms): the fused decoder's choice applied to both, the logits within 2e-4 at
// every token, the policies' views close (biases 1e-4: the float32 field, a few ulps of its
// level, whose projection is summed in another order; R, weights, norms 1e-3), the same entries kept.
TEST(PasskeyDecodeTensorCache, MatchesFusedPathUnderPolicies) {
  for (auto kind : {AttentionKind::Fpa, AttentionKind::Fox, AttentionKind::Transformer})
    for (const std::string name : {"fpa-certified", "budget", "window", "h2o", "tova", "knorm"}) {
      if (name == "fpa-certified" && kind == AttentionKind::Transformer) continue;
      auto model = tiny_model(kind, at::kFloat, 3.0);
      const auto tokens = random_tokens(80);
      IncrementalDecoder fused(model), tens(model, fpa::Impl::Fused, true);
      const auto policy = policy_named(name, 0.5, 1e-3);
      fused.track_mass(policy->reads().mass);
      tens.track_mass(policy->reads().mass);
      fused.reset();
      tens.reset();
      double worst = 0;
      for (int64_t t = 0; t < 80; ++t) {
        const auto a = fused.step_token(tokens[t].item<int64_t>());
        const auto& b = tens.step_token(tokens[t].item<int64_t>());
        for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::abs(a[i] - b[i])));
        if (t % 8 == 7) {
          const auto va = fused.views(policy->reads()), vb = tens.views(policy->reads());
          for (size_t h = 0; h < va.size(); ++h) {
            ASSERT_EQ(va[h].position, vb[h].position);
            for (size_t j = 0; j < va[h].bias.size(); ++j)
              EXPECT_NEAR(va[h].bias[j], vb[h].bias[j], 1e-4) << name;
            if (policy->reads().r) EXPECT_NEAR(va[h].r, vb[h].r, 1e-3 * std::max(1.0, va[h].r));
            for (size_t j = 0; j < va[h].weight.size(); ++j)
              EXPECT_NEAR(va[h].weight[j], vb[h].weight[j], 1e-3) << name;
            for (size_t j = 0; j < va[h].mass.size(); ++j)
              EXPECT_NEAR(va[h].mass[j], vb[h].mass[j], 1e-3) << name;
            for (size_t j = 0; j < va[h].key_norm.size(); ++j)
              EXPECT_NEAR(va[h].key_norm[j], vb[h].key_norm[j], 1e-3 * std::max(1.0, va[h].key_norm[j]));
          }
          const auto keep = choose(*policy, fused, 80);
          fused.keep(keep);
          tens.keep(keep);
        }
      }
      EXPECT_EQ(fused.cached_entries(), tens.cached_entries());
      if (name != "fpa-certified") EXPECT_LT(fused.cached_entries(), 80 * 2 * 4) << name;
      EXPECT_LT(worst, 2e-4) << to_string(kind) << " " << name;
    }
}

// A whole passkey prompt under every policy with the tensor cache: the mechanics of
// PromptUnderEveryPolicy (answer length, occupancy within budget).
TEST(PasskeyDecodeTensorCache, PromptUnderEveryPolicy) {
  auto model = tiny_model(AttentionKind::Fpa, at::kFloat);
  passkey::PromptConfig pc;
  const auto prompt = passkey::make_prompt(pc, 300, 0.5, "12345");
  IncrementalDecoder dec(model, fpa::Impl::Fused, true);
  for (const auto& reg : cache::registry()) {
    const auto policy = policy_named(reg.name);
    passkey::DecodeSchedule schedule;
    schedule.chunk = 64;
    schedule.evict_every = 16;
    schedule.timed_tokens = 100;
    const std::vector<double> scores(size_t(dec.heads()), 0.5);
    const auto r = passkey::run_prompt(dec, prompt, *policy,
                                       policy->needs_head_scores() ? scores : std::vector<double>{},
                                       schedule);
    EXPECT_EQ(r.generated.size(), 5u) << reg.name;
    if (reg.name == "full") EXPECT_DOUBLE_EQ(r.occupancy, 1.0);
    if (policy->budgeted() && reg.name.rfind("duo-", 0) != 0) {
      EXPECT_LE(r.occupancy, 0.25 + 1e-9) << reg.name;
      EXPECT_GE(r.occupancy, 0.25 - 0.05) << reg.name;
    }
  }
}
