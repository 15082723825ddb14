// The tiled attention algorithm of the GPU kernels (softmax, FoX, FPA exact and straight-through),
// as host/device functions that nvcc and g++ both compile. tests/test_tile_algorithm.cpp runs
// them on the CPU in the GPU's order (tests/tile_simulation.h) against the float64 reference.
//
//   tile_config.h     tile sizes (64 x 64, and why), FPA_HD, math wrappers, MinAt + the tie rule
//   tile_bias.h       the bias of a tile pair: FoX's F_i - F_j, FPA's path minimum by parts
//   tile_softmax.h    the online softmax of a row over key tiles, the logit gradient
//   tile_gate_grad.h  the gate gradient by row, column and tile-pair sums (exact and soft)
//   tile_head_scan.h  FoX's prefix and suffix sums along a head, by chunks (a block per head)
//
// The passes, FlashAttention-2's, each block owning its outputs (no atomics, fixed order):
//
// 1. forward, one block per (batch, head, query tile I): key tiles J = I (diagonal), I-1, ..., 0.
//    FPA carries P_I (computed once), C (extended by tile J+1 before tile J) and each key tile's
//    suffix minima; an online softmax per row; writes o and lse.
// 2. delta_i = dO_i . o_i per row.
// 3. dK/dV, one block per (batch, head, key tile J): query tiles I = J (diagonal), J+1, ..., T-1,
//    recomputing p_ij = exp(s_ij - lse_i) and g_ij. Sums per key (in query order): dK, dV, the
//    column sums of g (-> -g to phi_j, FoX's -dF_j), the key-tile part of FPA's minimum (exact:
//    S_J wins; soft: g times the key share); the diagonal tile's per-row scans; per level of C's
//    split (tile_bias.h), what C's earlier part wins. Writes dK, dV, the gate gradient's part
//    owed to positions of tile J, and tile J's slots of C's earlier parts.
// 4. dQ, one block per (batch, head, query tile I): key tiles in the forward's order. Sums per
//    query (in key order): dQ, FoX's dF_i, the query-tile part of FPA's minimum; per level, what
//    C's later part wins. Writes dQ, the gate gradient's part owed to positions of tile I, and
//    tile I's slots of C's later parts.
// 5. finish, one per (batch, head, tile K): adds the two parts per position and the slots whose
//    part of C covers tile K (to its argmin, or spread), in double; FoX's suffix sums
//    (tile_head_scan.h).
#pragma once

#include "kernels/cuda/tile_bias.h"
#include "kernels/cuda/tile_config.h"
#include "kernels/cuda/tile_gate_grad.h"
#include "kernels/cuda/tile_head_scan.h"
#include "kernels/cuda/tile_softmax.h"
