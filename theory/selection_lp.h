// T4: which subsets of n fixed keys can one attention head select, decided by linear
// programming feasibility with a margin (GLPK, dual simplex warm-started across subsets).
//
// A head selects S when some query puts every key of S at least 2 logit units above every
// other key: there are w in R^d, c and (for FoX) lambda with
//     w.k_j + c + lambda * u_j >= 1   for j in S,      <= -1   for j not in S.
//   Softmax       : lambda = 0 (no bias).
//   Fox           : u_j = -F_j is fixed when key j arrives and enters every logit with
//                   weight +1; the network may scale u by any M > 0 beforehand, so the
//                   selectable sets are those feasible with lambda >= 0.
//   FoxFreeWeight : lambda free in sign (a relaxation: the extra coordinate as an ordinary
//                   feature). This is SPEC's "one extra coordinate" bound.
#pragma once

#include <cstdint>
#include <vector>

struct glp_prob;

namespace fpa::theory {

enum class Selector { Softmax, Fox, FoxFreeWeight };
const char* to_string(Selector s);

class SelectionLp {
 public:
  // keys: n rows of dimension d; extra: u_j (n entries; ignored for Softmax).
  SelectionLp(const std::vector<std::vector<double>>& keys, const std::vector<double>& extra,
              Selector selector);
  ~SelectionLp();
  SelectionLp(const SelectionLp&) = delete;
  SelectionLp& operator=(const SelectionLp&) = delete;

  // Bit j of `subset` says whether key j is to be selected.
  bool selectable(uint64_t subset);
  int64_t lp_solves() const { return solves_; }

 private:
  glp_prob* lp_;
  int n_;
  int64_t solves_ = 0;
};

}  // namespace fpa::theory
