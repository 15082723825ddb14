// Raw-pointer fused attention kernels on the CPU (forward and backward), below the autograd
// wrapper of fused_cpu.cpp. Layouts are contiguous: q, k (B, H, N, D); v, out (B, H, N, Dv);
// gate and lse (B, H, N).
#pragma once

#include "kernels/attention.h"

#include <cstdint>

namespace fpa::fused {

struct Problem {
  int64_t batch = 0, heads = 0, n = 0, d = 0, dv = 0;
  Variant variant = Variant::Softmax;
  FpaBackward fpa_backward = FpaBackward::Exact;
  double tau = 1.0;     // straight-through temperature
  double scale = 1.0;   // logit scale (already resolved: never 0 here)
  int64_t tile = 64;    // query block and key tile size
};

template <class T>
struct ForwardArgs {
  const T *q, *k, *v, *gate;  // gate is nullptr for softmax
  T *out, *lse;               // lse_i = log sum_j exp(s_ij): all the backward needs to rebuild P
};

template <class T>
struct BackwardArgs {
  const T *q, *k, *v, *gate, *out, *lse, *dout;
  T *dq;                      // (B, H, N, D), written
  T *dk, *dv;                 // `slots` copies each (slot-major), zeroed by the caller
  double* dgate;              // likewise; double, since FoX's reverse cumulative sum and
                              // FPA's scatter add many terms that nearly cancel
  int64_t slots;              // query-block chunks per head that run in parallel
};

template <class T>
void forward(const Problem& p, const ForwardArgs<T>& a);

template <class T>
void backward(const Problem& p, const BackwardArgs<T>& a);

// How many chunks of query blocks each head's backward is split into so that `threads` threads
// have work when batch * heads is small. Each chunk accumulates dk, dv, dgate into its own slot.
int64_t backward_slots(const Problem& p, int threads);

// Bytes the kernels allocate besides inputs, outputs and gradients (per-thread tile buffers and
// the saved row log-sum-exp), for the benchmark's memory column.
int64_t forward_extra_bytes(const Problem& p, int64_t elem_size, int threads);
int64_t backward_extra_bytes(const Problem& p, int64_t elem_size, int threads);

}  // namespace fpa::fused
