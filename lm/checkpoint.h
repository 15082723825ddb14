// Checkpoints: one file, <run-dir>/checkpoint.pt, replaced atomically (temporary file + rename),
// so a run killed at any moment leaves the previous complete checkpoint.
//
// Contents: the model configuration (text), the model parameters, the AdamW state, the step, the
// tokens seen, the elapsed training time, the data sampler's generator state (the data position;
// the models have no dropout, so nothing else is random) and the CSV log up to that step; and a
// checksum of every model and optimiser tensor and of the configuration text, verified on load
// (a flipped byte is an error naming the file and the tensor). Checkpoints written before the
// checksums existed load unverified, with a note.
#pragma once

#include "lm/model.h"
#include "lm/train_config.h"

#include <torch/torch.h>

#include <string>
#include <utility>

namespace fpa::lm {

struct TrainingRecord;

// What an lm checkpoint records of its run: the loop's progress (experiments/train_loop.h) and
// the preset the run was started with.
struct TrainProgress : RunProgress {
  std::string preset;        // the preset name the run was started with
  std::string tokenizer;     // the sub-word tokenizer's identity line; "" (no key) for bytes
  bool weights_only = false; // a published weights file (save_weights): nothing to resume
};

std::string checkpoint_path(const std::string& run_dir);
// The run a --checkpoint names, for CSVs' run column: a run directory's name, the directory of
// its checkpoint.pt, or a weights file's name without .pt (results/weights/passkey/fpa-s1.pt:
// fpa-s1, as the run it was exported from).
std::string run_name(const std::string& checkpoint);

// The configuration text a checkpoint stores, its parser and the resume check are the field
// table's (lm/settings.h: model_text, model_from_text, identity_differences).

void save_checkpoint(const std::string& path, LanguageModel& model,
                     torch::optim::Optimizer& optimizer, const TrainProgress& progress);
// Reads progress and the model configuration; then `load_checkpoint_state` fills a model and an
// optimiser built from that configuration.
TrainProgress read_checkpoint_progress(const std::string& path, ModelConfig* config);
void load_checkpoint_state(const std::string& path, LanguageModel& model,
                           torch::optim::Optimizer* optimizer);
// Both in one reading of the file (a resume): refuses (UsageError) a checkpoint written for
// another configuration than `model`'s.
TrainProgress resume_checkpoint(const std::string& path, LanguageModel& model,
                                torch::optim::Optimizer& optimizer);

// A published weights file (results/weights/): the model configuration and parameters with
// their checksums, the step, tokens and training time, the preset, and the training run's seed
// and --config file (what evaluators record as train-seed and train-config); no optimiser
// state, data position or log, so about a third of a checkpoint's size. Every evaluator loads
// it where it takes a checkpoint; resuming from it is refused.
void save_weights(const std::string& path, LanguageModel& model, const TrainProgress& progress,
                  const TrainingRecord& record);

struct LoadedModel {
  ModelConfig config;
  LanguageModel model{nullptr};
  int64_t step = 0;
  TrainProgress progress;  // everything else the checkpoint records
};
// `path` is a run directory or a checkpoint file. Throws std::runtime_error with one clear line.
// A checkpoint whose optimiser state is corrupt (its weights verified) loads with a warning.
LoadedModel load_model(const std::string& path);

// The training run's seed and --config file, from the provenance sidecar the trainer wrote beside
// the run's log (<run-dir>/log.csv.json of lm-train, <run-dir>/train_log.csv.json of
// passkey-train); empty strings when absent (runs trained before passkey-train kept its log there).
// Evaluators record them in their own sidecars (train-seed, train-config). A weights file
// carries them itself.
struct TrainingRecord {
  std::string seed, config;
};
TrainingRecord training_record(const std::string& checkpoint);

// The loop's checkpoint format for lm's models (experiments/train_loop.h): save_checkpoint and
// resume_checkpoint of `model` and `optimizer`, keeping the preset the run was started with
// (`preset` for a new run, the checkpoint's on resume) and recording `tokenizer`
// (TrainProgress::tokenizer); a resume with another tokenizer is refused.
class CheckpointFormat final : public Checkpointer {
 public:
  CheckpointFormat(LanguageModel& model, torch::optim::Optimizer& optimizer, std::string preset,
                   std::string tokenizer = "")
      : model_(model), optimizer_(optimizer), preset_(std::move(preset)),
        tokenizer_(std::move(tokenizer)) {}
  void save(const std::string& path, const RunProgress& p) override;
  RunProgress resume(const std::string& path) override;
  int64_t saved_step(const std::string& path) override;

 private:
  LanguageModel& model_;
  torch::optim::Optimizer& optimizer_;
  std::string preset_;
  std::string tokenizer_;
};

}  // namespace fpa::lm
