// Passkey prompts (SPEC section 6), byte-level here; in a sub-word model's tokens when the
// configuration holds a tokenizer (token_prompt.h, same text parts, length counted in tokens).
//
//   <instruction> <filler ...> <key sentence> <filler ...> <question> NNNNN
//
// The whole sequence, answer digits included, is exactly `length` bytes: the filler (a text
// repeated as often as needed) fills what the fixed parts leave. The key sentence is inserted at
// the filler sentence boundary nearest to `depth` (0 = right after the instruction, 1 = right
// before the question). The question ends with a space, so the answer is the next key_digits
// bytes, which greedy decoding must reproduce exactly.
#pragma once

#include "lm/tokenizer.h"

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace fpa::passkey {

struct PromptConfig {
  std::string instruction =
      "There is an important info hidden inside a lot of irrelevant text. Find it and memorize "
      "it. I will quiz you about the important information there. ";
  std::string filler =
      "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back "
      "again. ";
  // Where `filler` came from, as --filler and the CSVs' `filler` column name it (filler.h):
  // "repeated" (the classic form: every prompt's filler is `filler` from its start, repeated) or
  // a corpus split ("corpus-test", ...), whose text `filler` then holds: each prompt takes its own
  // passage of it, starting at a sentence start (draw_prompts picks them, from filler_seed).
  std::string filler_source = "repeated";
  uint64_t filler_seed = 0;
  bool passages() const { return filler_source != "repeated"; }
  std::string question = "What is the pass key? The pass key is ";
  int key_digits = 5;
  // A sub-word checkpoint's tokenizer (SentencePiece): prompts are then made in its tokens
  // (token_prompt.h) and every length counts tokens. Null: bytes, the published path.
  std::shared_ptr<const lm::Tokenizer> tokenizer;
  bool subword() const { return tokenizer != nullptr; }

  // Bytes taken by everything but the filler (instruction, key sentence, question, answer).
  int64_t fixed_bytes() const;
  void validate() const;  // throws std::invalid_argument
};

// Positions count the model's tokens: bytes here, sub-word ids for token_prompt.h's prompts.
struct Prompt {
  std::string text;        // the full sequence as text: prompt then the answer
  std::string key;         // the digits
  int64_t answer_start;    // ids[answer_start..] is the answer (bytes: text[answer_start, +key_digits) == key)
  int64_t key_position;    // where the key sentence starts
  double depth;            // the requested depth in [0, 1]
  int64_t filler_offset = 0;  // where the filler starts in PromptConfig::filler
  std::vector<int64_t> ids;   // the whole sequence in the model's tokens, answer included
  // Tokens greedy decoding generates after the question: key_digits bytes, or key_digits + 1
  // sub-word tokens (enough for the answer's space and digits even one character a token).
  int64_t answer_tokens = 0;
  // The tokens holding the key's digits in the key sentence, [begin, end) per occurrence.
  std::pair<int64_t, int64_t> key_spans[2] = {};
  std::shared_ptr<const lm::Tokenizer> tokenizer;  // null: bytes
};

// The generated tokens as text: bytes as they are, sub-word ids decoded by the prompt's tokenizer.
std::string answer_text(const Prompt& prompt, const std::vector<int64_t>& generated);

// Whether greedy decoding's answer is right, judged on text: `answer` is what the tokens generated
// after the question decode to. One leading space is dropped (a sub-word question ends before the
// answer's space, which a SentencePiece piece carries: "▁12345"); then the next key.size()
// characters must be the key; what follows them is not read. For bytes (key_digits bytes after a
// question ending in a space) this is exactly answer == key.
bool answer_matches(const std::string& key, const std::string& answer);

// "The pass key is <key>. Remember it. <key> is the pass key. " (a trailing space, as every part).
std::string key_sentence(const std::string& key);

// A random key of `digits` digits, first digit non-zero.
std::string random_key(int digits, std::mt19937_64& rng);

// The prompt of exactly `length` bytes with `key` at `depth`, its filler read from
// `filler_offset` in config.filler on (wrapping around). Throws std::invalid_argument when
// length < fixed_bytes(), depth is outside [0, 1] or the offset outside the filler.
Prompt make_prompt(const PromptConfig& config, int64_t length, double depth, const std::string& key,
                   int64_t filler_offset = 0);

// Offsets right after each sentence end (". ", "! ", "? ") of `text`, 0 included (the key
// sentence goes at one of them; a passage of natural filler starts at one).
std::vector<int64_t> sentence_starts(const std::string& text);

// Depths spread over the prompt: k evenly spaced values from 0 to 1 (k = 1 gives 0.5).
std::vector<double> spread_depths(int k);

// Where passages may start in config.filler (sentence starts, the end excluded); empty for the
// repeated filler. pick_passage draws one (0 when `starts` is empty, drawing nothing).
std::vector<int64_t> passage_starts(const PromptConfig& config);
int64_t pick_passage(const std::vector<int64_t>& starts, std::mt19937_64& rng);

// The evaluation prompts of one length: `keys` random keys, depths cycling through `depths`.
// passkey-eval and passkey-probe both draw through this, so the same --seed, --lengths, --keys
// and --depths give both tools the same prompts. With passages, each prompt's passage start is
// drawn from a generator of its own (config.filler_seed and the length), never from `rng`: the
// keys are the same in every filler.
std::vector<Prompt> draw_prompts(const PromptConfig& config, int64_t length, int keys,
                                 const std::vector<double>& depths, std::mt19937_64& rng);

// Reads a filler text from a file (whitespace runs collapsed, a trailing space added); throws
// std::runtime_error when the file is missing or holds no text.
std::string read_filler_file(const std::string& path);

// Bytes as token ids (0..255).
std::vector<int64_t> to_tokens(const std::string& text);

}  // namespace fpa::passkey
