// The one list of cache policies: a method's file defines register_<name>() (lm/cache/
// policies/), and its name here makes it a --policies value everywhere.
#include "lm/cache/policy.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#define FPA_CACHE_POLICIES(X)                                                            \
  X(full) X(fpa_certified) X(budget) X(budget_per_head) X(window) X(h2o) X(tova) X(knorm) \
  X(random) X(duo_certified) X(duo_calibrated) X(fox_acp) X(snapkv)

namespace fpa::cache {

#define FPA_DECLARE(name) Registration register_##name();
FPA_CACHE_POLICIES(FPA_DECLARE)
#undef FPA_DECLARE

const std::vector<Registration>& registry() {
#define FPA_ENTRY(name) register_##name(),
  static const std::vector<Registration> all = {FPA_CACHE_POLICIES(FPA_ENTRY)};
#undef FPA_ENTRY
  return all;
}

std::string policy_names() {
  std::string out;
  for (const auto& r : registry()) out += (out.empty() ? "" : ", ") + r.name;
  return out;
}

std::unique_ptr<Policy> make_policy(const std::string& name, const Settings& settings) {
  for (const auto& r : registry())
    if (r.name == name) return r.make(settings);
  if (name == "certified")  // retired spelling of the first passkey CSVs' command lines
    throw std::invalid_argument("cache policy 'certified' is now 'fpa-certified'");
  throw std::invalid_argument(fmt::format("unknown cache policy '{}' ({})", name, policy_names()));
}

std::vector<std::unique_ptr<Policy>> make_policies(const std::vector<std::string>& names,
                                                   const std::vector<double>& budgets,
                                                   Settings settings, bool model_has_bias,
                                                   std::vector<std::string>* skipped) {
  std::vector<std::unique_ptr<Policy>> out;
  for (const auto& name : names) {
    auto policy = make_policy(name, settings);
    if (policy->needs_bias() && !model_has_bias) {
      if (skipped) skipped->push_back(name);
      continue;
    }
    if (!policy->budgeted()) {
      out.push_back(std::move(policy));
      continue;
    }
    for (double b : budgets) {
      settings.budget = b;
      out.push_back(make_policy(name, settings));
    }
  }
  return out;
}

void Settings::validate() const {
  if (!(epsilon > 0 && epsilon < 1)) throw std::invalid_argument("policy: epsilon must be in (0, 1)");
  if (!(budget > 0 && budget <= 1)) throw std::invalid_argument("policy: budget must be in (0, 1]");
  if (sinks < 0) throw std::invalid_argument("policy: sinks must be >= 0");
  if (duo_window < 1) throw std::invalid_argument("policy: duo window must be >= 1");
  if (observe < 1) throw std::invalid_argument("policy: observe must be >= 1");
}

Keep select_checked(const Policy& p, const Context& c) {
  const auto need = p.reads();
  for (const auto& h : c.heads) {
    if (h.bias.size() != h.position.size())
      throw std::invalid_argument("policy: bias and position sizes differ");
    if (need.r && std::isnan(h.r))
      throw std::invalid_argument(fmt::format("policy {} needs each head's R (views with R)", p.name()));
    if ((need.weight && h.weight.size() != h.position.size()) ||
        (need.mass && h.mass.size() != h.position.size()) ||
        (need.key_norm && h.key_norm.size() != h.position.size()))
      throw std::invalid_argument(fmt::format("policy {}: the views lack a signal it reads", p.name()));
  }
  if (c.lookahead < 0) throw std::invalid_argument("policy: lookahead must be >= 0");
  if (p.needs_head_scores() && c.head_scores.size() != c.heads.size())
    throw std::invalid_argument(fmt::format("policy {} needs one calibration score per head", p.name()));
  auto keep = p.select(c);
  if (keep.size() != c.heads.size()) throw std::logic_error("policy: one mask per head");
  for (size_t h = 0; h < keep.size(); ++h)
    if (keep[h].size() != c.heads[h].position.size()) throw std::logic_error("policy: mask size");
  return keep;
}

double occupancy(const std::vector<HeadView>& heads, int64_t query) {
  if (heads.empty()) return 0.0;
  size_t kept = 0;
  for (const auto& h : heads) kept += h.position.size();
  return double(kept) / (double(heads.size()) * double(query + 1));
}

}  // namespace fpa::cache
