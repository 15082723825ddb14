#include "lm/presets.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace fpa::lm {
namespace {

std::vector<Preset> make_presets() {
  std::vector<Preset> all;
  {
    Preset p{"tiny", {}, {}, "CPU, minutes: the scale the suite runs"};
    p.model.hidden = 128; p.model.layers = 2; p.model.heads = 4; p.model.context = 128;
    p.train.steps = 1200; p.train.batch = 16; p.train.lr = 2e-3; p.train.warmup = 100;
    p.train.val_every = 100; p.train.val_windows = 64; p.train.checkpoint_every = 100;
    all.push_back(p);
  }
  {
    Preset p{"small", {}, {}, "CPU, about an hour per variant on one core"};
    p.model.hidden = 256; p.model.layers = 4; p.model.heads = 4; p.model.context = 256;
    p.train.steps = 1200; p.train.batch = 16; p.train.lr = 1e-3; p.train.warmup = 100;
    p.train.val_every = 200; p.train.val_windows = 64; p.train.checkpoint_every = 100;
    all.push_back(p);
  }
  {
    // FoX paper's small scale: 768 wide, 12 layers, 12 heads, GPT-NeoX tokenizer (50277 tokens),
    // tied embeddings, SwiGLU width 1536 (2x): about 110M parameters. Needs a sub-word tokenizer,
    // which this suite does not ship (see lm/README.md).
    Preset p{"paper", {}, {}, "GPU, needs a sub-word tokenizer with vocab_size 50277"};
    p.model.vocab_size = 50277; p.model.hidden = 768; p.model.layers = 12; p.model.heads = 12;
    p.model.mlp_hidden = 1536; p.model.context = 2048;
    p.train.steps = 5000; p.train.batch = 256; p.train.accum = 8; p.train.lr = 2e-3;
    p.train.warmup = 250; p.train.val_every = 500; p.train.val_windows = 256;
    p.train.checkpoint_every = 250;
    all.push_back(p);
  }
  return all;
}

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = make_presets();
  return all;
}

}  // namespace

const Preset& preset(const std::string& name) {
  for (const auto& p : presets())
    if (p.name == name) return p;
  throw std::invalid_argument(fmt::format("unknown preset '{}' (expected tiny, small or paper)", name));
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.name);
  return names;
}

double learning_rate(const TrainConfig& t, int64_t step) {
  if (step < t.warmup) return t.lr * double(step + 1) / double(t.warmup);
  const double span = std::max<int64_t>(1, t.steps - t.warmup);
  const double progress = std::min(1.0, double(step - t.warmup) / span);
  const double min_lr = t.lr * t.min_lr_ratio;
  return min_lr + 0.5 * (t.lr - min_lr) * (1.0 + std::cos(M_PI * progress));
}

}  // namespace fpa::lm
