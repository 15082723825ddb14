#include "lm/passkey/token_prompt.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

namespace fpa::passkey {
namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// A part as it follows a sentence boundary: the boundary's space first, none after (header).
std::string spaced(const std::string& part) { return " " + trimmed(part); }

std::vector<int64_t> encode(const lm::Tokenizer& t, const std::string& text) {
  const auto ids = t.encode(text);
  return {ids.begin(), ids.end()};
}

// The filler's tokens from `offset` on, a sentence at a time, wrapping around the text, until
// there are at least `count`; `starts` gets where each sentence's tokens begin.
std::vector<int64_t> filler_tokens(const PromptConfig& c, int64_t offset, int64_t count,
                                   std::vector<int64_t>& starts) {
  if (trimmed(c.filler).find_first_not_of(' ') == std::string::npos)
    throw std::invalid_argument("passkey: the filler text is blank");
  auto ends = sentence_starts(c.filler);  // a sentence ends where the next one starts
  ends.push_back(int64_t(c.filler.size()));
  std::unordered_map<int64_t, std::vector<int64_t>> memo;  // by offset: the repeated filler's 5
  std::vector<int64_t> ids;
  for (int64_t at = offset; int64_t(ids.size()) < count;) {
    const int64_t end = *std::upper_bound(ends.begin(), ends.end(), at);
    const auto sentence = trimmed(c.filler.substr(size_t(at), size_t(end - at)));
    if (sentence.find_first_not_of(' ') != std::string::npos) {
      auto it = memo.find(at);
      if (it == memo.end()) it = memo.emplace(at, encode(*c.tokenizer, spaced(sentence))).first;
      starts.push_back(int64_t(ids.size()));
      ids.insert(ids.end(), it->second.begin(), it->second.end());
    }
    at = end >= int64_t(c.filler.size()) ? 0 : end;
  }
  return ids;
}

// The key sentence's tokens whose text holds a digit, as runs: one per occurrence of the key.
void find_key_spans(Prompt& p, const lm::Tokenizer& t, const std::vector<int64_t>& key_part) {
  int runs = 0;
  bool in_run = false;
  for (size_t j = 0; j < key_part.size(); ++j) {
    const auto piece = t.decode({int32_t(key_part[j])});
    const bool digit = piece.find_first_of("0123456789") != std::string::npos;
    const int64_t at = p.key_position + int64_t(j);
    if (digit && !in_run) {
      if (runs == 2) throw std::logic_error("passkey: more than two runs of digits in the key sentence");
      p.key_spans[runs++] = {at, at + 1};
    } else if (digit) {
      p.key_spans[runs - 1].second = at + 1;
    }
    in_run = digit;
  }
  if (runs != 2) throw std::logic_error("passkey: the key sentence's tokens do not hold the key twice");
}

// Tokens of `text` with every space-separated piece holding `key` counted as its bytes (header).
int64_t bound_of(const lm::Tokenizer& t, const std::string& text, const std::string& key) {
  int64_t n = 0;
  for (size_t from = 0; from < text.size();) {
    const size_t next = std::min(text.find(' ', from + 1), text.size());
    const auto piece = text.substr(from, next - from);
    n += piece.find(key) != std::string::npos ? int64_t(piece.size()) : int64_t(t.encode(piece).size());
    from = next;
  }
  return n;
}

}  // namespace

int64_t fixed_tokens_bound(const PromptConfig& config) {
  if (!config.tokenizer) throw std::invalid_argument("passkey: token prompts need a tokenizer");
  const auto& t = *config.tokenizer;
  const std::string key(size_t(config.key_digits), '0');
  return int64_t(t.encode(trimmed(config.instruction)).size() + t.encode(spaced(config.question)).size()) +
         bound_of(t, spaced(key_sentence(key)), key) + bound_of(t, " " + key, key);
}

Prompt make_token_prompt(const PromptConfig& config, int64_t length, double depth,
                         const std::string& key, int64_t filler_offset) {
  config.validate();
  if (!config.tokenizer) throw std::invalid_argument("passkey: token prompts need a tokenizer");
  if (int(key.size()) != config.key_digits)
    throw std::invalid_argument("passkey: key has the wrong number of digits");
  if (!(depth >= 0.0 && depth <= 1.0)) throw std::invalid_argument("passkey: depth must be in [0, 1]");
  if (filler_offset < 0 || filler_offset >= int64_t(config.filler.size()))
    throw std::invalid_argument("passkey: filler offset outside the filler text");
  const auto& t = *config.tokenizer;
  const auto head = encode(t, trimmed(config.instruction));
  const auto key_part = encode(t, spaced(key_sentence(key)));
  const auto question = encode(t, spaced(config.question));
  const auto answer = encode(t, " " + key);
  const int64_t fixed = int64_t(head.size() + key_part.size() + question.size() + answer.size());
  const int64_t filler_count = length - fixed;
  if (filler_count < 0)
    throw std::invalid_argument(fmt::format(
        "passkey: length {} is shorter than the prompt's fixed parts ({} tokens with key {})",
        length, fixed, key));

  std::vector<int64_t> starts;
  auto filler = filler_count > 0 ? filler_tokens(config, filler_offset, filler_count, starts)
                                 : std::vector<int64_t>{};
  filler.resize(size_t(filler_count));
  // The key sentence at the sentence boundary nearest to the requested depth (ties: the earlier).
  const double target = depth * double(filler_count);
  int64_t cut = 0;
  for (int64_t s : starts)
    if (s <= filler_count && std::abs(double(s) - target) < std::abs(double(cut) - target)) cut = s;
  if (std::abs(double(filler_count) - target) < std::abs(double(cut) - target)) cut = filler_count;

  Prompt p;
  p.key = key;
  p.depth = depth;
  p.filler_offset = filler_offset;
  p.tokenizer = config.tokenizer;
  p.answer_tokens = config.key_digits + 1;
  auto& ids = p.ids;
  ids = head;
  ids.insert(ids.end(), filler.begin(), filler.begin() + cut);
  p.key_position = int64_t(ids.size());
  ids.insert(ids.end(), key_part.begin(), key_part.end());
  ids.insert(ids.end(), filler.begin() + cut, filler.end());
  ids.insert(ids.end(), question.begin(), question.end());
  p.answer_start = int64_t(ids.size());
  ids.insert(ids.end(), answer.begin(), answer.end());
  if (int64_t(ids.size()) != length) throw std::logic_error("passkey: token prompt length mismatch");
  find_key_spans(p, t, key_part);
  p.text = t.decode(std::vector<int32_t>(ids.begin(), ids.end()));
  return p;
}

}  // namespace fpa::passkey
