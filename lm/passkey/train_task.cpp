#include "lm/passkey/train_task.h"

#include "experiments/cli.h"

#include <fmt/format.h>
#include <libfccp/csv.h>

#include <algorithm>
#include <array>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace fpa::passkey {
namespace {

// heldout_acc is empty except at held-out checks; length is the step's sequence length.
const char* kLogColumns = "step,tokens,loss,all_ce,answer_ce,lr,elapsed_s,length,heldout_acc";
constexpr size_t kLogFields = 9;
constexpr size_t kLogFieldsV1 = 7;  // logs written before the curriculum and the check

// Rows of N fields, read with the CSV parser (no header: the rows are the checkpoint's copy of
// the log's body).
template <size_t N, size_t... I>
std::vector<std::vector<std::string>> read_log_rows(const std::string& rows, std::index_sequence<I...>) {
  std::istringstream in(rows);
  io::CSVReader<N, io::trim_chars<>, io::no_quote_escape<','>> reader("training log", in);
  reader.set_header(("c" + std::to_string(I))...);
  std::vector<std::vector<std::string>> out;
  std::array<std::string, N> f;
  while (reader.read_row(f[I]...)) out.emplace_back(f.begin(), f.end());
  return out;
}

// The checkpointed log rows as fields; rows of the 7-column logs of older runs, which trained at
// the final length only, get that length and no check.
std::vector<std::vector<std::string>> log_fields(const std::string& log_rows, int64_t final_length) {
  const auto first = log_rows.substr(0, log_rows.find('\n'));
  const bool v1 = size_t(std::count(first.begin(), first.end(), ',')) + 1 == kLogFieldsV1;
  try {
    if (!v1) return read_log_rows<kLogFields>(log_rows, std::make_index_sequence<kLogFields>());
    auto rows = read_log_rows<kLogFieldsV1>(log_rows, std::make_index_sequence<kLogFieldsV1>());
    for (auto& r : rows) r.insert(r.end(), {std::to_string(final_length), ""});
    return rows;
  } catch (const io::error::base& e) {
    throw std::runtime_error(std::string("checkpoint: corrupt training log: ") + e.what());
  }
}

int64_t length_at(const std::vector<Stage>& stages, int64_t step, int64_t final_length) {
  for (const auto& st : stages) {
    if (step < st.steps) return st.length;
    step -= st.steps;
  }
  return final_length;
}

}  // namespace

std::vector<Stage> parse_curriculum(const std::string& text, int64_t final_length, int64_t min_length) {
  std::vector<Stage> stages;
  if (text.empty()) return stages;
  for (const auto& item : split_list(text, "curriculum")) {
    const auto colon = item.find(':');
    const auto parts = colon == std::string::npos
                           ? std::vector<int>{}
                           : split_int_list(item.substr(0, colon) + "," + item.substr(colon + 1), "curriculum");
    if (parts.size() != 2 || parts[0] < min_length || parts[0] >= final_length || parts[1] < 1)
      throw UsageError(fmt::format(
          "--curriculum: '{}' is not LENGTH:STEPS with {} <= LENGTH < --length {} and STEPS >= 1",
          item, min_length, final_length));
    stages.push_back({parts[0], parts[1]});
  }
  return stages;
}

PasskeyTask::PasskeyTask(TaskOptions options, lm::LanguageModel& model, BatchMaker& data,
                         const HeldOutSet& heldout)
    : o_(std::move(options)), model_(model), data_(data), heldout_(heldout) {}

std::string PasskeyTask::log_header() const { return kLogColumns; }

std::string PasskeyTask::upgrade_log_rows(const std::string& rows) const {
  const auto first = rows.substr(0, rows.find('\n'));
  if (rows.empty() || size_t(std::count(first.begin(), first.end(), ',')) + 1 == kLogFields) return rows;
  std::string out;
  for (const auto& f : log_fields(rows, o_.final_length)) {
    for (size_t i = 0; i < f.size(); ++i) out += (i ? "," : "") + f[i];
    out += "\n";
  }
  return out;
}

double PasskeyTask::forward_backward(int64_t step, int64_t& tokens) {
  length_ = length_at(o_.curriculum, step, o_.final_length);
  const auto batch = data_.next(length_);
  {
    AutocastScope autocast(o_.execution);  // the forward only: backward runs outside autocast
    loss_ = passkey_loss(model_, batch, o_.answer_weight);
  }
  const double value = loss_.total.item<double>();
  if (std::isfinite(value)) loss_.total.backward();
  tokens += batch.tokens.numel();
  return value;
}

void PasskeyTask::evaluate(int64_t done) {
  check_cell_.clear();
  if (o_.check_every == 0 || done % o_.check_every != 0) return;
  const double acc = [&] {
    AutocastScope autocast(o_.execution);
    return heldout_accuracy(model_, heldout_, o_.batch);
  }();
  check_cell_ = fmt::format("{:.4f}", acc);
  learned_now_ = acc >= o_.learned_accuracy;
  check_step_ = done;
  last_check_ = fmt::format(" held-out {:.2f} at {}", acc, done);
}

std::string PasskeyTask::log_row(const StepRecord& r) const {
  return fmt::format("{},{},{},{},{},{},{:.1f},{},{}", r.step, r.tokens, r.loss, loss_.all_ce,
                     loss_.answer_ce, r.lr, r.elapsed_s, length_, check_cell_);
}

std::string PasskeyTask::progress_note(const StepRecord& r) const {
  return fmt::format("loss {:.3f} answer {:.3f}{}", r.loss, loss_.answer_ce, last_check_);
}

std::string PasskeyTask::goal_reached() const {
  if (!o_.stop_when_learned || !learned_now_ || check_cell_.empty()) return "";
  return fmt::format("learned the task at step {} (held-out accuracy {} >= {})", check_step_,
                     check_cell_, o_.learned_accuracy);
}

std::string PasskeyTask::goal_reached_in(const std::string& log_rows) const {
  if (!o_.stop_when_learned) return "";
  for (const auto& f : log_fields(log_rows, o_.final_length))
    if (!f[8].empty() && std::stod(f[8]) >= o_.learned_accuracy)
      return "learned the task at step " + f[0];
  return "";
}

}  // namespace fpa::passkey
