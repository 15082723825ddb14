#include "lm/checkpoint.h"
#include "lm/settings.h"

#include "lm/optimizer.h"

#include "experiments/atomic_file.h"
#include "experiments/cli.h"
#include "experiments/execution.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace fpa::lm {

namespace {
constexpr const char* kWeightsFormat = "fpa-weights-1";
}  // namespace

std::string checkpoint_path(const std::string& run_dir) {
  return (fs::path(run_dir) / "checkpoint.pt").string();
}

std::string run_name(const std::string& checkpoint) {
  fs::path p(checkpoint);
  while (p.has_parent_path() && p.filename().empty()) p = p.parent_path();  // "dir/"
  std::error_code ec;
  if (fs::is_directory(p, ec)) return p.filename().string();
  if (p.filename() == "checkpoint.pt") return p.parent_path().filename().string();
  return p.extension() == ".pt" ? p.stem().string() : p.filename().string();
}

namespace {

// 64-bit FNV-1a over 8-byte words (then the tail bytes): fast, and any flipped byte changes it.
uint64_t hash_bytes(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::string tensor_checksum(const torch::Tensor& t) {
  const auto c = t.detach().cpu().contiguous();
  auto h = hash_bytes(c.sizes().data(), c.sizes().size() * sizeof(int64_t));
  h = hash_bytes(c.data_ptr(), c.nbytes(), h ^ uint64_t(c.scalar_type()));
  return fmt::format("{:016x}", h);
}

std::string hash_text(const std::string& s) { return fmt::format("{:016x}", hash_bytes(s.data(), s.size())); }

// name -> checksum of every model tensor and AdamW state tensor, and of the config text.
using Checksums = std::map<std::string, std::string>;

void add_model(Checksums& out, LanguageModel& model) {
  for (const auto& p : model->named_parameters()) out["model/" + p.key()] = tensor_checksum(p.value());
  for (const auto& b : model->named_buffers()) out["model/" + b.key()] = tensor_checksum(b.value());
}

void add_optimizer(Checksums& out, torch::optim::Optimizer& optimizer) {
  int index = 0;
  for (auto& group : optimizer.param_groups())
    for (auto& p : group.params()) {
      const auto name = fmt::format("optimizer/{}", index++);
      if (auto* a = dynamic_cast<torch::optim::AdamWParamState*>(optimizer_state_of(optimizer, p))) {
        out[name + "/step"] = hash_text(std::to_string(a->step()));
        out[name + "/exp_avg"] = tensor_checksum(a->exp_avg());
        out[name + "/exp_avg_sq"] = tensor_checksum(a->exp_avg_sq());
      }
    }
}

std::string checksums_text(const Checksums& c) {
  std::string out;
  for (const auto& [name, sum] : c) out += name + " " + sum + "\n";
  return out;
}

Checksums checksums_from(const std::string& text) {
  Checksums c;
  std::istringstream in(text);
  std::string name, sum;
  while (in >> name >> sum) c[name] = sum;
  return c;
}

// Every entry of `expected` whose prefix is `prefix` must be in `got` with the same value.
void verify(const std::string& path, const Checksums& expected, const Checksums& got,
            const std::string& prefix) {
  for (const auto& [name, sum] : expected) {
    if (name.rfind(prefix, 0) != 0) continue;
    auto it = got.find(name);
    if (it == got.end())
      throw UsageError(fmt::format("checkpoint '{}' is corrupt: tensor '{}' is missing", path, name));
    if (it->second != sum)
      throw UsageError(fmt::format("checkpoint '{}' is corrupt: tensor '{}' does not match its "
                                   "checksum", path, name));
  }
}

// What a checkpoint and a weights file share: the model, its configuration, the progress
// counters and the preset; the model's and the configuration's checksums go into `sums`.
void write_model(torch::serialize::OutputArchive& archive, LanguageModel& model,
                 const TrainProgress& p, Checksums& sums) {
  torch::serialize::OutputArchive model_archive;
  model->save(model_archive);
  archive.write("model", model_archive);
  archive.write("config", c10::IValue(model_text(model->config)));
  archive.write("step", c10::IValue(p.step));
  archive.write("tokens", c10::IValue(p.tokens));
  archive.write("elapsed_s", c10::IValue(p.elapsed_s));
  archive.write("train_time_s", c10::IValue(p.train_time_s));
  archive.write("preset", c10::IValue(p.preset));
  add_model(sums, model);
  sums["config"] = hash_text(model_text(model->config));
  // Only sub-word runs have the key: byte-level files stay as they were written before it.
  if (!p.tokenizer.empty()) {
    archive.write("tokenizer", c10::IValue(p.tokenizer));
    sums["tokenizer"] = hash_text(p.tokenizer);
  }
}

// Through a checked file: LibTorch's own file writer aborts the process on a full disk.
void save_archive(const std::string& path, torch::serialize::OutputArchive& archive,
                  const Checksums& sums) {
  archive.write("checksums", c10::IValue(checksums_text(sums)));
  replace_atomic(path, [&](const std::string& tmp) {
    CheckedFile file(tmp, path);
    archive.save_to([&](const void* data, size_t n) { return file.write(data, n); });
    file.finish();
  });
}

}  // namespace

void save_checkpoint(const std::string& path, LanguageModel& model,
                     torch::optim::Optimizer& optimizer, const TrainProgress& p) {
  torch::serialize::OutputArchive archive, optimizer_archive;
  Checksums sums;
  write_model(archive, model, p, sums);
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("sampler_state", c10::IValue(p.sampler_state));
  archive.write("log_rows", c10::IValue(p.log_rows));
  add_optimizer(sums, optimizer);
  save_archive(path, archive, sums);
}

void save_weights(const std::string& path, LanguageModel& model, const TrainProgress& p,
                  const TrainingRecord& record) {
  torch::serialize::OutputArchive archive;
  Checksums sums;
  archive.write("format", c10::IValue(std::string(kWeightsFormat)));
  write_model(archive, model, p, sums);
  archive.write("train_seed", c10::IValue(record.seed));
  archive.write("train_config", c10::IValue(record.config));
  save_archive(path, archive, sums);
}

namespace {

// An optional string entry ("" when absent).
std::string read_string(torch::serialize::InputArchive& archive, const char* key) {
  c10::IValue v;
  return archive.try_read(key, v) && v.isString() ? v.toStringRef() : std::string();
}

bool is_weights_file(torch::serialize::InputArchive& archive) {
  return read_string(archive, "format") == kWeightsFormat;
}

void open(torch::serialize::InputArchive& archive, const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw UsageError(fmt::format("no checkpoint at '{}'", path));
  try {
    archive.load_from(path, torch::Device(torch::kCPU));  // any device's checkpoint, on any machine
  } catch (const std::exception&) {
    throw UsageError(fmt::format("checkpoint '{}' is corrupt or not a checkpoint", path));
  }
}

template <class F>
auto reading(const std::string& path, F&& f) {
  try {
    return f();
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw UsageError(fmt::format("checkpoint '{}' is incomplete or does not match the model: {}",
                                 path, what.substr(0, what.find('\n'))));
  }
}

// The stored checksums; empty for checkpoints written before they existed (loaded unverified,
// with a note, so that runs started earlier stay usable).
Checksums stored_checksums(torch::serialize::InputArchive& archive, const std::string& path) {
  c10::IValue v;
  if (!archive.try_read("checksums", v)) {
    std::cerr << fmt::format("note: checkpoint '{}' has no checksums (an older format); loaded "
                             "without verification\n", path);
    return {};
  }
  if (!v.isString()) throw UsageError(fmt::format("checkpoint '{}' is corrupt: bad checksums", path));
  return checksums_from(v.toStringRef());
}

// Every parameter and buffer must have the shape the configuration gives it.
void check_shapes(const std::string& path, LanguageModel& model,
                  const std::map<std::string, std::vector<int64_t>>& expected) {
  for (const auto& p : model->named_parameters()) {
    const auto it = expected.find(p.key());
    if (it != expected.end() && p.value().sizes().vec() != it->second)
      throw UsageError(fmt::format(
          "checkpoint '{}': tensor '{}' has shape [{}] but its model configuration needs [{}]",
          path, p.key(), fmt::join(p.value().sizes().vec(), ", "), fmt::join(it->second, ", ")));
  }
}

TrainProgress read_progress(torch::serialize::InputArchive& archive, const std::string& path,
                            ModelConfig* config) {
  return reading(path, [&] {
    TrainProgress p;
    c10::IValue v;
    archive.read("config", v);
    const std::string config_text = v.toStringRef();
    const auto sums = stored_checksums(archive, path);
    if (sums.count("config") && sums.at("config") != hash_text(config_text))
      throw UsageError(fmt::format("checkpoint '{}' is corrupt: its model configuration does not "
                                   "match its checksum", path));
    if (config) {
      try {
        *config = model_from_text(config_text);
      } catch (const std::exception& e) {
        throw UsageError(fmt::format("checkpoint '{}': {}", path, e.what()));
      }
    }
    p.weights_only = is_weights_file(archive);
    archive.read("step", v); p.step = v.toInt();
    archive.read("tokens", v); p.tokens = v.toInt();
    archive.read("elapsed_s", v); p.elapsed_s = v.toDouble();
    if (!p.weights_only) {  // a weights file has no data position and no log
      archive.read("sampler_state", v); p.sampler_state = v.toStringRef();
      archive.read("log_rows", v); p.log_rows = v.toStringRef();
    }
    archive.read("train_time_s", v); p.train_time_s = v.toDouble();
    archive.read("preset", v); p.preset = v.toStringRef();
    p.tokenizer = read_string(archive, "tokenizer");  // absent: bytes
    if (sums.count("tokenizer") ? sums.at("tokenizer") != hash_text(p.tokenizer)
                                : !sums.empty() && !p.tokenizer.empty())
      throw UsageError(fmt::format("checkpoint '{}' is corrupt: its tokenizer does not match its "
                                   "checksum", path));
    return p;
  });
}

void load_state(torch::serialize::InputArchive& archive, const std::string& path,
                LanguageModel& model, torch::optim::Optimizer* optimizer) {
  c10::IValue stored;  // verified when present (read_checkpoint_progress noted their absence)
  const auto sums = archive.try_read("checksums", stored) && stored.isString()
                        ? checksums_from(stored.toStringRef()) : Checksums{};
  reading(path, [&] {
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& p : model->named_parameters()) shapes[p.key()] = p.value().sizes().vec();
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    model->load(model_archive);
    check_shapes(path, model, shapes);
    Checksums got;
    add_model(got, model);
    verify(path, sums, got, "model/");
    if (optimizer && is_weights_file(archive))
      throw UsageError(fmt::format("'{}' is a published weights file (no optimiser state): it can "
                                   "be evaluated, not resumed", path));
    if (optimizer) {
      torch::serialize::InputArchive optimizer_archive;
      archive.read("optimizer", optimizer_archive);
      optimizer->load(optimizer_archive);
      Checksums opt;
      add_optimizer(opt, *optimizer);
      verify(path, sums, opt, "optimizer/");
    }
    return 0;
  });
}

// Why the optimiser state does not verify, or "" (also when it has no checksums). The grouping
// of the parameters is not recorded (passkey-train leaves the embedding undecayed): either fits.
std::string optimizer_problem(torch::serialize::InputArchive& archive, const std::string& path,
                              LanguageModel& model) {
  std::string why;
  for (bool decay_embeddings : {true, false}) {
    TrainConfig t;
    t.decay_embeddings = decay_embeddings;
    auto optimizer = make_optimizer(model, t);
    try {
      torch::serialize::InputArchive optimizer_archive;
      archive.read("optimizer", optimizer_archive);
      optimizer->load(optimizer_archive);
    } catch (const std::exception& e) {  // the other grouping, or a damaged state
      if (why.empty()) why = one_line(e.what());
      continue;
    }
    try {
      c10::IValue stored;
      if (!archive.try_read("checksums", stored) || !stored.isString()) return "";
      Checksums got;
      add_optimizer(got, *optimizer);
      verify(path, checksums_from(stored.toStringRef()), got, "optimizer/");
      return "";
    } catch (const std::exception& e) {
      why = one_line(e.what());  // loaded, but a checksum differs: the telling reason
    }
  }
  return why;
}

}  // namespace

