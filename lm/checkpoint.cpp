#include "lm/checkpoint.h"

#include "experiments/atomic_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace fpa::lm {

std::string checkpoint_path(const std::string& run_dir) {
  return (fs::path(run_dir) / "checkpoint.pt").string();
}

std::string config_to_text(const ModelConfig& c) {
  return fmt::format(
      "kind = {}\nvocab_size = {}\nhidden = {}\nlayers = {}\nheads = {}\nmlp_hidden = {}\n"
      "context = {}\ntie_embeddings = {}\nrope_base = {}\nnorm_eps = {}\ninit_std = {}\n"
      "impl = {}\nmin_grad = {}\nst_temperature = {}\n",
      to_string(c.kind), c.vocab_size, c.hidden, c.layers, c.heads, c.mlp_width(), c.context,
      c.tie_embeddings ? 1 : 0, c.rope_base, c.norm_eps, c.init_std, fpa::to_string(c.impl),
      fpa::to_string(c.min_grad), c.st_temperature);
}

ModelConfig config_from_text(const std::string& text) {
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find(" = ");
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 3);
  }
  auto get = [&](const char* k) {
    auto it = kv.find(k);
    if (it == kv.end()) throw std::runtime_error(fmt::format("checkpoint: config lacks '{}'", k));
    return it->second;
  };
  ModelConfig c;
  try {
    c.kind = parse_attention_kind(get("kind"));
    c.vocab_size = std::stoll(get("vocab_size"));
    c.hidden = std::stoll(get("hidden"));
    c.layers = std::stoll(get("layers"));
    c.heads = std::stoll(get("heads"));
    c.mlp_hidden = std::stoll(get("mlp_hidden"));
    c.context = std::stoll(get("context"));
    c.tie_embeddings = get("tie_embeddings") == "1";
    c.rope_base = std::stod(get("rope_base"));
    c.norm_eps = std::stod(get("norm_eps"));
    c.init_std = std::stod(get("init_std"));
    c.impl = fpa::parse_impl(get("impl"));
    c.min_grad = fpa::parse_min_grad(get("min_grad"));
    c.st_temperature = std::stod(get("st_temperature"));
    c.validate();
  } catch (const std::logic_error& e) {  // stoll/stod/parse_* errors
    throw std::runtime_error(fmt::format("checkpoint: bad model config: {}", e.what()));
  }
  return c;
}

void save_checkpoint(const std::string& path, LanguageModel& model,
                     torch::optim::Optimizer& optimizer, const TrainProgress& p) {
  torch::serialize::OutputArchive archive, model_archive, optimizer_archive;
  model->save(model_archive);
  optimizer.save(optimizer_archive);
  archive.write("model", model_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("config", c10::IValue(config_to_text(model->config)));
  archive.write("step", c10::IValue(p.step));
  archive.write("tokens", c10::IValue(p.tokens));
  archive.write("elapsed_s", c10::IValue(p.elapsed_s));
  archive.write("sampler_state", c10::IValue(p.sampler_state));
  archive.write("log_rows", c10::IValue(p.log_rows));
  archive.write("train_time_s", c10::IValue(p.train_time_s));
  archive.write("preset", c10::IValue(p.preset));
  replace_atomic(path, [&](const std::string& tmp) { archive.save_to(tmp); });
}

namespace {

void open(torch::serialize::InputArchive& archive, const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw std::runtime_error(fmt::format("no checkpoint at '{}'", path));
  try {
    archive.load_from(path);
  } catch (const std::exception&) {
    throw std::runtime_error(fmt::format("checkpoint '{}' is corrupt or not a checkpoint", path));
  }
}

template <class F>
auto reading(const std::string& path, F&& f) {
  try {
    return f();
  } catch (const c10::Error& e) {
    throw std::runtime_error(fmt::format("checkpoint '{}' is incomplete or does not match the model: {}",
                                         path, e.what_without_backtrace()));
  }
}

}  // namespace

TrainProgress read_checkpoint_progress(const std::string& path, ModelConfig* config) {
  torch::serialize::InputArchive archive;
  open(archive, path);
  return reading(path, [&] {
    TrainProgress p;
    c10::IValue v;
    archive.read("config", v);
    if (config) *config = config_from_text(v.toStringRef());
    archive.read("step", v); p.step = v.toInt();
    archive.read("tokens", v); p.tokens = v.toInt();
    archive.read("elapsed_s", v); p.elapsed_s = v.toDouble();
    archive.read("sampler_state", v); p.sampler_state = v.toStringRef();
    archive.read("log_rows", v); p.log_rows = v.toStringRef();
    archive.read("train_time_s", v); p.train_time_s = v.toDouble();
    archive.read("preset", v); p.preset = v.toStringRef();
    return p;
  });
}

void load_checkpoint_state(const std::string& path, LanguageModel& model,
                           torch::optim::Optimizer* optimizer) {
  torch::serialize::InputArchive archive;
  open(archive, path);
  reading(path, [&] {
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    model->load(model_archive);
    if (optimizer) {
      torch::serialize::InputArchive optimizer_archive;
      archive.read("optimizer", optimizer_archive);
      optimizer->load(optimizer_archive);
    }
    return 0;
  });
}

LoadedModel load_model(const std::string& path) {
  std::error_code ec;
  const auto file = fs::is_directory(path, ec) ? checkpoint_path(path) : path;
  LoadedModel m;
  m.progress = read_checkpoint_progress(file, &m.config);
  m.step = m.progress.step;
  m.model = LanguageModel(m.config);
  load_checkpoint_state(file, m.model, nullptr);
  m.model->eval();
  return m;
}

}  // namespace fpa::lm
