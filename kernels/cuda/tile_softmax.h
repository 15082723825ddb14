// The online softmax of one query row over its key tiles (FlashAttention), in the accumulator
// type (fp32, or double for double inputs).
//
// Invariant after each key tile: max = the largest logit seen so far, sum = sum over the keys
// seen of exp(s_ij - max), and the caller's output accumulator acc = sum over the same keys of
// exp(s_ij - max) v_j. A new tile moves max up (rescale returns the factor exp(old - new) that
// sum and acc must be multiplied by), then adds its own exp(s_ij - max). At the end
// o_i = acc / sum and the log-sum-exp lse_i = max + log(sum), from which the backward recomputes
// every probability p_ij = exp(s_ij - lse_i) without storing any.
//
// The tile order is the forward's: the diagonal tile first (J = I, which holds the key j = i, so
// max is finite from the first tile on), then J = I - 1 down to 0.
#pragma once

#include "kernels/cuda/tile_config.h"

namespace fpa::tiles {

template <class A> struct OnlineSoftmaxRow {
  A max = -t_inf(A());
  A sum = A(0);

  // Moves the reference to max(max, tile_max) and returns the factor for the accumulator.
  // A row with no key yet (max = tile_max = -inf) keeps factor 1 and a zero sum.
  FPA_HD A rescale(A tile_max) {
    const A new_max = t_max(max, tile_max);
    if (new_max == -t_inf(A())) return A(1);
    const A factor = t_exp(max - new_max);  // exp(-inf) = 0 on the first tile
    sum *= factor;
    max = new_max;
    return factor;
  }
  // exp(s - max); 0 for a masked logit (-inf).
  FPA_HD A prob(A s) const { return t_exp(s - max); }
  FPA_HD A lse() const { return max + t_log(sum); }
};

// The backward's gradient of a logit, g_ij = dLoss/ds_ij = dLoss/db_ij
// = p_ij (dp_ij - delta_i), with dp_ij = dO_i . v_j and delta_i = dO_i . o_i (per row, computed
// once before the backward passes, as in FlashAttention-2).
template <class A> FPA_HD A logit_grad(A p, A dp, A delta) { return p * (dp - delta); }

}  // namespace fpa::tiles
