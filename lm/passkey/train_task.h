// passkey-train's study for the suite's one training loop (experiments/train_loop.h): batches
// of length-L passkey prompts mixed with optional corpus text (lm/passkey/batch.h), an optional length curriculum,
// the passkey loss, held-out checks of the answer and a stop once a run has learned the task.
#pragma once

#include "lm/passkey/batch.h"
#include "lm/passkey/heldout.h"
#include "experiments/execution.h"
#include "experiments/train_loop.h"
#include "lm/model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fpa::passkey {

// --curriculum "320:400,400:300": 400 steps at length 320, then 300 at 400, then --length.
struct Stage {
  int64_t length, steps;
};
// Throws UsageError unless every stage is LENGTH:STEPS with min_length <= LENGTH < final_length.
std::vector<Stage> parse_curriculum(const std::string& text, int64_t final_length, int64_t min_length);

struct TaskOptions {
  std::vector<Stage> curriculum;
  int64_t final_length = 0;     // L, the model's context
  int64_t batch = 0;            // sequences per step (and per held-out batch)
  double answer_weight = 1.0;   // weight of the answer-digit CE added to the mean CE
  int64_t check_every = 0;      // steps between held-out checks; 0: none
  double learned_accuracy = 0.95;
  bool stop_when_learned = false;
  Execution execution;          // --device and --precision (the model is on execution.device)
};

class PasskeyTask final : public TrainTask {
 public:
  // `model`, `data` and `heldout` (empty when check_every is 0) stay owned by the caller.
  PasskeyTask(TaskOptions options, lm::LanguageModel& model, BatchMaker& data,
              const HeldOutSet& heldout);

  std::string log_header() const override;
  std::string upgrade_log_rows(const std::string& rows) const override;
  std::string data_state() const override { return data_.state(); }
  void set_data_state(const std::string& s) override { data_.set_state(s); }
  double forward_backward(int64_t step, int64_t& tokens) override;
  void evaluate(int64_t done) override;
  std::string log_row(const StepRecord& r) const override;
  std::string progress_note(const StepRecord& r) const override;
  std::string goal_reached() const override;
  std::string goal_reached_in(const std::string& log_rows) const override;

 private:
  TaskOptions o_;
  lm::LanguageModel& model_;
  BatchMaker& data_;
  const HeldOutSet& heldout_;
  PasskeyLoss loss_{};       // the last step's loss terms, for the log
  int64_t length_ = 0;       // the last step's sequence length
  std::string check_cell_;   // the held-out accuracy of this step's check, or ""
  std::string last_check_;   // the latest check, on the progress line
  int64_t check_step_ = 0;   // the step of the latest check
  bool learned_now_ = false;
};

}  // namespace fpa::passkey
