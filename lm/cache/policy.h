// KV-cache eviction policies as units (pure logic, no tensors): what a policy reads of the cache,
// which entries it keeps, and how it names itself in CSVs. The decoder (lm/decode.h) hands in,
// for every (layer, head), a view of its cache (kernels/cache_view.h): positions and biases b_ij
// always, and the optional signals the policy asked for (R, attention weights at the latest
// query, attention mass accumulated since each key entered, key norms). A policy answers which
// entries to keep. Evicted entries never come back.
//
// Adding a method: one file in lm/cache/policies/ defining `register_<name>()` (see any of
// them), built from the selection helpers in lm/cache/select.h, and one name in the list in
// lm/cache/registry.cpp. lm/cache/README.md lists the methods and what each reads.
#pragma once

#include "kernels/cache_view.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fpa::cache {

using HeadView = fpa::CacheHeadView;
using Signals = fpa::CacheSignals;
using Keep = std::vector<std::vector<bool>>;  // keep[head][entry], heads as in the views

// The settings a policy may read (each policy documents which). One struct for all, so that a
// command line or config file sets them once for every policy evaluated.
struct Settings {
  double budget = 0.25;      // budgeted policies: kept fraction of a full cache, in (0, 1]
  double epsilon = 1e-3;     // certified policies (fpa-certified, fox-acp)
  int64_t sinks = 4;         // window, h2o's and duo's window heads: first positions always kept
  int64_t duo_window = 60;   // duo-*: recent tokens a window head keeps (beside the sinks)
  int64_t observe = 32;      // snapkv: the prompt's last queries whose attention scores keys
  uint64_t seed = 0;         // random: which keys survive
  void validate() const;     // throws std::invalid_argument
};

// What one eviction sees.
struct Context {
  const std::vector<HeadView>& heads;  // every layer's heads, flattened (layer-major)
  int64_t query;         // 0-based position i of the query just processed: full = i + 1 keys
  int64_t final_length;  // the sequence's final length (window and duo sizes)
  int64_t lookahead;     // tokens the decoder appends before it evicts again (room left for them)
  // Per-head scores from a calibration run (duo-calibrated); empty otherwise.
  const std::vector<double>& head_scores;
};

class Policy {
 public:
  explicit Policy(Settings s) : settings_(std::move(s)) { settings_.validate(); }
  virtual ~Policy() = default;
  // The command-line name ("h2o", "budget-per-head").
  virtual std::string name() const = 0;
  // The CSV `policy` column and `per_head` column: the name, except budget-per-head, which
  // has been written as policy "budget" with per_head 1 since the first passkey CSVs.
  virtual std::string csv_name() const { return name(); }
  virtual bool per_head() const { return false; }
  virtual bool budgeted() const { return true; }   // reads settings().budget (CSV budget column)
  virtual bool reads_epsilon() const { return false; }  // reads settings().epsilon (CSV column)
  virtual Signals reads() const { return {}; }     // optional signals beyond the bias
  // Query-aware (SnapKV): compresses once, after the question has been read, with the mass
  // accumulated over the prompt's last settings().observe queries. Kept out of the verdicts.
  virtual bool query_aware() const { return false; }
  virtual bool needs_head_scores() const { return false; }  // calibration (duo-calibrated)
  virtual bool keeps_everything() const { return false; }   // full: no eviction at all
  // Ranks by a bias that falls with distance: meaningless on softmax (bias 0 everywhere, every
  // head and key ties), so evaluators skip it there.
  virtual bool needs_bias() const { return false; }
  virtual Keep select(const Context& c) const = 0;
  const Settings& settings() const { return settings_; }

 private:
  Settings settings_;
};

using Factory = std::function<std::unique_ptr<Policy>(const Settings&)>;
struct Registration {
  std::string name;     // command-line name
  std::string summary;  // one line for --help and the README
  Factory make;
};

// Every registered method, in the registry's order.
const std::vector<Registration>& registry();
// By command-line name; throws std::invalid_argument naming every accepted name.
std::unique_ptr<Policy> make_policy(const std::string& name, const Settings& settings);
std::string policy_names();  // "full, fpa-certified, ..." for messages

// The policies one evaluation runs, in `names` order: one per kept fraction in `budgets` for a
// budgeted method, one for the others. A method that ranks by a bias is dropped for a model
// without one (softmax: every key ties), its name added to `skipped` when given. Throws
// std::invalid_argument for an unknown name or bad settings.
std::vector<std::unique_ptr<Policy>> make_policies(const std::vector<std::string>& names,
                                                   const std::vector<double>& budgets,
                                                   Settings settings, bool model_has_bias,
                                                   std::vector<std::string>* skipped = nullptr);

// Checks a keep mask against the views and returns it (the decoder's keep() needs one mask per
// head, as long as the head's entries).
Keep select_checked(const Policy& p, const Context& c);

// Kept entries over the entries a full cache would hold, summed over heads.
double occupancy(const std::vector<HeadView>& heads, int64_t query);

}  // namespace fpa::cache
