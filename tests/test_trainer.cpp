// The one training loop (experiments/train_loop.h) with passkey-train's task: what lm-train's tests
// check for the text task (tests/test_lm_train.cpp) holds for this study too: a NaN loss stops
// before the optimiser step and keeps the last good checkpoint, a killed run resumes to the
// uninterrupted run's weights, and a run that reached its goal has nothing to do when resumed;
// a resumed run's sidecar lists the invocations that trained it before.
#include "experiments/atomic_file.h"
#include "experiments/cli.h"
#include "experiments/provenance.h"
#include "lm/checkpoint.h"
#include "lm/passkey/train_task.h"
#include "experiments/train_loop.h"
#include "lm/optimizer.h"
#include "test_lm_util.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace fs = std::filesystem;
using namespace fpa;
using namespace fpa::lm;

namespace {

constexpr int64_t kLength = 260;

struct PasskeyRun {
  ModelConfig model;
  TrainConfig train;
  passkey::PromptConfig prompt;
  passkey::TaskOptions task;
  passkey::HeldOutSet heldout;

  explicit PasskeyRun(int64_t steps, int64_t check_every) {
    model = lmtest::micro_model(AttentionKind::Fpa);
    model.context = kLength;
    train = lmtest::micro_train(steps);
    train.batch = 2;
    train.checkpoint_every = 2;
    task.final_length = kLength;
    task.batch = train.batch;
    task.check_every = check_every;
    if (check_every > 0) heldout = passkey::make_heldout(prompt, kLength, 3, 99);
  }

  // Trains from seed 5 in `dir`; the settings tweak the run (resume, faults).
  TrainOutcome operator()(const std::string& dir, TrainRun run) {
    torch::manual_seed(5);
    passkey::BatchMaker data(prompt, kLength, train.batch, 0.0, {}, 17);
    LanguageModel m(model);
    passkey::PasskeyTask t(task, m, data, heldout);
    auto optimizer = make_optimizer(m, train);
    CheckpointFormat checkpoints(m, *optimizer, "");
    run.tool = "test";
    run.out_dir = dir;
    run.log_name = "train_log.csv";
    run.show_progress = false;
    run.checkpoint_every = train.checkpoint_every;
    SingleProcess one;
    return fpa::train({*m, *optimizer, &checkpoints}, train, t, run, one);
  }
};

}  // namespace

TEST(OneTrainer, PasskeyNanLossStopsAndKeepsTheLastGoodCheckpoint) {
  const auto dir = lmtest::make_temp_dir("pk-nan");
  PasskeyRun run(6, 0);
  TrainRun s;
  s.fault_nan_at_step = 3;
  const auto r = run(dir, s);
  EXPECT_TRUE(r.diverged);
  EXPECT_NE(r.message.find("step 3"), std::string::npos) << r.message;
  const auto saved = load_model(dir);
  EXPECT_EQ(saved.step, 2);
  for (const auto& p : saved.model->parameters()) EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
  fs::remove_all(dir);
}

TEST(OneTrainer, PasskeyKilledAndResumedEqualsUninterrupted) {
  const auto whole = lmtest::make_temp_dir("pk-whole"), split = lmtest::make_temp_dir("pk-split");
  PasskeyRun run(5, 0);
  EXPECT_EQ(run(whole, {}).steps_done, 5);
  TrainRun killed;
  killed.kill_after_steps = 3;  // the last checkpoint is step 2
  run(split, killed);
  EXPECT_EQ(load_model(split).step, 2);
  EXPECT_THROW(run(split, {}), std::runtime_error);  // an existing run without resume
  TrainRun resume;
  resume.resume = true;
  EXPECT_EQ(run(split, resume).steps_done, 5);
  auto a = load_model(whole), b = load_model(split);
  const auto pa = a.model->named_parameters(), pb = b.model->named_parameters();
  for (const auto& item : pa) EXPECT_TRUE(item.value().equal(pb[item.key()])) << item.key();
  fs::remove_all(whole);
  fs::remove_all(split);
}

TEST(OneTrainer, PasskeyGoalStopsTheRunAndAResumeHasNothingToDo) {
  const auto dir = lmtest::make_temp_dir("pk-goal");
  PasskeyRun run(8, 2);
  run.task.learned_accuracy = 0;  // the first check passes
  run.task.stop_when_learned = true;
  const auto first = run(dir, {});
  EXPECT_EQ(first.steps_done, 2);
  EXPECT_EQ(load_model(dir).step, 2);
  TrainRun resume;
  resume.resume = true;
  const auto again = run(dir, resume);
  EXPECT_EQ(again.steps_done, 2);
  EXPECT_EQ(again.nothing_to_do, "learned the task at step 2");
  fs::remove_all(dir);
}

// Sessions of this project resume runs on whichever machine they get: a run resumed by other code
// or on another kind of CPU says so, and its sidecar keeps every invocation that trained it.
TEST(OneTrainer, AResumedRunListsTheInvocationsThatTrainedItBefore) {
  const auto dir = lmtest::make_temp_dir("pk-invocations");
  const auto sidecar = dir + "/train_log.csv.json";
  PasskeyRun run(8, 0);
  Cli cli("passkey-train", "test", "out.csv");
  char name[] = "passkey-train";
  char* argv[] = {name};
  cli.parse(1, argv);
  const auto part = [&](int64_t kill_after) {
    TrainRun r;
    r.resume = true;
    r.kill_after_steps = kill_after;
    r.provenance = [&cli] { return Provenance::from(cli).to_json(); };
    testing::internal::CaptureStderr();
    run(dir, r);
    return testing::internal::GetCapturedStderr();
  };
  part(3);                                 // invocation 1: checkpoint at step 2, then killed
  EXPECT_EQ(invocations_in_sidecar(read_file(sidecar)).size(), 1u);
  EXPECT_EQ(read_file(sidecar).find("resumed_from"), std::string::npos);  // never resumed yet
  const auto second = part(5);             // invocation 2, here: checkpoint at step 4
  EXPECT_EQ(second.find("note:"), std::string::npos) << second;
  auto text = read_file(sidecar);
  ASSERT_EQ(invocations_in_sidecar(text).size(), 2u);  // invocation 1 listed, 2 on top
  // As if invocation 2 had run on another kind of CPU, with a vendor no real CPU reports: a real
  // one (GenuineIntel) made the test fail on that vendor's machines, where invocations 1 and 3
  // name it too.
  const auto at = text.find("\"machine\": {");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, text.find('}', at) + 1 - at,
               "\"machine\": {\"cpu_model\": \"Test CPU\", \"cpu_id\": \"TestVendor family 6 "
               "model 143\", \"simd\": \"avx512f\"}");
  write_file_atomic(sidecar, text);
  const auto third = part(-1);             // invocation 3, here, to the end
  EXPECT_NE(third.find("note: 1 of the 2 earlier invocation(s)"), std::string::npos) << third;
  EXPECT_NE(third.find("#2 (started "), std::string::npos) << third;
  EXPECT_NE(third.find("TestVendor family 6 model 143 [avx512f]"), std::string::npos) << third;
  const auto last = invocations_in_sidecar(read_file(sidecar));
  ASSERT_EQ(last.size(), 3u);
  EXPECT_NE(last[1].find("TestVendor"), std::string::npos);
  EXPECT_EQ(last[0].find("TestVendor"), std::string::npos);
  EXPECT_NE(last[2].find(code_version()), std::string::npos);
  EXPECT_EQ(load_model(dir).step, 8);
  fs::remove_all(dir);
}
