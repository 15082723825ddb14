#include "lm/passkey/prompt.h"

#include "experiments/usage_error.h"
#include "lm/passkey/token_prompt.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fpa::passkey {

std::string key_sentence(const std::string& key) {
  return fmt::format("The pass key is {}. Remember it. {} is the pass key. ", key, key);
}

std::vector<int64_t> sentence_starts(const std::string& text) {
  std::vector<int64_t> starts = {0};
  for (size_t i = 1; i < text.size(); ++i) {
    const char c = text[i - 1];
    if (text[i] == ' ' && (c == '.' || c == '!' || c == '?')) starts.push_back(int64_t(i) + 1);
  }
  return starts;
}

int64_t PromptConfig::fixed_bytes() const {
  return int64_t(instruction.size() + key_sentence(std::string(key_digits, '0')).size() +
                 question.size()) + key_digits;
}

void PromptConfig::validate() const {
  if (key_digits < 1 || key_digits > 18)
    throw std::invalid_argument("passkey: key length must be in [1, 18] digits");
  if (filler.empty()) throw std::invalid_argument("passkey: the filler text is empty");
}

std::string random_key(int digits, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> first(1, 9), rest(0, 9);
  std::string key(1, char('0' + first(rng)));
  for (int d = 1; d < digits; ++d) key += char('0' + rest(rng));
  return key;
}

Prompt make_prompt(const PromptConfig& config, int64_t length, double depth,
                   const std::string& key, int64_t filler_offset) {
  config.validate();
  if (int(key.size()) != config.key_digits)
    throw std::invalid_argument("passkey: key has the wrong number of digits");
  if (!(depth >= 0.0 && depth <= 1.0)) throw std::invalid_argument("passkey: depth must be in [0, 1]");
  const int64_t filler_bytes = length - config.fixed_bytes();
  if (filler_bytes < 0)
    throw std::invalid_argument(fmt::format(
        "passkey: length {} is shorter than the prompt's fixed parts ({} bytes)", length,
        config.fixed_bytes()));

  if (filler_offset < 0 || filler_offset >= int64_t(config.filler.size()))
    throw std::invalid_argument("passkey: filler offset outside the filler text");

  // The filler stream: the filler text from the offset on, wrapping around, cut to filler_bytes.
  std::string stream = config.filler.substr(size_t(filler_offset));
  while (int64_t(stream.size()) < filler_bytes) stream += config.filler;
  stream.resize(size_t(filler_bytes));

  // Insert the key at the sentence boundary nearest to the requested depth.
  const double target = depth * double(filler_bytes);
  int64_t cut = 0;
  for (int64_t s : sentence_starts(stream))
    if (std::abs(double(s) - target) < std::abs(double(cut) - target)) cut = s;
  if (std::abs(double(filler_bytes) - target) < std::abs(double(cut) - target)) cut = filler_bytes;

  Prompt p;
  p.key = key;
  p.depth = depth;
  p.filler_offset = filler_offset;
  p.text = config.instruction + stream.substr(0, size_t(cut));
  p.key_position = int64_t(p.text.size());
  p.text += key_sentence(key) + stream.substr(size_t(cut)) + config.question;
  p.answer_start = int64_t(p.text.size());
  p.text += key;
  if (int64_t(p.text.size()) != length) throw std::logic_error("passkey: prompt length mismatch");
  p.ids = to_tokens(p.text);
  p.answer_tokens = config.key_digits;
  // Both occurrences of the key in the key sentence (digits never match its other characters).
  size_t from = size_t(p.key_position);
  for (auto& span : p.key_spans) {
    const auto at = p.text.find(key, from);
    span = {int64_t(at), int64_t(at + key.size())};
    from = at + key.size();
  }
  return p;
}

std::vector<double> spread_depths(int k) {
  if (k < 1) throw std::invalid_argument("passkey: need at least one depth");
  if (k == 1) return {0.5};
  std::vector<double> d;
  for (int i = 0; i < k; ++i) d.push_back(double(i) / double(k - 1));
  return d;
}

std::vector<int64_t> passage_starts(const PromptConfig& config) {
  if (!config.passages()) return {};
  auto starts = sentence_starts(config.filler);
  if (starts.size() > 1 && starts.back() >= int64_t(config.filler.size())) starts.pop_back();
  return starts;
}

int64_t pick_passage(const std::vector<int64_t>& starts, std::mt19937_64& rng) {
  if (starts.empty()) return 0;
  return starts[std::uniform_int_distribution<size_t>(0, starts.size() - 1)(rng)];
}

std::vector<Prompt> draw_prompts(const PromptConfig& config, int64_t length, int keys,
                                 const std::vector<double>& depths, std::mt19937_64& rng) {
  const auto starts = passage_starts(config);
  std::seed_seq seq{uint32_t(config.filler_seed), uint32_t(config.filler_seed >> 32),
                    uint32_t(length), 0x46494c4cu};
  std::mt19937_64 passage_rng(seq);
  std::vector<Prompt> prompts;
  for (int k = 0; k < keys; ++k) {
    const int64_t offset = pick_passage(starts, passage_rng);
    const double depth = depths[size_t(k) % depths.size()];
    const auto key = random_key(config.key_digits, rng);
    prompts.push_back(config.subword() ? make_token_prompt(config, length, depth, key, offset)
                                       : make_prompt(config, length, depth, key, offset));
  }
  return prompts;
}

std::string read_filler_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("cannot read filler file '{}'", path));
  std::string word, text;
  while (in >> word) text += word + " ";
  if (text.empty()) throw UsageError(fmt::format("filler file '{}' holds no text", path));
  return text;
}

std::string answer_text(const Prompt& prompt, const std::vector<int64_t>& generated) {
  if (!prompt.tokenizer) return std::string(generated.begin(), generated.end());
  return prompt.tokenizer->decode(std::vector<int32_t>(generated.begin(), generated.end()));
}

bool answer_matches(const std::string& key, const std::string& answer) {
  const size_t from = !answer.empty() && answer[0] == ' ' ? 1 : 0;
  return answer.compare(from, key.size(), key) == 0;
}

std::vector<int64_t> to_tokens(const std::string& text) {
  std::vector<int64_t> t;
  t.reserve(text.size());
  for (unsigned char c : text) t.push_back(int64_t(c));
  return t;
}

}  // namespace fpa::passkey
