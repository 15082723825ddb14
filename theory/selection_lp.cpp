#include "theory/selection_lp.h"

#include <glpk.h>

#include <stdexcept>
#include <string>

namespace fpa::theory {

const char* to_string(Selector s) {
  switch (s) {
    case Selector::Softmax: return "softmax";
    case Selector::Fox: return "fox";
    case Selector::FoxFreeWeight: return "fox_free_weight";
  }
  return "?";
}

SelectionLp::SelectionLp(const std::vector<std::vector<double>>& keys,
                         const std::vector<double>& extra, Selector selector)
    : lp_(glp_create_prob()), n_(int(keys.size())) {
  const int d = keys.empty() ? 0 : int(keys[0].size());
  const bool has_extra = selector != Selector::Softmax;
  const int cols = d + 1 + (has_extra ? 1 : 0);  // w (d), c, [lambda]
  glp_set_obj_dir(lp_, GLP_MIN);                  // objective 0: a pure feasibility problem
  glp_add_cols(lp_, cols);
  for (int c = 1; c <= cols; ++c) glp_set_col_bnds(lp_, c, GLP_FR, 0, 0);
  if (selector == Selector::Fox) glp_set_col_bnds(lp_, cols, GLP_LO, 0, 0);
  glp_add_rows(lp_, n_);
  std::vector<int> idx(cols + 1);
  std::vector<double> val(cols + 1);
  for (int j = 0; j < n_; ++j) {
    for (int c = 0; c < d; ++c) idx[c + 1] = c + 1, val[c + 1] = keys[j][c];
    idx[d + 1] = d + 1, val[d + 1] = 1.0;
    if (has_extra) idx[d + 2] = d + 2, val[d + 2] = extra.at(j);
    glp_set_mat_row(lp_, j + 1, cols, idx.data(), val.data());
    glp_set_row_bnds(lp_, j + 1, GLP_LO, 1, 0);
  }
  glp_std_basis(lp_);
}

SelectionLp::~SelectionLp() { glp_delete_prob(lp_); }

bool SelectionLp::selectable(uint64_t subset) {
  for (int j = 0; j < n_; ++j) {
    if ((subset >> j) & 1) glp_set_row_bnds(lp_, j + 1, GLP_LO, 1, 0);
    else glp_set_row_bnds(lp_, j + 1, GLP_UP, 0, -1);
  }
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  // With a zero objective every basis is dual feasible, so the dual simplex restarts from the
  // previous subset's basis; a failure (singular basis) falls back to a fresh primal solve.
  parm.meth = GLP_DUALP;
  ++solves_;
  int rc = glp_simplex(lp_, &parm);
  if (rc != 0) {
    glp_std_basis(lp_);
    parm.meth = GLP_PRIMAL;
    rc = glp_simplex(lp_, &parm);
  }
  if (rc != 0) throw std::runtime_error("GLPK simplex failed with code " + std::to_string(rc));
  const int status = glp_get_status(lp_);
  if (status == GLP_OPT || status == GLP_FEAS) return true;
  if (status == GLP_NOFEAS) return false;
  throw std::runtime_error("GLPK: unexpected status " + std::to_string(status));
}

}  // namespace fpa::theory
