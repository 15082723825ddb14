// A language model's training settings: the suite's schedule (experiments/train_loop.h: steps,
// lr, warm-up, cosine floor, clipping) and what lm's trainers add to it. Every value is a row of
// the field table (lm/settings.cpp), so it is named, checked and recorded there.
#pragma once

#include "experiments/train_loop.h"
#include "lm/tokenizer.h"

#include <cstdint>

namespace fpa::lm {

struct TrainConfig : TrainSchedule {
  TrainConfig() { clip = 1.0; }  // lm's trainers clip the global gradient norm to 1
  int64_t batch = 16;            // sequences per optimiser step (global, over all ranks)
  int64_t accum = 1;             // micro-batches per step (gradient accumulation)
  double weight_decay = 0.1;     // AdamW, on weight matrices only (not norms or biases)
  // The token embedding (tied to the output layer by default) is a matrix too: lm-train decays
  // it (its published runs did); passkey-train does not (lm/optimizer.h, lm/passkey/README.md).
  bool decay_embeddings = true;
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  int64_t val_every = 100;       // steps between validation passes (lm-train)
  int64_t val_windows = 32;      // validation windows per pass (fixed, the first ones)
  int64_t checkpoint_every = 100;
  // The corpus's token ids (lm/corpus_tokenizer.h): bytes, or a SentencePiece model of the
  // model's vocab_size pieces. Not a checkpoint setting: the checkpoint records the tokenizer's
  // identity line instead, only for sentencepiece (published checkpoints' text stays as it was).
  TokenizerKind tokenizer = TokenizerKind::Bytes;
};

}  // namespace fpa::lm
