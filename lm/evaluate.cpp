#include "lm/evaluate.h"

#include "lm/corpus_tokenizer.h"

#include <cmath>

namespace fpa::lm {

double mean_window_loss(LanguageModel& model, const at::Tensor& windows, int64_t batch) {
  torch::NoGradGuard no_grad;
  double total = 0;
  int64_t count = 0;
  for (int64_t s = 0; s < windows.size(0); s += batch) {
    const auto b = windows.narrow(0, s, std::min(batch, windows.size(0) - s)).to(model->device());
    const auto n = b.size(0) * (b.size(1) - 1);
    total += model->loss(b).item<double>() * double(n);
    count += n;
  }
  return total / double(count);
}

double DocumentEval::perplexity() const { return std::exp(nll / double(tokens)); }
double DocumentEval::bits_per_byte() const { return nll / double(bytes) / std::log(2.0); }

namespace {

// Adds the per-position losses of windows (b, L) to `e`.
void add_windows(LanguageModel& model, const at::Tensor& windows, DocumentEval& e) {
  const auto w = windows.to(model->device());
  const auto n = w.size(1) - 1;
  const auto logits = model->forward(w.narrow(1, 0, n));
  const auto target = w.narrow(1, 1, n);
  const auto nll = torch::nn::functional::cross_entropy(
                       logits.reshape({-1, logits.size(-1)}), target.reshape({-1}),
                       torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone))
                       .view({w.size(0), n})
                       .to(torch::kCPU, at::kDouble);
  const auto per_pos = nll.sum(0);
  const auto* p = per_pos.data_ptr<double>();
  for (int64_t t = 0; t < n; ++t) {
    e.position_nll[t] += p[t];
    e.position_count[t] += w.size(0);
  }
  e.nll += nll.sum().item<double>();
  e.tokens += nll.numel();
}

// Each document followed by "\n", as ids, cut to `max_tokens_per_doc` when that is > 0.
std::vector<at::Tensor> document_ids(const std::vector<Document>& docs, int64_t max_tokens_per_doc,
                                     const Tokenizer& tokenizer) {
  std::vector<at::Tensor> out;
  for (const auto& d : docs) {
    auto tokens = document_tokens(tokenizer, d.text);
    if (max_tokens_per_doc > 0 && tokens.numel() > max_tokens_per_doc)
      tokens = tokens.narrow(0, 0, max_tokens_per_doc);
    out.push_back(tokens);
  }
  return out;
}

std::vector<at::Tensor> windows_of(const std::vector<at::Tensor>& documents, int64_t context) {
  std::vector<at::Tensor> out;
  for (const auto& tokens : documents) {
    for (int64_t s = 0; s + 1 < tokens.numel(); s += context)
      out.push_back(tokens.narrow(0, s, std::min(context + 1, tokens.numel() - s)));
  }
  return out;
}

}  // namespace

std::vector<at::Tensor> document_windows(const std::vector<Document>& docs, int64_t context,
                                         int64_t max_tokens_per_doc, const Tokenizer& tokenizer) {
  return windows_of(document_ids(docs, max_tokens_per_doc, tokenizer), context);
}

DocumentEval evaluate_documents(LanguageModel& model, const std::vector<Document>& docs,
                                int64_t batch, int64_t max_tokens_per_doc,
                                const Tokenizer& tokenizer) {
  torch::NoGradGuard no_grad;
  const int64_t context = model->config.context;
  DocumentEval e;
  e.position_nll.assign(context, 0.0);
  e.position_count.assign(context, 0);
  std::vector<at::Tensor> full;  // complete windows, batched together
  auto flush = [&] {
    if (full.empty()) return;
    add_windows(model, at::stack(full), e);
    full.clear();
  };
  const auto documents = document_ids(docs, max_tokens_per_doc, tokenizer);
  for (const auto& d : documents) e.bytes += predicted_bytes(tokenizer, d);
  for (const auto& w : windows_of(documents, context)) {
    if (w.numel() == context + 1) {
      full.push_back(w);
      if (int64_t(full.size()) == batch) flush();
    } else {
      add_windows(model, w.unsqueeze(0), e);  // a document's short last window
    }
  }
  flush();
  return e;
}

}  // namespace fpa::lm
