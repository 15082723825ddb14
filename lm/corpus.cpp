#include "lm/corpus.h"

#include <algorithm>

namespace fpa::lm {

at::Tensor encode_bytes(const std::string& text) {
  auto t = at::empty({int64_t(text.size())}, at::kLong);
  auto* p = t.data_ptr<int64_t>();
  for (size_t i = 0; i < text.size(); ++i) p[i] = static_cast<unsigned char>(text[i]);
  return t;
}

std::string decode_bytes(const at::Tensor& tokens) {
  auto t = tokens.to(at::kLong).contiguous().cpu();
  std::string s(t.numel(), '\0');
  const auto* p = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i) s[i] = static_cast<char>(p[i]);
  return s;
}

at::Tensor token_stream(const std::vector<Document>& docs) {
  size_t total = 0;
  for (const auto& d : docs) total += d.text.size() + 1;
  auto t = at::empty({int64_t(total)}, at::kByte);
  auto* p = t.data_ptr<uint8_t>();
  for (const auto& d : docs) {
    std::copy(d.text.begin(), d.text.end(), p);
    p += d.text.size();
    *p++ = '\n';
  }
  return t;
}

}  // namespace fpa::lm
