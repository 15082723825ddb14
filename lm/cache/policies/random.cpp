// random: per head, a random subset of the capacity (and the newest key): the floor every
// method should beat. A key's draw is a hash of (seed, head, position), so the same key keeps
// its draw at every eviction and the same seed gives the same evictions.
#include "lm/cache/select.h"

namespace fpa::cache {
namespace {

double draw(uint64_t seed, uint64_t head, uint64_t position) {  // splitmix64 -> [0, 1)
  uint64_t z = seed * 0x9E3779B97F4A7C15ull ^ (head << 40) ^ position;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-53;
}

class Random : public Policy {
 public:
  using Policy::Policy;
  std::string name() const override { return "random"; }
  Keep select(const Context& c) const override {
    Scores score;
    for (size_t h = 0; h < c.heads.size(); ++h) {
      score.emplace_back(c.heads[h].position.size());
      for (size_t e = 0; e < score.back().size(); ++e)
        score.back()[e] = draw(settings().seed, h, uint64_t(c.heads[h].position[e]));
    }
    return keep_newest_and_top_per_head(c, score, settings().budget);
  }
};

}  // namespace

Registration register_random() {
  return {"random", "a random subset of every head's keys (a floor)",
          [](const Settings& s) { return std::make_unique<Random>(s); }};
}

}  // namespace fpa::cache
