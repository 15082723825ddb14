// Training: a killed-and-resumed run ends with the parameters of an uninterrupted one; a NaN
// loss stops the run and keeps the last good checkpoint.
#include "experiments/execution.h"
#include "lm/checkpoint.h"
#include "lm/settings.h"
#include "lm/distributed.h"
#include "lm/optimizer.h"
#include "lm/text_training.h"
#include "test_lm_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using namespace fpa::lm;

namespace {

TrainOptions micro_options(AttentionKind kind, const std::string& corpus, const std::string& out,
                           int64_t steps) {
  TrainOptions o;
  o.model = lmtest::micro_model(kind);
  o.train = lmtest::micro_train(steps);
  o.train.accum = 2;
  o.corpus_dir = corpus;
  o.run.out_dir = out;
  o.seed = 11;
  o.run.show_progress = false;
  return o;
}

void expect_same_parameters(const std::string& a, const std::string& b, bool bitwise) {
  auto ma = load_model(a), mb = load_model(b);
  const auto pa = ma.model->named_parameters(), pb = mb.model->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& item : pa) {
    const auto& other = pb[item.key()];
    if (bitwise)
      EXPECT_TRUE(item.value().equal(other)) << item.key();
    else
      EXPECT_TRUE(torch::allclose(item.value(), other, 1e-4, 1e-5)) << item.key();
  }
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

// The one optimiser set-up (lm/optimizer.h): weight decay on weight matrices, never on norms or
// biases, on the token embedding only when decay_embeddings (lm-train: yes; passkey-train: no).
TEST(LmTrain, OptimizerDecaysMatricesAndTheEmbeddingOnlyWhenAsked) {
  LanguageModel model(lmtest::micro_model(AttentionKind::Fpa));
  for (bool embeddings : {true, false}) {
    TrainConfig t = lmtest::micro_train(1);
    t.decay_embeddings = embeddings;
    const auto opt = make_optimizer(model, t);
    ASSERT_EQ(opt->param_groups().size(), 2u);
    const auto decayed = [&](const torch::Tensor& p) {
      for (const auto& q : opt->param_groups()[0].params())
        if (q.is_same(p)) return true;
      return false;
    };
    for (const auto& item : model->named_parameters()) {
      const bool embedding = item.key().find("embed") != std::string::npos;
      EXPECT_EQ(decayed(item.value()), item.value().dim() >= 2 && (embeddings || !embedding))
          << item.key() << " decay_embeddings " << embeddings;
    }
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(
        opt->param_groups()[0].options());
    EXPECT_EQ(options.weight_decay(), t.weight_decay);
    EXPECT_EQ(static_cast<const torch::optim::AdamWOptions&>(opt->param_groups()[1].options())
                  .weight_decay(), 0.0);
  }
}

TEST(LmTrain, KilledAndResumedEqualsUninterrupted) {
  const auto corpus = lmtest::make_corpus(20, 300, 5);
  auto comm = communicator_from_env();
  for (auto kind : {AttentionKind::Fpa, AttentionKind::Transformer}) {
    const auto whole = lmtest::make_temp_dir("whole"), split = lmtest::make_temp_dir("split");
    auto o = micro_options(kind, corpus, whole, 7);
    const auto full = train(o, *comm);
    ASSERT_FALSE(full.diverged);
    EXPECT_EQ(full.steps_done, 7);

    o.run.out_dir = split;
    o.run.kill_after_steps = 5;  // killed after step 5: the last checkpoint is step 4
    train(o, *comm);
    EXPECT_EQ(load_model(split).step, 4);
    o.run.kill_after_steps = -1;
    EXPECT_THROW(train(o, *comm), std::runtime_error);  // existing run without --resume
    o.run.resume = true;
    const auto resumed = train(o, *comm);
    EXPECT_EQ(resumed.steps_done, 7);
    expect_same_parameters(whole, split, /*bitwise=*/true);
    // The log of the resumed run has the same rows (elapsed time aside).
    auto strip_time = [](std::string csv) {
      std::string out, line;
      std::istringstream in(csv);
      while (std::getline(in, line)) out += line.substr(0, line.rfind(',')) + "\n";
      return out;
    };
    EXPECT_EQ(strip_time(read(whole + "/log.csv")), strip_time(read(split + "/log.csv")));
    fs::remove_all(whole);
    fs::remove_all(split);
  }
  fs::remove_all(corpus);
}

TEST(LmTrain, NanLossStopsAndKeepsTheLastGoodCheckpoint) {
  const auto corpus = lmtest::make_corpus(20, 300, 6);
  const auto out = lmtest::make_temp_dir("nan");
  auto comm = communicator_from_env();
  auto o = micro_options(AttentionKind::Fox, corpus, out, 8);
  o.run.fault_nan_at_step = 5;
  const auto r = train(o, *comm);
  EXPECT_TRUE(r.diverged);
  EXPECT_NE(r.message.find("nan"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("step 5"), std::string::npos) << r.message;
  const auto m = load_model(out);
  EXPECT_EQ(m.step, 4);
  for (const auto& p : m.model->parameters()) EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
  fs::remove_all(out);
  fs::remove_all(corpus);
}

TEST(LmTrain, CorruptCheckpointIsAClearError) {
  const auto dir = lmtest::make_temp_dir("corrupt");
  std::ofstream(checkpoint_path(dir)) << "not a checkpoint";
  try {
    load_model(dir);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

namespace {

// A checkpoint written entry by entry as save_checkpoint does, with the given configuration text
// and checksums (none: the format before checksums existed, which must still load).
void write_checkpoint_like(const std::string& path, LanguageModel& model, const std::string& config,
                           const std::string* checksums) {
  torch::serialize::OutputArchive archive, model_archive;
  model->save(model_archive);
  archive.write("model", model_archive);
  archive.write("config", c10::IValue(config));
  archive.write("step", c10::IValue(int64_t(3)));
  archive.write("tokens", c10::IValue(int64_t(30)));
  archive.write("elapsed_s", c10::IValue(1.0));
  archive.write("sampler_state", c10::IValue(std::string()));
  archive.write("log_rows", c10::IValue(std::string()));
  archive.write("train_time_s", c10::IValue(1.0));
  archive.write("preset", c10::IValue(std::string("tiny")));
  if (checksums) archive.write("checksums", c10::IValue(*checksums));
  archive.save_to(path);
}

std::string stored_checksums(const std::string& path) {
  torch::serialize::InputArchive in;
  in.load_from(path);
  c10::IValue v;
  EXPECT_TRUE(in.try_read("checksums", v));
  return v.toStringRef();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// Checkpoints: the current format stores a checksum of every tensor and of the configuration and
// names the file and the tensor that does not match; the earlier format (no checksums) loads.
TEST(LmCheckpoint, ChecksumsNameTheCorruptTensorAndOldFormatLoads) {
  const auto dir = lmtest::make_temp_dir("checksums");
  torch::manual_seed(1);
  LanguageModel model(lmtest::micro_model(AttentionKind::Fpa));
  torch::optim::AdamW opt(model->parameters());
  const auto good = dir + "/good.pt";
  save_checkpoint(good, model, opt, TrainProgress{});
  EXPECT_NO_THROW(load_model(good));
  const auto sums = stored_checksums(good);
  const auto config = model_text(model->config);

  const auto old = dir + "/old.pt";  // no checksums: loads, same weights
  write_checkpoint_like(old, model, config, nullptr);
  const auto loaded = load_model(old);
  for (const auto& p : model->named_parameters())
    EXPECT_TRUE(p.value().equal(loaded.model->named_parameters()[p.key()])) << p.key();

  {  // one weight changed after the checksums were taken
    torch::NoGradGuard g;
    model->blocks[0]->attn->q_proj->weight[0][0] += 1.0f;
  }
  const auto bad = dir + "/bad.pt";
  write_checkpoint_like(bad, model, config, &sums);
  auto what = error_of([&] { load_model(bad); });
  EXPECT_NE(what.find(bad), std::string::npos) << what;
  EXPECT_NE(what.find("block0.attn.q_proj.weight"), std::string::npos) << what;

  auto edited = config;  // the configuration edited (fpa -> fox), its checksum kept
  edited.replace(edited.find("kind = fpa"), 10, "kind = fox");
  const auto bad_config = dir + "/bad_config.pt";
  write_checkpoint_like(bad_config, model, edited, &sums);
  what = error_of([&] { load_model(bad_config); });
  EXPECT_NE(what.find("configuration does not match its checksum"), std::string::npos) << what;

  // Weights of another width under this configuration (old format: no checksum to catch it).
  auto wide_config = lmtest::micro_model(AttentionKind::Fpa);
  wide_config.hidden *= 2;
  const auto wide = dir + "/wide.pt";
  write_checkpoint_like(wide, model, model_text(wide_config), nullptr);
  what = error_of([&] { load_model(wide); });
  EXPECT_NE(what.find(wide), std::string::npos) << what;
  EXPECT_NE(what.find("has shape"), std::string::npos) << what;
  fs::remove_all(dir);
}

// --precision bf16 (experiments/execution.h): autocast to bfloat16 in the forward pass, float32
// weights, and the field and gates in float32. On the CPU the same steps give losses near the
// float32 run's but not equal to them (so autocast is on), and a killed bf16 run resumes to the
// uninterrupted one's parameters bit for bit.
TEST(LmTrain, Bf16AutocastKeepsFloat32WeightsAndFieldAndResumes) {
  const auto corpus = lmtest::make_corpus(20, 300, 5);
  auto comm = communicator_from_env();
  for (auto kind : {AttentionKind::Fpa, AttentionKind::Fox}) {
    const auto fp32 = lmtest::make_temp_dir("fp32"), bf16 = lmtest::make_temp_dir("bf16"),
               split = lmtest::make_temp_dir("bf16split");
    auto o = micro_options(kind, corpus, fp32, 6);
    const auto reference = train(o, *comm);
    o.run.out_dir = bf16;
    o.execution = fpa::resolve_execution("cpu", "bf16");
    const auto low = train(o, *comm);
    ASSERT_FALSE(low.diverged);
    auto losses = [](const std::string& rows) {
      std::vector<double> out;
      std::istringstream in(rows);
      for (std::string line; std::getline(in, line);)
        out.push_back(std::stod(line.substr(line.find(',', line.find(',') + 1) + 1)));
      return out;
    };
    const auto a = losses(reference.log_rows), b = losses(low.log_rows);
    ASSERT_EQ(a.size(), b.size());
    bool differs = false;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(a[i], b[i], 0.05 * a[i]) << to_string(kind) << " step " << i + 1;
      differs = differs || a[i] != b[i];
    }
    EXPECT_TRUE(differs) << "bf16 gave the float32 losses: autocast is off";
    auto loaded = load_model(bf16);
    for (const auto& p : loaded.model->parameters()) EXPECT_EQ(p.scalar_type(), at::kFloat);

    // Inside the autocast region the projections are bfloat16, the gate values float32.
    {
      fpa::AutocastScope autocast(o.execution);
      auto& attn = *loaded.model->blocks[0]->attn;
      const auto x = torch::randn({1, 5, loaded.config.hidden});
      EXPECT_EQ(attn.q_proj(x).scalar_type(), at::kBFloat16);
      EXPECT_EQ(attn.token_gate(x).scalar_type(), at::kFloat);
    }

    o.run.out_dir = split;
    o.run.kill_after_steps = 3;  // the last checkpoint is step 2
    train(o, *comm);
    o.run.kill_after_steps = -1;
    o.run.resume = true;
    train(o, *comm);
    expect_same_parameters(bf16, split, /*bitwise=*/true);
    for (const auto& d : {fp32, bf16, split}) fs::remove_all(d);
  }
  fs::remove_all(corpus);
}
