#include "lm/settings.h"

#include "kernels/impl_choice.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace fpa::lm {
namespace {

// `s` parsed whole by `parse` (std::stoll, std::stod); `what` names what it must be.
template <class T, class Parse>
T parse_whole(const std::string& s, Parse parse, const char* what) {
  size_t used = 0;
  T v{};
  try {
    v = parse(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (s.empty() || used != s.size()) throw std::invalid_argument(fmt::format("'{}' is not {}", s, what));
  return v;
}
int64_t to_int(const std::string& s) {
  return parse_whole<int64_t>(s, [](const std::string& x, size_t* u) { return std::stoll(x, u); }, "an integer");
}
double to_real(const std::string& s) {
  const char* what = "a finite number";
  const double v = parse_whole<double>(s, [](const std::string& x, size_t* u) { return std::stod(x, u); }, what);
  if (!std::isfinite(v)) throw std::invalid_argument(fmt::format("'{}' is not {}", s, what));
  return v;
}
bool to_switch(const std::string& s) {
  if (s == "true" || s == "1" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "0" || s == "no" || s == "off") return false;
  throw std::invalid_argument(fmt::format("'{}' is not true or false", s));
}
std::string text(int64_t v) { return std::to_string(v); }
std::string text(double v) { return fmt::format("{}", v); }
std::string text(bool v) { return v ? "true" : "false"; }

constexpr double kBig = 1e9;

// One row per setting: name, stored_as, role, type, lo, hi, help, get, set[, store, load]. The
// model's rows come first, in the order of a checkpoint's configuration text.
#define INT_FIELD(S, member) \
  [](const ModelConfig& m, const TrainConfig& t) { (void)m; (void)t; return text(S.member); }, \
  [](ModelConfig& m, TrainConfig& t, const std::string& v) { (void)m; (void)t; S.member = to_int(v); }
#define REAL_FIELD(S, member) \
  [](const ModelConfig& m, const TrainConfig& t) { (void)m; (void)t; return text(S.member); }, \
  [](ModelConfig& m, TrainConfig& t, const std::string& v) { (void)m; (void)t; S.member = to_real(v); }
#define SWITCH_FIELD(S, member) \
  [](const ModelConfig& m, const TrainConfig& t) { (void)m; (void)t; return text(S.member); }, \
  [](ModelConfig& m, TrainConfig& t, const std::string& v) { (void)m; (void)t; S.member = to_switch(v); }

const std::vector<Setting> kSettings = {
    {"variant", "kind", Role::Identity, Type::Text, 0, 0,
     "attention: transformer, softmax-nope, fox, fpa",
     [](const ModelConfig& m, const TrainConfig&) { return to_string(m.kind); },
     [](ModelConfig& m, TrainConfig&, const std::string& v) { m.kind = parse_attention_kind(v); }},
    {"vocab-size", "vocab_size", Role::Identity, Type::Int, 1, kBig,
     "vocabulary size (this suite's tokenizer is byte-level: 256)", INT_FIELD(m, vocab_size)},
    // Depth and heads are bounded by the memory check of the tool that builds the model (it names
    // the memory a size needs), the width also by a range.
    {"hidden", "hidden", Role::Identity, Type::Int, 1, 1e6, "model width", INT_FIELD(m, hidden)},
    {"layers", "layers", Role::Identity, Type::Int, 1, kBig, "layers", INT_FIELD(m, layers)},
    {"heads", "heads", Role::Identity, Type::Int, 1, kBig, "heads per layer", INT_FIELD(m, heads)},
    {"mlp-hidden", "mlp_hidden", Role::Identity, Type::Int, 0, kBig,
     "SwiGLU inner width (0: 8/3 x hidden rounded up to 32)", INT_FIELD(m, mlp_hidden),
     [](const ModelConfig& m) { return text(m.mlp_width()); }, nullptr},
    {"length", "context", Role::Identity, Type::Int, 1, 1e7,
     "training sequence length, the model's context (bytes)", INT_FIELD(m, context)},
    {"untie-embeddings", "tie_embeddings", Role::Identity, Type::Switch, 0, 0,
     "give the model its own LM head instead of reusing the token embedding",
     [](const ModelConfig& m, const TrainConfig&) { return text(!m.tie_embeddings); },
     [](ModelConfig& m, TrainConfig&, const std::string& v) { m.tie_embeddings = !to_switch(v); },
     [](const ModelConfig& m) { return std::string(m.tie_embeddings ? "1" : "0"); },
     [](ModelConfig& m, const std::string& v) { m.tie_embeddings = v == "1"; }},
    {"rope-base", "rope_base", Role::Identity, Type::Real, 1, 1e12, "RoPE base (transformer)",
     REAL_FIELD(m, rope_base)},
    {"norm-eps", "norm_eps", Role::Identity, Type::Real, 1e-12, 1, "RMSNorm epsilon",
     REAL_FIELD(m, norm_eps)},
    {"init-std", "init_std", Role::Identity, Type::Real, 1e-6, 10,
     "std of the normal initialisation of weight matrices and embeddings", REAL_FIELD(m, init_std)},
    {"impl", "impl", Role::Execution, Type::Text, 0, 0,
     "attention implementation: auto (fused when available), reference, fused, cuda",
     [](const ModelConfig& m, const TrainConfig&) { return fpa::to_string(m.impl); },
     [](ModelConfig& m, TrainConfig&, const std::string& v) {
       m.impl = fpa::choose_impl(v, operator_variant(m.kind), m.min_grad);
     },
     nullptr, [](ModelConfig& m, const std::string& v) { m.impl = fpa::parse_impl(v); }},
    {"fpa-backward", "min_grad", Role::Identity, Type::Text, 0, 0,
     "FPA's backward: straight-through, exact",
     [](const ModelConfig& m, const TrainConfig&) { return fpa::to_string(m.min_grad); },
     [](ModelConfig& m, TrainConfig&, const std::string& v) { m.min_grad = fpa::parse_min_grad(v); }},
    {"st-temperature", "st_temperature", Role::Identity, Type::Real, 1e-6, 1e6,
     "tau_s of FPA's straight-through backward", REAL_FIELD(m, st_temperature)},
    // The training run.
    {"steps", "", Role::Training, Type::Int, 1, kBig, "optimiser steps", INT_FIELD(t, steps)},
    {"batch", "", Role::Training, Type::Int, 1, 1e6, "sequences per optimiser step (all ranks)",
     INT_FIELD(t, batch)},
    {"accum", "", Role::Training, Type::Int, 1, 1e6, "gradient-accumulation micro-batches per step",
     INT_FIELD(t, accum)},
    {"lr", "", Role::Training, Type::Real, 1e-8, 10, "peak learning rate (AdamW)", REAL_FIELD(t, lr)},
    {"warmup", "", Role::Training, Type::Int, 0, kBig, "linear warm-up steps, then cosine decay",
     INT_FIELD(t, warmup)},
    {"min-lr-ratio", "", Role::Training, Type::Real, 0, 1, "the cosine decays to lr x this",
     REAL_FIELD(t, min_lr_ratio)},
    {"decay-embeddings", "", Role::Training, Type::Switch, 0, 0,
     "apply AdamW weight decay to the token embedding too", SWITCH_FIELD(t, decay_embeddings)},
    {"val-every", "", Role::Training, Type::Int, 1, kBig, "steps between validation passes",
     INT_FIELD(t, val_every)},
    {"val-windows", "", Role::Training, Type::Int, 1, kBig, "validation windows per pass",
     INT_FIELD(t, val_windows)},
    {"checkpoint-every", "", Role::Training, Type::Int, 1, kBig, "steps between checkpoints",
     INT_FIELD(t, checkpoint_every)},
};

#undef INT_FIELD
#undef REAL_FIELD
#undef SWITCH_FIELD

void check_range(const Setting& s, const std::string& value) {
  if (s.type != Type::Int && s.type != Type::Real) return;
  const double v = s.type == Type::Int ? double(to_int(value)) : to_real(value);
  if (v < s.lo || v > s.hi)
    throw std::invalid_argument(fmt::format("{} must be in [{:g}, {:g}], got {}", s.name, s.lo, s.hi, value));
}

// The option's value as the flag's text.
std::string option_text(const Cli& cli, const Setting& s) {
  switch (s.type) {
    case Type::Int: return text(cli.get<int64_t>(s.name));
    case Type::Real: return text(cli.get<double>(s.name));
    case Type::Switch: return text(cli.flag(s.name));
    case Type::Text: return cli.get<std::string>(s.name);
  }
  return "";
}

}  // namespace

const std::vector<Setting>& settings() { return kSettings; }

const Setting& setting(const std::string& name) {
  for (const auto& s : kSettings)
    if (s.name == name) return s;
  throw std::invalid_argument(fmt::format("'{}' is not a model or training setting", name));
}

void apply_setting(ModelConfig& m, TrainConfig& t, const std::string& name, const std::string& value) {
  const auto& s = setting(name);
  check_range(s, value);
  s.set(m, t, value);
}

namespace {
bool keeps_on_zero(const ToolSettings& tool, const Setting& s, const std::string& default_text) {
  return tool.keep_on_zero && (s.type == Type::Int || s.type == Type::Real) && default_text == "0";
}
}  // namespace

void add_options(Cli& cli, const ToolSettings& tool) {
  for (const auto& [name, default_text] : tool.options) {
    const auto& s = setting(name);
    const bool zero_keeps = keeps_on_zero(tool, s, default_text);
    const auto help = zero_keeps ? s.help + " (0: keep)" : s.help;
    switch (s.type) {
      case Type::Int: cli.add()(name.c_str(), po::value<int64_t>()->default_value(to_int(default_text)), help.c_str()); break;
      case Type::Real: cli.add()(name.c_str(), po::value<double>()->default_value(to_real(default_text)), help.c_str()); break;
      case Type::Switch: cli.add()(name.c_str(), po::bool_switch()->default_value(to_switch(default_text)), help.c_str()); break;
      case Type::Text: cli.add()(name.c_str(), po::value<std::string>()->default_value(default_text), help.c_str()); break;
    }
    // The value's own check when the options are parsed (range, known name; the implementation
    // with the variant and backward mode given beside it): one line, exit 2.
    cli.require([&s, zero_keeps, options = tool.options](const po::variables_map& vm) {
      const auto& a = vm[s.name].value();
      std::string value;
      if (s.type == Type::Int) value = text(boost::any_cast<int64_t>(a));
      else if (s.type == Type::Real) value = text(boost::any_cast<double>(a));
      else if (s.type == Type::Text) value = boost::any_cast<std::string>(a);
      else return true;
      if (zero_keeps && value == "0") return true;
      ModelConfig m;
      TrainConfig t;
      if (s.role == Role::Execution)
        for (const auto& [other, unused] : options) {  // a bad one is reported by its own check
          const auto& o = setting(other);
          if (o.role == Role::Identity && o.type == Type::Text)
            try { o.set(m, t, boost::any_cast<std::string>(vm[other].value())); } catch (const std::exception&) {}
        }
      try {
        check_range(s, value);
        s.set(m, t, value);
      } catch (const std::invalid_argument& e) {
        fail_usage(fmt::format("--{}: {}", s.name, e.what()));
      }
      return true;
    }, "--" + name);
  }
}

void apply_options(const Cli& cli, const ToolSettings& tool, ModelConfig& m, TrainConfig& t) {
  for (int pass = 0; pass < 2; ++pass)  // the implementation after the identity it depends on
    for (const auto& [name, default_text] : tool.options) {
      const auto& s = setting(name);
      if ((s.role == Role::Execution) != (pass == 1)) continue;
      const auto value = option_text(cli, s);
      if (keeps_on_zero(tool, s, default_text) && value == "0") continue;
      try {
        s.set(m, t, value);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(fmt::format("--{}: {}", s.name, e.what()));
      }
    }
}

std::string model_text(const ModelConfig& m) {
  const TrainConfig t;
  std::string out;
  for (const auto& s : kSettings)
    if (!s.stored_as.empty())
      out += fmt::format("{} = {}\n", s.stored_as, s.store ? s.store(m) : s.get(m, t));
  return out;
}

namespace {
std::map<std::string, std::string> stored_values(const std::string& text) {
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (const auto eq = line.find(" = "); eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 3);
  return kv;
}
}  // namespace

ModelConfig model_from_text(const std::string& text) {
  const auto kv = stored_values(text);
  ModelConfig m;
  TrainConfig t;
  try {
    for (const auto& s : kSettings) {
      if (s.stored_as.empty()) continue;
      const auto it = kv.find(s.stored_as);
      if (it == kv.end()) throw std::runtime_error(fmt::format("checkpoint: config lacks '{}'", s.stored_as));
      if (s.load) s.load(m, it->second);
      else s.set(m, t, it->second);
    }
    m.validate();
  } catch (const std::logic_error& e) {  // parse errors, invalid_argument from validate()
    throw std::runtime_error(fmt::format("checkpoint: bad model config: {}", e.what()));
  }
  return m;
}

std::string identity_differences(const ModelConfig& saved, const ModelConfig& wanted) {
  const TrainConfig t;
  std::string out;
  for (const auto& s : kSettings) {
    if (s.role != Role::Identity) continue;
    const auto a = s.store ? s.store(saved) : s.get(saved, t);
    const auto b = s.store ? s.store(wanted) : s.get(wanted, t);
    if (a != b) out += fmt::format("{}{} = {} there, {} here", out.empty() ? "" : "; ", s.stored_as, a, b);
  }
  return out;
}

}  // namespace fpa::lm