TrainProgress read_checkpoint_progress(const std::string& path, ModelConfig* config) {
  torch::serialize::InputArchive archive;
  open(archive, path);
  return read_progress(archive, path, config);
}

void load_checkpoint_state(const std::string& path, LanguageModel& model,
                           torch::optim::Optimizer* optimizer) {
  torch::serialize::InputArchive archive;
  open(archive, path);
  load_state(archive, path, model, optimizer);
}

TrainProgress resume_checkpoint(const std::string& path, LanguageModel& model,
                                torch::optim::Optimizer& optimizer) {
  torch::serialize::InputArchive archive;
  open(archive, path);
  ModelConfig saved;
  auto progress = read_progress(archive, path, &saved);
  if (const auto diff = identity_differences(saved, model->config); !diff.empty())
    throw UsageError(fmt::format("--resume: checkpoint '{}' was written for another model "
                                 "configuration: {}", path, diff));
  load_state(archive, path, model, &optimizer);
  return progress;
}

LoadedModel load_model(const std::string& path) {
  std::error_code ec;
  const auto file = fs::is_directory(path, ec) ? checkpoint_path(path) : path;
  torch::serialize::InputArchive archive;
  open(archive, file);
  LoadedModel m;
  m.progress = read_progress(archive, file, &m.config);
  m.step = m.progress.step;
  m.model = LanguageModel(m.config);
  load_state(archive, file, m.model, nullptr);
  // Evaluating needs the weights only; a corrupt optimiser state matters to a resume: say so.
  if (const auto why = m.progress.weights_only ? std::string() : optimizer_problem(archive, file, m.model);
      !why.empty())
    std::cerr << fmt::format("warning: checkpoint '{}': its optimizer state does not load or verify "
                             "({}); its weights are intact and are used, but the run cannot be "
                             "resumed\n", file, why);
  m.model->eval();
  return m;
}

