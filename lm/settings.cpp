#include "lm/settings.h"

#include "kernels/impl_choice.h"

#include <fmt/format.h>

#include <stdexcept>

namespace fpa::lm {
namespace {

constexpr double kBig = 1e9;

// One row per setting: name, stored_as, role, type, lo, hi, help, get, set[, store, load]. The
// model's rows come first, in the order of a checkpoint's configuration text.
const SettingsTable<Configs> kTable({
    {"variant", "kind", SettingRole::Identity, SettingType::Text, 0, 0,
     "attention: transformer, softmax-nope, fox, fpa",
     [](const Configs& c) { return to_string(c.model.kind); },
     [](Configs& c, const std::string& v) { c.model.kind = parse_attention_kind(v); }},
    {"vocab-size", "vocab_size", SettingRole::Identity, SettingType::Int, 1, kBig,
     "vocabulary size (256 with the bytes tokenizer; the pieces of a sentencepiece one)", FPA_INT_SETTING(Configs, model.vocab_size)},
    // Depth and heads are bounded by the memory check of the tool that builds the model (it names
    // the memory a size needs), the width also by a range.
    {"hidden", "hidden", SettingRole::Identity, SettingType::Int, 1, 1e6, "model width", FPA_INT_SETTING(Configs, model.hidden)},
    {"layers", "layers", SettingRole::Identity, SettingType::Int, 1, kBig, "layers", FPA_INT_SETTING(Configs, model.layers)},
    {"heads", "heads", SettingRole::Identity, SettingType::Int, 1, kBig, "heads per layer", FPA_INT_SETTING(Configs, model.heads)},
    {"mlp-hidden", "mlp_hidden", SettingRole::Identity, SettingType::Int, 0, kBig,
     "SwiGLU inner width (0: 8/3 x hidden rounded up to 32)", FPA_INT_SETTING(Configs, model.mlp_hidden),
     [](const Configs& c) { return setting_text(int64_t(c.model.mlp_width())); }, nullptr},
    {"length", "context", SettingRole::Identity, SettingType::Int, 1, 1e7,
     "training sequence length, the model's context (bytes)", FPA_INT_SETTING(Configs, model.context)},
    {"untie-embeddings", "tie_embeddings", SettingRole::Identity, SettingType::Switch, 0, 0,
     "give the model its own LM head instead of reusing the token embedding",
     [](const Configs& c) { return setting_text(!c.model.tie_embeddings); },
     [](Configs& c, const std::string& v) { c.model.tie_embeddings = !setting_switch(v); },
     [](const Configs& c) { return std::string(c.model.tie_embeddings ? "1" : "0"); },
     [](Configs& c, const std::string& v) { c.model.tie_embeddings = v == "1"; }},
    {"rope-base", "rope_base", SettingRole::Identity, SettingType::Real, 1, 1e12, "RoPE base (transformer)",
     FPA_REAL_SETTING(Configs, model.rope_base)},
    {"norm-eps", "norm_eps", SettingRole::Identity, SettingType::Real, 1e-12, 1, "RMSNorm epsilon",
     FPA_REAL_SETTING(Configs, model.norm_eps)},
    {"init-std", "init_std", SettingRole::Identity, SettingType::Real, 1e-6, 10,
     "std of the normal initialisation of weight matrices and embeddings", FPA_REAL_SETTING(Configs, model.init_std)},
    {"impl", "impl", SettingRole::Execution, SettingType::Text, 0, 0,
     "attention implementation: auto (the device's kernels: fused on the CPU), reference, fused, cuda",
     [](const Configs& c) { return fpa::to_string(c.model.impl); },
     [](Configs& c, const std::string& v) {
       c.model.impl = fpa::choose_impl(v, operator_variant(c.model.kind), c.model.fpa_backward);
     },
     nullptr, [](Configs& c, const std::string& v) { c.model.impl = fpa::parse_impl(v); }},
    {"fpa-backward", "min_grad", SettingRole::Identity, SettingType::Text, 0, 0,
     "FPA's backward: straight-through, exact",
     [](const Configs& c) { return fpa::to_string(c.model.fpa_backward); },
     [](Configs& c, const std::string& v) { c.model.fpa_backward = fpa::parse_fpa_backward(v); }},
    {"st-temperature", "st_temperature", SettingRole::Identity, SettingType::Real, 1e-6, 1e6,
     "tau_s of FPA's straight-through backward", FPA_REAL_SETTING(Configs, model.st_temperature)},
    // The training run.
    {"steps", "", SettingRole::Run, SettingType::Int, 1, kBig, "optimiser steps", FPA_INT_SETTING(Configs, train.steps)},
    {"batch", "", SettingRole::Run, SettingType::Int, 1, 1e6, "sequences per optimiser step (all ranks)",
     FPA_INT_SETTING(Configs, train.batch)},
    {"accum", "", SettingRole::Run, SettingType::Int, 1, 1e6, "gradient-accumulation micro-batches per step",
     FPA_INT_SETTING(Configs, train.accum)},
    {"lr", "", SettingRole::Run, SettingType::Real, 1e-8, 10, "peak learning rate (AdamW)", FPA_REAL_SETTING(Configs, train.lr)},
    {"warmup", "", SettingRole::Run, SettingType::Int, 0, kBig, "linear warm-up steps, then cosine decay",
     FPA_INT_SETTING(Configs, train.warmup)},
    {"min-lr-ratio", "", SettingRole::Run, SettingType::Real, 0, 1, "the cosine decays to lr x this",
     FPA_REAL_SETTING(Configs, train.min_lr_ratio)},
    {"decay-embeddings", "", SettingRole::Run, SettingType::Switch, 0, 0,
     "apply AdamW weight decay to the token embedding too", FPA_SWITCH_SETTING(Configs, train.decay_embeddings)},
    {"val-every", "", SettingRole::Run, SettingType::Int, 1, kBig, "steps between validation passes",
     FPA_INT_SETTING(Configs, train.val_every)},
    {"val-windows", "", SettingRole::Run, SettingType::Int, 1, kBig, "validation windows per pass",
     FPA_INT_SETTING(Configs, train.val_windows)},
    {"checkpoint-every", "", SettingRole::Run, SettingType::Int, 1, kBig, "steps between checkpoints",
     FPA_INT_SETTING(Configs, train.checkpoint_every)},
    // A run setting: checkpoints record the tokenizer's identity (with its model's SHA-256) on
    // their own key, not in the configuration text. "" (the flag not given) keeps the preset's.
    {"tokenizer", "", SettingRole::Run, SettingType::Text, 0, 0,
     "token ids: bytes (vocab-size 256) or sentencepiece (vocab-size pieces trained on the "
     "corpus's training split, saved beside it)",
     [](const Configs& c) { return to_string(c.train.tokenizer); },
     [](Configs& c, const std::string& v) {
       if (!v.empty()) c.train.tokenizer = parse_tokenizer_kind(v);
     }},
}, "model or training setting");


}  // namespace

const std::vector<Setting>& settings() { return kTable.rows(); }

const Setting& setting(const std::string& name) { return kTable.row(name); }

void apply_setting(ModelConfig& m, TrainConfig& t, const std::string& name, const std::string& value) {
  Configs c{m, t};
  kTable.apply(c, name, value);
  m = c.model;
  t = c.train;
}

void add_options(Cli& cli, const ToolSettings& tool) { kTable.add_options(cli, tool); }

void apply_options(const Cli& cli, const ToolSettings& tool, ModelConfig& m, TrainConfig& t) {
  Configs c{m, t};
  kTable.apply_options(cli, tool, c);
  m = c.model;
  t = c.train;
}

std::string model_text(const ModelConfig& m) { return kTable.stored_text(Configs{m, TrainConfig{}}); }

ModelConfig model_from_text(const std::string& text) {
  Configs c;
  try {
    kTable.load_stored_text(text, c);
    c.model.validate();
  } catch (const std::logic_error& e) {  // parse errors, invalid_argument from validate()
    throw std::runtime_error(fmt::format("checkpoint: bad model config: {}", e.what()));
  } catch (const std::runtime_error& e) {  // a missing key
    throw std::runtime_error(fmt::format("checkpoint: {}", e.what()));
  }
  return c.model;
}

std::string identity_differences(const ModelConfig& saved, const ModelConfig& wanted) {
  return kTable.identity_differences(Configs{saved, TrainConfig{}}, Configs{wanted, TrainConfig{}});
}

}  // namespace fpa::lm
