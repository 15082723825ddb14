// Passkey prompts in a sub-word model's tokens (SentencePiece checkpoints, issue 47): the byte
// prompt's text parts (prompt.h), the length counted in tokens.
//
//   <instruction> <filler ...> <key sentence> <filler ...> <question> <answer>
//
// Each part is encoded on its own and the ids concatenated. Parts meet at sentence boundaries, and
// the space between two sentences starts the next part (" The sky is blue."): SentencePiece splits
// its input before every space and segments each piece on its own (our models add no dummy prefix,
// lm/sentencepiece_tokenizer.h), so the concatenation is the tokenization of the whole text and
// every part, the key sentence included, begins on a token boundary. The filler is the byte
// prompt's (the same text from the same offset, wrapping around), encoded a sentence at a time.
//
// The whole sequence, answer included, is exactly `length` tokens: the filler's tokens are cut
// where the length says (the last filler sentence before the question may end mid-word, as the
// byte prompt's filler ends mid-sentence). The key sentence goes at the filler sentence boundary
// (in tokens) nearest to depth x filler tokens. The question is the byte question without its
// trailing space ("... The pass key is") and the answer " NNNNN" carries the space: SentencePiece
// segments a word with the space before it, so the prompt and its answer stay the tokenization of
// their whole text, as the model saw text in training.
// Greedy decoding then generates key_digits + 1 tokens, judged on their text (answer_matches).
#pragma once

#include "lm/passkey/prompt.h"

#include <cstdint>
#include <string>

namespace fpa::passkey {

// The prompt of exactly `length` tokens of config.tokenizer with `key` at `depth`, its filler read
// from `filler_offset` of config.filler on. Throws std::invalid_argument as make_prompt does (a
// length shorter than the fixed parts, a depth outside [0, 1], an offset outside the filler, a
// key of the wrong length) or when the configuration has no tokenizer.
Prompt make_token_prompt(const PromptConfig& config, int64_t length, double depth,
                         const std::string& key, int64_t filler_offset = 0);

// The most tokens the fixed parts (instruction, key sentence, question, answer) take with any key:
// the parts' tokens, with each space-separated piece that holds the key counted as its bytes (a
// token holds at least one byte). A length below it may not fit a prompt.
int64_t fixed_tokens_bound(const PromptConfig& config);

}  // namespace fpa::passkey
