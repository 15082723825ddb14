#include "lm/passkey/policy.h"

#include "kernels/eviction.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <tuple>

namespace fpa::passkey {
namespace {

struct Ref {  // 24 bytes (a shared budget ranks every entry of every head); indices < 2^32
  double bias;
  int64_t position;
  uint32_t head, index;
};

// Higher bias first; among equal biases the more recent key first.
bool better(const Ref& a, const Ref& b) {
  return std::tie(a.bias, a.position) > std::tie(b.bias, b.position);
}

int64_t capacity(double budget, int64_t full_entries) {
  return int64_t(std::floor(budget * double(full_entries) + 1e-9));
}

// Keeps the best `cap` of `refs` (plus the forced ones already marked in keep).
void keep_best(std::vector<Ref>& refs, int64_t cap, std::vector<std::vector<bool>>& keep) {
  cap = std::max<int64_t>(0, std::min<int64_t>(cap, int64_t(refs.size())));
  std::nth_element(refs.begin(), refs.begin() + cap, refs.end(), better);
  for (int64_t r = 0; r < cap; ++r) keep[refs[size_t(r)].head][refs[size_t(r)].index] = true;
}

// Index of each head's newest key (the current token), or npos for an empty head.
size_t newest(const HeadCache& h) {
  if (h.position.empty()) return size_t(-1);
  return size_t(std::max_element(h.position.begin(), h.position.end()) - h.position.begin());
}

}  // namespace

std::string to_string(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::Full: return "full";
    case PolicyKind::FpaCertified: return "fpa-certified";
    case PolicyKind::Budget: return "budget";
    case PolicyKind::Window: return "window";
  }
  return "?";
}

PolicyKind parse_policy(const std::string& name) {
  if (name == "full") return PolicyKind::Full;
  if (name == "fpa-certified" || name == "certified") return PolicyKind::FpaCertified;
  if (name == "budget") return PolicyKind::Budget;
  if (name == "window") return PolicyKind::Window;
  throw std::invalid_argument(
      fmt::format("unknown cache policy '{}' (full, fpa-certified, budget, window)", name));
}

PolicyConfig policy_named(const std::string& name) {
  PolicyConfig p;
  if (name == "budget-per-head") {
    p.kind = PolicyKind::Budget;
    p.per_head = true;
    return p;
  }
  try {
    p.kind = parse_policy(name);
  } catch (const std::invalid_argument&) {  // name every accepted name, not only the kinds
    throw std::invalid_argument(fmt::format(
        "unknown cache policy '{}' (full, fpa-certified, budget, budget-per-head, window)", name));
  }
  return p;
}

void PolicyConfig::validate() const {
  if (!(epsilon > 0 && epsilon < 1)) throw std::invalid_argument("policy: epsilon must be in (0, 1)");
  if (!(budget > 0 && budget <= 1)) throw std::invalid_argument("policy: budget must be in (0, 1]");
  if (sinks < 0) throw std::invalid_argument("policy: sinks must be >= 0");
  if (window < 0) throw std::invalid_argument("policy: window must be >= 0");
}

std::vector<std::vector<bool>> select_keep(const PolicyConfig& config,
                                           const std::vector<HeadCache>& heads, int64_t query,
                                           int64_t final_length, int64_t lookahead) {
  config.validate();
  if (lookahead < 0) throw std::invalid_argument("policy: lookahead must be >= 0");
  std::vector<std::vector<bool>> keep(heads.size());
  for (size_t h = 0; h < heads.size(); ++h) {
    if (heads[h].bias.size() != heads[h].position.size())
      throw std::invalid_argument("policy: bias and position sizes differ");
    keep[h].assign(heads[h].position.size(), config.kind == PolicyKind::Full);
  }
  const int64_t full = query + 1;  // keys a full cache holds per head
  // Budget at the last query before the next eviction, minus the entries the new tokens add.
  const auto ahead = [&](int64_t per_query_heads) {
    return capacity(config.budget, (full + lookahead) * per_query_heads) - lookahead * per_query_heads;
  };
  switch (config.kind) {
    case PolicyKind::Full:
      break;
    case PolicyKind::FpaCertified:
      for (size_t h = 0; h < heads.size(); ++h) {
        if (std::isnan(heads[h].r))
          throw std::invalid_argument("policy: fpa-certified needs each head's R (views with R)");
        const double t = fpa::certified_eviction_threshold(heads[h].r, full, config.epsilon);
        for (size_t j = 0; j < heads[h].bias.size(); ++j) keep[h][j] = heads[h].bias[j] >= t;
      }
      break;
    case PolicyKind::Budget: {
      // Every head keeps its newest key; the rest compete for the remaining capacity.
      std::vector<std::vector<Ref>> pools(config.per_head ? heads.size() : 1);
      size_t entries = 0;
      for (const auto& h : heads) entries += h.position.size();
      if (config.per_head) {
        for (size_t h = 0; h < heads.size(); ++h) pools[h].reserve(heads[h].position.size());
      } else {
        pools[0].reserve(entries);
      }
      int64_t forced = 0;
      for (size_t h = 0; h < heads.size(); ++h) {
        const size_t top = newest(heads[h]);
        if (top != size_t(-1)) { keep[h][top] = true; ++forced; }
        auto& pool = pools[config.per_head ? h : 0];
        for (size_t j = 0; j < heads[h].bias.size(); ++j)
          if (j != top) pool.push_back({heads[h].bias[j], heads[h].position[j], uint32_t(h), uint32_t(j)});
      }
      if (config.per_head) {
        for (auto& pool : pools) keep_best(pool, ahead(1) - 1, keep);
      } else {
        keep_best(pools[0], ahead(int64_t(heads.size())) - forced, keep);
      }
      break;
    }
    case PolicyKind::Window: {
      const int64_t w0 = config.window > 0
                             ? config.window
                             : capacity(config.budget, final_length) - config.sinks;
      const int64_t w = std::max<int64_t>(1, w0 - lookahead);
      for (size_t h = 0; h < heads.size(); ++h)
        for (size_t j = 0; j < heads[h].position.size(); ++j) {
          const int64_t p = heads[h].position[j];
          keep[h][j] = p < config.sinks || p > query - w;
        }
      break;
    }
  }
  return keep;
}

bool reads_r(const PolicyConfig& config) { return config.kind == PolicyKind::FpaCertified; }

double occupancy(const std::vector<HeadCache>& heads, int64_t query) {
  if (heads.empty()) return 0.0;
  size_t kept = 0;
  for (const auto& h : heads) kept += h.position.size();
  return double(kept) / (double(heads.size()) * double(query + 1));
}

}  // namespace fpa::passkey
