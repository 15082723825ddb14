// The field table (lm/settings.h): the checkpoint text it writes is the published format, every
// setting reads back what it wrote, the resume check compares identity only, and bad values name
// the setting.
#include "lm/settings.h"

#include <gtest/gtest.h>

using namespace fpa::lm;

namespace {

ModelConfig unusual_model() {
  ModelConfig m;
  m.kind = AttentionKind::Fox;
  m.hidden = 96;
  m.layers = 3;
  m.heads = 6;
  m.mlp_hidden = 0;  // stored as the resolved width
  m.context = 200;
  m.tie_embeddings = false;
  m.init_std = 0.05;
  m.impl = fpa::Impl::Fused;
  m.fpa_backward = fpa::FpaBackward::Exact;
  m.st_temperature = 0.5;
  return m;
}

}  // namespace

// The text published checkpoints hold (their checksums cover it): a change here must come with a
// conversion of results/weights (lm-export --format weights rewrites a file in the new text).
TEST(LmSettings, CheckpointTextIsThePublishedFormat) {
  EXPECT_EQ(model_text(unusual_model()),
            "kind = fox\nvocab_size = 256\nhidden = 96\nlayers = 3\nheads = 6\nmlp_hidden = 256\n"
            "context = 200\ntie_embeddings = 0\nrope_base = 10000\nnorm_eps = 1e-05\n"
            "init_std = 0.05\nimpl = fused\nmin_grad = exact\nst_temperature = 0.5\n");
}

TEST(LmSettings, EverySettingReadsBackWhatItWrote) {
  const auto m = unusual_model();
  TrainConfig t;
  t.steps = 77;
  t.lr = 0.0042;
  t.decay_embeddings = false;
  const Configs c{m, t};
  for (const auto& s : settings()) {
    Configs c2{m, TrainConfig{}};
    s.set(c2, s.get(c));
    EXPECT_EQ(s.get(c2), s.get(c)) << s.name;
  }
  const auto back = model_from_text(model_text(m));
  EXPECT_EQ(model_text(back), model_text(m));
  EXPECT_EQ(identity_differences(back, m), "");
}

TEST(LmSettings, ResumeComparesIdentityNotExecution) {
  auto a = unusual_model(), b = unusual_model();
  b.impl = fpa::Impl::Reference;  // how it runs: never a difference
  EXPECT_EQ(identity_differences(a, b), "");
  b.hidden = 48;
  b.fpa_backward = fpa::FpaBackward::StraightThrough;
  const auto diff = identity_differences(a, b);
  EXPECT_NE(diff.find("hidden = 96 there, 48 here"), std::string::npos) << diff;
  EXPECT_NE(diff.find("min_grad = exact there, straight-through here"), std::string::npos) << diff;
  EXPECT_EQ(diff.find("impl"), std::string::npos) << diff;
}

TEST(LmSettings, BadValuesNameTheSetting) {
  ModelConfig m;
  TrainConfig t;
  auto error_of = [&](const std::string& name, const std::string& value) {
    try {
      apply_setting(m, t, name, value);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error_of("hidden", "0").find("hidden must be in [1"), std::string::npos);
  EXPECT_NE(error_of("lr", "abc").find("'abc' is not a finite number"), std::string::npos);
  EXPECT_NE(error_of("steps", "12x").find("'12x' is not an integer"), std::string::npos);
  EXPECT_NE(error_of("variant", "mamba").find("mamba"), std::string::npos);
  EXPECT_NE(error_of("no-such", "1").find("'no-such' is not a model or training setting"), std::string::npos);
  apply_setting(m, t, "length", "333");
  EXPECT_EQ(m.context, 333);
}
