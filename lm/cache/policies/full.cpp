// full: keep every key (the uncompressed reference).
#include "lm/cache/select.h"

namespace fpa::cache {
namespace {

class Full : public Policy {
 public:
  using Policy::Policy;
  std::string name() const override { return "full"; }
  bool budgeted() const override { return false; }
  bool keeps_everything() const override { return true; }
  Keep select(const Context& c) const override { return keep_all(c.heads, true); }
};

}  // namespace

Registration register_full() {
  return {"full", "keep every key", [](const Settings& s) { return std::make_unique<Full>(s); }};
}

}  // namespace fpa::cache