TrainingRecord training_record(const std::string& checkpoint) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(checkpoint)) {
    torch::serialize::InputArchive archive;
    open(archive, checkpoint);
    if (is_weights_file(archive))
      return {read_string(archive, "train_seed"), read_string(archive, "train_config")};
  }
  fs::path dir(checkpoint);
  if (fs::is_regular_file(dir)) dir = dir.parent_path();
  const auto sidecar = fs::exists(dir / "log.csv.json") ? dir / "log.csv.json"
                                                        : dir / "train_log.csv.json";
  std::ifstream in(sidecar);
  if (!in) return {};  // no sidecar: runs trained before passkey-train kept its log there
  // The sidecar is experiments/provenance.cpp's JSON: {"seed": <integer>, ..., "config": {<flag>:
  // "<value>", ...}}; the run's --config file is the "config" entry of that object (absent when
  // none was given). Indentation and key order do not matter.
  const auto json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    std::cerr << fmt::format("warning: '{}' is not a provenance JSON object; the training run's "
                             "seed and --config are recorded as unknown (empty)\n", sidecar.string());
    return {};
  }
  TrainingRecord record;
  if (const auto seed = json.find("seed"); seed != json.end() && seed->is_number())
    record.seed = seed->dump();
  if (const auto options = json.find("config"); options != json.end() && options->is_object())
    if (const auto file = options->find("config"); file != options->end() && file->is_string())
      record.config = file->get<std::string>();
  return record;
}

void CheckpointFormat::save(const std::string& path, const RunProgress& p) {
  TrainProgress full;
  static_cast<RunProgress&>(full) = p;
  full.preset = preset_;
  full.tokenizer = tokenizer_;
  save_checkpoint(path, model_, optimizer_, full);
}

RunProgress CheckpointFormat::resume(const std::string& path) {
  auto p = resume_checkpoint(path, model_, optimizer_);
  if (p.tokenizer != tokenizer_)
    throw UsageError(fmt::format("--resume: checkpoint '{}' was trained with tokenizer '{}', this "
                                 "run's is '{}'", path, p.tokenizer.empty() ? "bytes" : p.tokenizer,
                                 tokenizer_.empty() ? "bytes" : tokenizer_));
  preset_ = p.preset;
  return p;
}

int64_t CheckpointFormat::saved_step(const std::string& path) {
  return read_checkpoint_progress(path, nullptr).step;
}

}  // namespace fpa::lm
