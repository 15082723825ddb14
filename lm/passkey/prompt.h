// Passkey prompts (SPEC section 6), byte-level.
//
//   <instruction> <filler ...> <key sentence> <filler ...> <question> NNNNN
//
// The whole sequence, answer digits included, is exactly `length` bytes: the filler (a text
// repeated as often as needed) fills what the fixed parts leave. The key sentence is inserted at
// the filler sentence boundary nearest to `depth` (0 = right after the instruction, 1 = right
// before the question). The question ends with a space, so the answer is the next key_digits
// bytes, which greedy decoding must reproduce exactly.
#pragma once

#include <cstdint>
#include <random>
#include <string>
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

  // Bytes taken by everything but the filler (instruction, key sentence, question, answer).
  int64_t fixed_bytes() const;
  void validate() const;  // throws std::invalid_argument
};

struct Prompt {
  std::string text;        // the full sequence: prompt then the answer digits
  std::string key;         // the digits
  int64_t answer_start;    // text[answer_start, answer_start + key_digits) == key
  int64_t key_position;    // byte offset of the key sentence
  double depth;            // the requested depth in [0, 1]
  int64_t filler_offset = 0;  // where the filler starts in PromptConfig::filler
};

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
