// A short training run: FPA learns the target sets from its default initialisation.
#include "synthetic/run_options.h"
#include "synthetic/train.h"
#include "experiments/torch_runtime.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace syn = fpa::synthetic;

namespace {

syn::RunConfig small(const std::string& task, const std::string& model, const std::string& grad) {
  return syn::run_config_from_args({"--task", task, "--variant", model, "--fpa-backward", grad,
                                    "--impl", "reference", "--length", "32", "--batch", "16",
                                    "--steps", "150", "--warmup", "20", "--eval-every", "50",
                                    "--eval-seqs", "64", "--seed", "0"});
}

syn::RunResult train(const syn::RunConfig& c) {
  fpa::seed_everything(c.seed);
  fpa::set_threads(1);
  syn::TargetSetModel model(c.model);
  return syn::train_run(c, model);
}

}  // namespace

// synthetic-run trains on the suite's one schedule (experiments/train_loop.h; its shape is
// tested in test_lm_model.cpp): --lr-final is its floor, and the curve's lr column is the rate
// of the step before each point.
TEST(SyntheticTrain, TrainsOnTheSuitesSchedule) {
  auto c = small("dips", "fpa", "exact");
  c.steps = 20;
  c.warmup = 5;
  c.eval_every = 5;
  EXPECT_EQ(c.min_lr_ratio, 0.1);  // --lr-final's default
  EXPECT_EQ(c.clip, 0);            // no clipping, as every published synthetic run
  const auto r = train(c);
  ASSERT_EQ(r.curve.size(), 5u);
  for (const auto& p : r.curve)
    if (p.step > 0) EXPECT_EQ(p.lr, fpa::learning_rate(c, p.step - 1)) << p.step;
  // The last point (step 19 of 20) is on the cosine, just above its floor.
  EXPECT_LT(r.curve.back().lr, 0.15 * c.lr);
  EXPECT_GT(r.curve.back().lr, c.lr * c.min_lr_ratio);
}

TEST(SyntheticTrain, FpaLearnsBracketsFromDefaultInitialisation) {
  for (const auto* grad : {"exact", "straight-through"}) {
    const auto r = train(small("brackets", "fpa", grad));
    ASSERT_EQ(r.curve.size(), 4u);
    // At initialisation the readout is useless (normalised MSE far above 1) ...
    EXPECT_GT(r.curve.front().held_out.nmse, 1.0) << grad;
    // ... and after 150 steps of n = 32 the run meets the convergence criterion at n.
    EXPECT_TRUE(syn::converged(r.final_n))
        << grad << ": mass " << r.final_n.mass << " nmse " << r.final_n.nmse;
    EXPECT_GE(r.steps_to_converge, 50) << grad;
    EXPECT_GT(r.final_2n.mass, 0.9) << grad;
  }
}

TEST(SyntheticTrain, SameSeedSameResult) {
  auto c = small("erase", "fox", "exact");
  c.steps = 10;
  c.eval_every = 10;
  const auto a = train(c), b = train(c);
  EXPECT_EQ(a.final_n.mse, b.final_n.mse);
  EXPECT_EQ(a.final_2n.mass, b.final_2n.mass);
}

TEST(SyntheticTrain, ConfigKeyChangesWithEveryResultDeterminingOption) {
  const auto base = syn::config_key(small("dips", "fpa", "exact"));
  EXPECT_NE(base, syn::config_key(small("dips", "fpa", "straight-through")));
  EXPECT_NE(base, syn::config_key(small("erase", "fpa", "exact")));
  auto c = small("dips", "fpa", "exact");
  c.seed = 1;
  EXPECT_NE(base, syn::config_key(c));
  EXPECT_EQ(base, syn::config_key(small("dips", "fpa", "exact")));
  // Every setting of the field table but the implementation is part of the key (the flag name).
  const std::vector<std::pair<std::string, std::string>> changed = {
      {"variant", "fox"}, {"st-temperature", "0.5"}, {"heads", "2"}, {"head-dim", "4"},
      {"hidden", "16"}, {"payload-values", "8"}, {"payload-dim", "4"}, {"increment-bias-init", "-2"},
      {"fox-gate-bias-init", "3"}, {"length", "16"}, {"batch", "8"}, {"steps", "100"}, {"lr", "0.02"},
      {"warmup", "10"}, {"lr-final", "0.2"}, {"weight-decay", "0"}, {"eval-every", "25"},
      {"eval-seqs", "32"}};
  const std::map<std::string, std::string> flags = {
      {"task", "dips"}, {"variant", "fpa"}, {"fpa-backward", "exact"}, {"impl", "reference"},
      {"length", "32"}, {"batch", "16"}, {"steps", "150"}, {"warmup", "20"}, {"eval-every", "50"},
      {"eval-seqs", "64"}, {"seed", "0"}};
  auto key_with = [&](const std::string& flag, const std::string& value) {
    auto f = flags;
    f[flag] = value;
    std::vector<std::string> args;
    for (const auto& [k, v] : f) args.insert(args.end(), {"--" + k, v});
    return syn::config_key(syn::run_config_from_args(args));
  };
  ASSERT_EQ(base, key_with("seed", "0"));
  for (const auto& [flag, value] : changed) {
    const auto key = key_with(flag, value);
    EXPECT_NE(base, key) << flag;
    EXPECT_NE(key.find(" " + flag + "=" + value + " "), std::string::npos) << key;
  }
  // The implementation is how a run executes, not what it computes: not in the key.
  EXPECT_EQ(base, key_with("impl", "fused"));
}
