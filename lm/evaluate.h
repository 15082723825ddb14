// Loss of a model on held-out text: mean loss over fixed windows (validation during training),
// and per-document evaluation for lm-eval.
#pragma once

#include "lm/corpus.h"
#include "lm/model.h"
#include "lm/tokenizer.h"

#include <vector>

namespace fpa::lm {

// Mean next-token loss (nats) over (n, context + 1) windows, in batches of `batch` windows.
double mean_window_loss(LanguageModel& model, const at::Tensor& windows, int64_t batch);

struct DocumentEval {
  double nll = 0;                      // total loss over all predicted tokens (nats)
  int64_t tokens = 0;                  // predicted tokens
  int64_t bytes = 0;                   // the bytes they stand for (= tokens for the bytes kind)
  std::vector<double> position_nll;    // summed loss at each position 0..context-1 of a window
  std::vector<int64_t> position_count;
  double perplexity() const;           // exp(nll / tokens)
  double bits_per_byte() const;        // nll / bytes / ln 2
};

// The windows evaluate_documents scores, in its order: each document (followed by '\n') cut into
// windows of at most context + 1 tokens that overlap by one (a document's last may be shorter).
std::vector<at::Tensor> document_windows(const std::vector<Document>& docs, int64_t context,
                                         int64_t max_tokens_per_doc = 0,
                                         const Tokenizer& tokenizer = Tokenizer::bytes());

// Each document (followed by '\n') is cut into consecutive windows of context + 1 tokens that
// overlap by one, so every token after the first is predicted exactly once, from context that
// starts at its window's beginning. Position p of a window is the (p+1)-th prediction in it; a
// document's first window starts at its first byte, so position curves show the use of context.
// `max_tokens_per_doc` > 0 truncates documents (for quick runs). Tokens are the ids of
// `tokenizer`, the one the model was trained with (lm/corpus_tokenizer.h).
DocumentEval evaluate_documents(LanguageModel& model, const std::vector<Document>& docs,
                                int64_t batch, int64_t max_tokens_per_doc = 0,
                                const Tokenizer& tokenizer = Tokenizer::bytes());

}  // namespace fpa::lm
