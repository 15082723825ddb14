// The tiled backward pass, FlashAttention-2's split, as tests/tile_simulation.h's blocks:
//   delta_kernel   delta_i = dO_i . o_i, one thread per row
//   dkdv_kernel    one block per (key tile J, head), one thread per key: query tiles
//                  I = J, ..., T-1; dK, dV, the column sums of the gate gradient, the diagonal
//                  tile's per-row scans, C's earlier parts; writes dK, dV, gate_kv (the part
//                  owed to tile J) and tile J's slots of C's earlier parts
//   dq_kernel      one block per (query tile I, head), one thread per query: key tiles
//                  J = I, ..., 0; dQ, the row sums, C's later parts; writes dQ, gate_q and tile
//                  I's slots of C's later parts
//   finish         FPA: one block per (tile K, head) adds gate_kv, gate_q and the slots whose
//                  part covers tile K; FoX: one block per head, the suffix sums (tile_head_scan.h)
// Each output element has one writer and every sum a fixed order: no atomics, the same bits
// on every run.
#pragma once

#include "kernels/cuda/tiled_device.cuh"

namespace fpa::cuda::tiled::detail {

template <class T>
__global__ void delta_kernel(Problem p, const T* __restrict__ out, const T* __restrict__ dout,
                             Acc<T>* __restrict__ delta) {
  using A = Acc<T>;
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p.batch * p.heads * p.n) return;
  A s = A(0);
  for (int64_t e = 0; e < p.dv; ++e) s += to_acc(dout[i * p.dv + e]) * to_acc(out[i * p.dv + e]);
  delta[i] = s;
}

// A backward pass's part of C (tile_gate_grad.h): C split by level, this thread's sum over the
// current level of what its part wins, and the tile's slots in the workspace (thread 0 writes
// them). The dQ pass owns C's later parts (kSide Later; its walk adds tiles at C's earlier end),
// the dK/dV pass the earlier ones. block_sum(x): every thread's x summed in the kernel's fixed
// order, on thread 0; every thread calls it (it synchronises), as every thread calls add_tile and
// end (the level changes at the same step in all of them).
template <class A, t::BetweenSide kSide> struct BetweenParts {
  t::SplitBetween<A> split = t::empty_split<A>();
  A level_sum = A(0);
  t::BetweenSlot<A>* slots;

  __device__ BetweenParts(t::BetweenSlot<A>* tile_slots, int tiles) : slots(tile_slots) {
    if (threadIdx.x == 0)
      for (int x = 0; x < t::level_slots(tiles); ++x) slots[x] = t::empty_slot<A>();
  }
  __device__ t::Between<A> whole(A inv_tau) const { return t::whole(split, inv_tau); }
  // After a tile pair: x = this thread's sum of what C won in it.
  __device__ void add_pair(A x, bool soft, A inv_tau) {
    level_sum += x * t::part_fraction(split, kSide, soft, inv_tau);
  }
  // A tile joins C, which becomes tiles a .. b. Not inlined: once per tile pair, against the
  // pair's 64 x 64 x D products, and inlined its soft sums and level flush shaped the register
  // passes' allocation (ptxas: dQ at D 64 took 244 registers instead of 168, the dK/dV pass at
  // D 128 spilled on sm_90; results/bench/cuda_kernel_resources.csv has the present numbers).
  template <class BlockSum>
  __device__ FPA_NOINLINE void add_tile(t::MinAt<A> tile_min, t::SoftSum<A> tile_soft, int a,
                                        int b, A inv_tau, BlockSum block_sum) {
    if (t::level_ends(split, a, b)) flush(block_sum);
    split = kSide == t::BetweenSide::Later
                ? t::split_add_earlier(split, tile_min, tile_soft, a, b, inv_tau)
                : t::split_add_later(split, tile_min, tile_soft, a, b, inv_tau);
  }
  // After an off-diagonal tile pair (query tile ti of `rows` rows, key tile tj): x = this
  // thread's sum of what C won in it; then the tile this pass has just passed joins C for its next
  // pair (dQ pass: key tile tj, C = tj .. ti - 1 for key tile tj - 1; dK/dV pass: query tile ti,
  // C = tj + 1 .. ti for query tile ti + 1).
  template <class BlockSum>
  __device__ void end_pair(A x, bool soft, const FieldTile<A>& fq, const FieldTile<A>& fk, int ti,
                           int tj, int rows, int tiles, BlockSum block_sum) {
    if (kSide == t::BetweenSide::Later) {
      add_pair(x, soft, fq.inv_tau);
      if (tj > 0) add_tile(fk.suffix[0], fk.suffix_soft[0], tj, ti - 1, fq.inv_tau, block_sum);
    } else {
      add_pair(x, soft, fk.inv_tau);
      if (ti + 1 < tiles)
        add_tile(fq.prefix[rows - 1], fq.prefix_soft[rows - 1], tj + 1, ti, fk.inv_tau,
                 block_sum);
    }
  }
  template <class BlockSum> __device__ void end(BlockSum block_sum) {
    if (split.level != t::kNoLevel) flush(block_sum);
  }
  template <class BlockSum> __device__ void flush(BlockSum block_sum) {
    const A sum = block_sum(level_sum);
    level_sum = A(0);
    if (threadIdx.x == 0)
      slots[split.level + 1] =
          t::slot_of(sum, kSide == t::BetweenSide::Later ? split.later : split.earlier);
  }
};

// block_sum for the scalar and WMMA kernels: thread x < count's value (x = the row or key),
// summed in thread order through buf (count entries of shared memory).
template <class A> struct ThreadOrderSum {
  A* buf;
  int count;
  __device__ A operator()(A x) const {
    if (int(threadIdx.x) < count) buf[threadIdx.x] = x;
    __syncthreads();
    A sum = A(0);
    if (threadIdx.x == 0)
      for (int y = 0; y < count; ++y) sum += buf[y];
    __syncthreads();  // buf is free again
    return sum;
  }
};

// The dQ pass's end for FPA, shared by its three kernels. Every thread calls it (it
// synchronises) once query tile I's row parts of C are in s_row_part and s_gate is zeroed: the
// P_I parts go to the rows' argmins (exact: into s_gate; straight-through: each row's share
// added to its own), and row i gets gate_q[i] (gate_q: the head's).
template <class A>
__device__ void write_query_tile_gate(const Problem& p, const FieldTile<A>& fq, int64_t i0,
                                      int rows, int tid, const A* s_row_part, A* s_gate,
                                      A* gate_q) {
  __syncthreads();
  A spread = A(0);
  if (p.mode == Mode::FpaExact) {
    if (tid == 0) t::exact_query_tile_scatter(fq.prefix, s_row_part, int(i0), rows, s_gate);
  } else if (tid < rows) {
    spread =
        t::soft_query_tile_spread_at(tid, fq.phi, fq.prefix_soft, s_row_part, rows, fq.inv_tau);
  }
  __syncthreads();
  if (tid < rows) gate_q[i0 + tid] = s_gate[tid] + spread;
}

// The dK/dV pass's end, shared by its three kernels (FoX and FPA). Every thread calls it (it
// synchronises) once key tile J's gate parts (the diagonal's part minus the column sums) are in
// s_gate and, for FPA, its column parts of C in s_col_part: the P_J parts go to the keys' argmins
// (exact: into s_gate; straight-through: each key's share added to its own), and key j gets
// gate_kv[j] (gate_kv: the head's).
template <class A>
__device__ void write_key_tile_gate(const Problem& p, const FieldTile<A>& fk, int64_t j0, int cols,
                                    int tid, const A* s_col_part, A* s_gate, A* gate_kv) {
  __syncthreads();
  A spread = A(0);
  if (p.mode == Mode::FpaExact) {
    if (tid == 0) t::exact_key_tile_scatter(fk.suffix, s_col_part, int(j0), cols, s_gate);
  } else if (p.mode == Mode::FpaStraightThrough && tid < cols) {
    spread = t::soft_key_tile_spread_at(tid, fk.phi, fk.suffix_soft, s_col_part, fk.inv_tau);
  }
  __syncthreads();
  if (tid < cols) gate_kv[j0 + tid] = s_gate[tid] + spread;
}

// FPA's diagonal tile pair in a dK/dV pass: each query row's gate gradient by tile_gate_grad.h's
// scan along the row (one row per thread; g's row r at g + r * ldg, the scan's output, zeroed
// first, at e + r * lde), then key tid's sum over the rows. Every thread calls it (it
// synchronises); g must be complete (a barrier before).
template <class A>
__device__ A diagonal_key_sum(const FieldTile<A>& fk, bool soft, int tid, int rows, int cols,
                              const A* g, int ldg, A* e, int lde) {
  if (tid < rows) {
    A* er = e + tid * lde;
    for (int l = 0; l < cols; ++l) er[l] = A(0);
    if (soft) {
      t::SoftSum<A> z[kTile];
      t::soft_diagonal_row(fk.phi, tid, g + tid * ldg, fk.inv_tau, z, er);
    } else {
      t::exact_diagonal_row(fk.phi, tid, g + tid * ldg, er);
    }
  }
  __syncthreads();
  A sum = A(0);
  if (tid < cols)
    for (int r = 0; r < rows; ++r) sum += e[r * lde + tid];
  return sum;
}

template <class T>
__global__ void __launch_bounds__(kTile)
    dkdv_kernel(Problem p, const T* __restrict__ q, const T* __restrict__ k,
                const T* __restrict__ v, const FieldTile<Acc<T>>* __restrict__ fields,
                const double* __restrict__ prefix, const Acc<T>* __restrict__ lse,
                const Acc<T>* __restrict__ delta, const T* __restrict__ dout, T* __restrict__ dk,
                T* __restrict__ dv, Acc<T>* __restrict__ gate_kv,
                t::BetweenSlot<Acc<T>>* __restrict__ slots) {
  using A = Acc<T>;
  const int64_t n = p.n, d = p.d, dvd = p.dv, bh = blockIdx.y;
  const int tj = blockIdx.x, c = threadIdx.x, tiles = int(tiles_of(p));
  const int64_t j0 = int64_t(tj) * kTile;
  const int cols = int(min(int64_t(kTile), n - j0));
  const bool active = c < cols, fpa = is_fpa(p.mode), soft = p.mode == Mode::FpaStraightThrough;
  const A inf = t::t_inf(A());

  FPA_DYNAMIC_SMEM(smem);
  A* sq = reinterpret_cast<A*>(smem);       // kTile x padded(d): the query tile
  A* sdo = sq + kTile * padded(d);          // kTile x padded(dv): its dO
  A* sg = sdo + kTile * padded(dvd);        // kTile x padded(kTile): diagonal bias, then g
  A* se = sg + kTile * padded(kTile);       // kTile x padded(kTile): per-row diagonal buffers
  __shared__ A s_lse[kTile], s_delta[kTile], s_col_part[kTile], s_gate[kTile], s_level[kTile];
  __shared__ FieldTile<A> fq, fk;

  const FieldTile<A>* fh = fields ? fields + bh * tiles_of(p) : nullptr;
  const double* F = prefix ? prefix + bh * n : nullptr;
  if (fpa) load_field(fh, tj, fk);
  BetweenParts<A, t::BetweenSide::Earlier> parts(
      slots_of(slots, bh, t::BetweenSide::Earlier, tj, tiles), tiles);  // C = tj + 1 .. ti - 1
  const ThreadOrderSum<A> block_sum{s_level, cols};
  A kc[kMaxHeadDim], vc[kMaxHeadDim], dkc[kMaxHeadDim], dvc[kMaxHeadDim];
  for (int64_t e = 0; e < d; ++e) {
    kc[e] = active ? to_acc(k[(bh * n + j0 + c) * d + e]) : A(0);
    dkc[e] = A(0);
  }
  for (int64_t e = 0; e < dvd; ++e) {
    vc[e] = active ? to_acc(v[(bh * n + j0 + c) * dvd + e]) : A(0);
    dvc[e] = A(0);
  }
  A col_all = A(0), col_part = A(0), diag = A(0);

  for (int ti = tj; ti < tiles; ++ti) {
    const int64_t i0 = int64_t(ti) * kTile;
    const int rows = int(min(int64_t(kTile), n - i0));
    const bool diagonal = ti == tj;
    const t::Between<A> between = fpa ? parts.whole(fk.inv_tau) : t::empty_between<A>();
    A pair_col = A(0);  // what C wins in this pair
    __syncthreads();
    load_rows(q + bh * n * d, i0, rows, d, sq);
    load_rows(dout + bh * n * dvd, i0, rows, dvd, sdo);
    if (c < rows) {
      s_lse[c] = lse[bh * n + i0 + c];
      s_delta[c] = delta[bh * n + i0 + c];
    }
    if (fpa) load_field(fh, ti, fq);  // synchronises
    __syncthreads();
    if (fpa && diagonal) {  // one row per thread
      if (c < rows) t::fpa_diagonal_row_bias(fk.phi, c, cols, sg + c * padded(kTile));
      __syncthreads();
    }
    if (active) {
      for (int r = 0; r < rows; ++r) {  // queries in order
        A* grc = sg + r * padded(kTile) + c;
        const A s = (diagonal && c > r)
                        ? -inf
                        : A(p.scale) * dot(sq + r * padded(d), kc, d) +
                              bias_at(p, diagonal, F, i0, j0, r, c, fq, fk, between,
                                      diagonal ? *grc : A(0));
        const A pr = t::t_exp(s - s_lse[r]);
        const A g = t::logit_grad(pr, dot(sdo + r * padded(dvd), vc, dvd), s_delta[r]);
        for (int64_t e = 0; e < dvd; ++e) dvc[e] += pr * sdo[r * padded(dvd) + e];
        for (int64_t e = 0; e < d; ++e) dkc[e] += g * sq[r * padded(d) + e];
        col_all += g;
        if (diagonal) { *grc = g; continue; }
        if (!fpa) continue;
        t::route_score(t::PathPart::KeyTile, soft, g, fk.suffix[c].value, fk.suffix_soft[c],
                       between, fq.prefix[r].value, fq.prefix_soft[r], fk.inv_tau, col_part,
                       pair_col);
      }
    }
    if (fpa && diagonal) {  // one row per thread into its own buffer, then column sums
      __syncthreads();
      diag += diagonal_key_sum(fk, soft, c, rows, cols, sg, padded(kTile), se, padded(kTile));
    }
    if (fpa && !diagonal) parts.end_pair(pair_col, soft, fq, fk, ti, tj, rows, tiles, block_sum);
  }
  if (fpa) parts.end(block_sum);
  if (active) {
    for (int64_t e = 0; e < d; ++e)
      dk[(bh * n + j0 + c) * d + e] = FromAcc<T>::of(A(p.scale) * dkc[e]);
    for (int64_t e = 0; e < dvd; ++e) dv[(bh * n + j0 + c) * dvd + e] = FromAcc<T>::of(dvc[e]);
    s_gate[c] = diag - col_all;
    s_col_part[c] = col_part;
  }
  if (p.mode == Mode::Softmax) return;
  write_key_tile_gate(p, fk, j0, cols, c, s_col_part, s_gate, gate_kv + bh * n);
}

template <class T>
__global__ void __launch_bounds__(kTile)
    dq_kernel(Problem p, const T* __restrict__ q, const T* __restrict__ k,
              const T* __restrict__ v, const FieldTile<Acc<T>>* __restrict__ fields,
              const double* __restrict__ prefix, const Acc<T>* __restrict__ lse,
              const Acc<T>* __restrict__ delta, const T* __restrict__ dout,
              T* __restrict__ dq, Acc<T>* __restrict__ gate_q,
              t::BetweenSlot<Acc<T>>* __restrict__ slots) {
  using A = Acc<T>;
  const int64_t n = p.n, d = p.d, dvd = p.dv, bh = blockIdx.y;
  const int ti = query_tile_of_block(p), r = threadIdx.x, tiles = int(tiles_of(p));
  const int64_t i0 = int64_t(ti) * kTile;
  const int rows = int(min(int64_t(kTile), n - i0));
  const bool active = r < rows, fpa = is_fpa(p.mode), soft = p.mode == Mode::FpaStraightThrough;
  const A inf = t::t_inf(A());

  FPA_DYNAMIC_SMEM(smem);
  A* sk = reinterpret_cast<A*>(smem);            // kTile x padded(d)
  A* sv = sk + kTile * padded(d);                // kTile x padded(dv)
  __shared__ A s_level[kTile], s_row_part[kTile], s_gate[kTile];
  __shared__ FieldTile<A> fq, fk;

  const FieldTile<A>* fh = fields ? fields + bh * tiles_of(p) : nullptr;
  const double* F = prefix ? prefix + bh * n : nullptr;
  if (fpa) load_field(fh, ti, fq);
  BetweenParts<A, t::BetweenSide::Later> parts(
      slots_of(slots, bh, t::BetweenSide::Later, ti, tiles), tiles);  // C = tj + 1 .. ti - 1
  const ThreadOrderSum<A> block_sum{s_level, rows};
  A qr[kMaxHeadDim], dor[kMaxHeadDim], dqr[kMaxHeadDim];
  for (int64_t e = 0; e < d; ++e) {
    qr[e] = active ? to_acc(q[(bh * n + i0 + r) * d + e]) : A(0);
    dqr[e] = A(0);
  }
  for (int64_t e = 0; e < dvd; ++e)
    dor[e] = active ? to_acc(dout[(bh * n + i0 + r) * dvd + e]) : A(0);
  const A lse_r = active ? lse[bh * n + i0 + r] : A(0);
  const A delta_r = active ? delta[bh * n + i0 + r] : A(0);
  A row_all = A(0), row_part = A(0);

  for (int tj = ti; tj >= 0; --tj) {
    const int64_t j0 = int64_t(tj) * kTile;
    const int cols = int(min(int64_t(kTile), n - j0));
    const bool diagonal = tj == ti;
    const t::Between<A> between = fpa ? parts.whole(fq.inv_tau) : t::empty_between<A>();
    __syncthreads();
    load_rows(k + bh * n * d, j0, cols, d, sk);
    load_rows(v + bh * n * dvd, j0, cols, dvd, sv);
    if (fpa) load_field(fh, tj, fk);  // synchronises
    __syncthreads();
    A diag_bias[kTile];
    if (fpa && diagonal && active) t::fpa_diagonal_row_bias(fk.phi, r, cols, diag_bias);
    A pair_row = A(0);
    if (active) {
      for (int c = 0; c < cols; ++c) {  // keys in order
        const A s = (diagonal && c > r)
                        ? -inf
                        : A(p.scale) * dot(qr, sk + c * padded(d), d) +
                              bias_at(p, diagonal, F, i0, j0, r, c, fq, fk, between,
                                      diagonal && fpa ? diag_bias[c] : A(0));
        const A pr = t::t_exp(s - lse_r);
        const A g = t::logit_grad(pr, dot(dor, sv + c * padded(dvd), dvd), delta_r);
        for (int64_t e = 0; e < d; ++e) dqr[e] += g * sk[c * padded(d) + e];
        row_all += g;
        if (diagonal || !fpa) continue;
        t::route_score(t::PathPart::QueryTile, soft, g, fk.suffix[c].value, fk.suffix_soft[c],
                       between, fq.prefix[r].value, fq.prefix_soft[r], fk.inv_tau, row_part,
                       pair_row);
      }
    }
    if (fpa && !diagonal) parts.end_pair(pair_row, soft, fq, fk, ti, tj, rows, tiles, block_sum);
  }
  if (fpa) parts.end(block_sum);
  if (active)
    for (int64_t e = 0; e < d; ++e)
      dq[(bh * n + i0 + r) * d + e] = FromAcc<T>::of(A(p.scale) * dqr[e]);
  if (p.mode == Mode::Softmax) return;
  if (p.mode == Mode::Fox) {
    if (active) gate_q[bh * n + i0 + r] = row_all;
    return;
  }
  s_row_part[r] = row_part;
  s_gate[r] = A(0);
  write_query_tile_gate(p, fq, i0, rows, r, s_row_part, s_gate, gate_q + bh * n);
}

// FPA: position l of tile K gets gate_kv + gate_q + what the slots covering tile K owe it (to
// its argmin in exact mode, spread by w_l / (tile K's weight sum) in straight-through mode), in
// double.
template <class A>
__global__ void __launch_bounds__(kTile)
    fpa_finish_kernel(Problem p, const FieldTile<A>* __restrict__ fields,
                      const A* __restrict__ gate_kv, const A* __restrict__ gate_q,
                      t::BetweenSlot<A>* __restrict__ slots, double* __restrict__ dgate) {
  const int64_t n = p.n, bh = blockIdx.y;
  const int tk = blockIdx.x, l = threadIdx.x, tiles = int(tiles_of(p));
  const int64_t l0 = int64_t(tk) * kTile;
  const int len = int(min(int64_t(kTile), n - l0));
  __shared__ FieldTile<A> f;
  __shared__ double s_total, s_lanes[kTile], s_out[kTile];
  load_field(fields + bh * tiles, tk, f);
  // The slots covering tile K, over the block's threads, then added in thread order (thread 0's).
  const double total = ThreadOrderSum<double>{s_lanes, kTile}(t::between_total(
      slots_of(slots, bh, t::BetweenSide::Later, 0, tiles),
      slots_of(slots, bh, t::BetweenSide::Earlier, 0, tiles), tiles, tk,
      p.mode == Mode::FpaStraightThrough, f.suffix_soft[0], f.inv_tau, l, kTile));
  if (l == 0) s_total = total;
  if (l < len) s_out[l] = double(gate_kv[bh * n + l0 + l]) + double(gate_q[bh * n + l0 + l]);
  __syncthreads();
  if (p.mode == Mode::FpaExact) {
    if (l == 0) s_out[f.suffix[0].pos - l0] += s_total;
  } else if (l < len) {
    s_out[l] += t::soft_between_finish_at(f.phi[l], f.suffix_soft[0], s_total, f.inv_tau);
  }
  __syncthreads();
  if (l < len) dgate[bh * n + l0 + l] = s_out[l];
}

// FoX: dF = gate_kv + gate_q, then d log f = its suffix sums (tile_head_scan.h), a block per head.
template <class A>
__global__ void __launch_bounds__(t::kHeadScanThreads)
    fox_finish_kernel(Problem p, const A* __restrict__ gate_kv, const A* __restrict__ gate_q,
                      double* __restrict__ dgate) {
  __shared__ double s_offsets[t::kHeadScanThreads];
  const int64_t n = p.n, h = blockIdx.x;
  const t::HeadChunk ch = t::head_chunk(n, int(threadIdx.x));
  double* df = dgate + h * n;
  for (int64_t l = ch.lo; l < ch.hi; ++l)  // the thread's own chunk: no barrier before the scan
    df[l] = double(gate_kv[h * n + l]) + double(gate_q[h * n + l]);
  scan_head(df, n, t::ScanDirection::Suffix, df, s_offsets);
}

// The two tile passes (dK/dV, then dQ) on the scalar kernels; tiled_backward_wmma.cuh has the
// tensor-core ones. The launcher below runs the rest (the gate's input, delta, the finish step).
struct ScalarPasses {
  template <class T>
  static int run(const Problem& p, const T* q, const T* k, const T* v,
                 const FieldTile<Acc<T>>* fields, const double* prefix, const Acc<T>* lse,
                 const Acc<T>* delta, const T* dout, T* dq, T* dk, T* dv, Acc<T>* gate_kv,
                 Acc<T>* gate_q, t::BetweenSlot<Acc<T>>* slots, cudaStream_t s) {
    using A = Acc<T>;
    const unsigned tiles = unsigned(tiles_of(p));
    const dim3 grid(tiles, unsigned(p.batch * p.heads));
    const size_t smem_kv = sizeof(A) * kTile * (padded(p.d) + padded(p.dv) + 2 * padded(kTile));
    if (int e = FPA_ALLOW_SMEM(dkdv_kernel<T>, smem_kv)) return e;
    FPA_LAUNCH(dkdv_kernel<T>, grid, kTile, smem_kv, s, p, q, k, v, fields, prefix, lse, delta,
               dout, dk, dv, gate_kv, slots);
    if (int e = FPA_LAST_STATUS()) return e;
    const size_t smem_q = sizeof(A) * kTile * (padded(p.d) + padded(p.dv));
    if (int e = FPA_ALLOW_SMEM(dq_kernel<T>, smem_q)) return e;
    FPA_LAUNCH(dq_kernel<T>, grid, kTile, smem_q, s, p, q, k, v, fields, prefix, lse, delta, dout,
               dq, gate_q, slots);
    return FPA_LAST_STATUS();
  }
};

template <class T, class Passes = ScalarPasses>
int launch_backward(const Problem& p, const T* q, const T* k, const T* v, const Acc<T>* gate,
                    const T* out, const Acc<T>* lse, const T* dout, T* dq, T* dk, T* dv,
                    double* dgate, void* workspace, cudaStream_t s) {
  using A = Acc<T>;
  const BackwardWorkspace w(p);
  auto* base = static_cast<unsigned char*>(workspace);
  A* delta = reinterpret_cast<A*>(base + w.delta);
  A* gate_kv = reinterpret_cast<A*>(base + w.gate_kv);
  A* gate_q = reinterpret_cast<A*>(base + w.gate_q);
  auto* slots = reinterpret_cast<t::BetweenSlot<A>*>(base + w.slots);
  const int64_t heads = p.batch * p.heads, positions = heads * p.n;
  const unsigned tiles = unsigned(tiles_of(p));

  GateInput<A> g;
  if (int e = prepare_gate(p, gate, base + w.gate_input, s, g)) return e;
  FPA_LAUNCH(delta_kernel<T>, unsigned((positions + 255) / 256), 256, 0, s, p, out, dout,
             delta);
  if (int e = FPA_LAST_STATUS()) return e;

  if (int e = Passes::template run<T>(p, q, k, v, g.fields, g.prefix, lse, delta, dout, dq, dk,
                                      dv, gate_kv, gate_q, slots, s))
    return e;

  const dim3 grid(tiles, unsigned(heads));
  if (is_fpa(p.mode)) {
    FPA_LAUNCH(fpa_finish_kernel<A>, grid, kTile, 0, s, p, g.fields, gate_kv, gate_q, slots,
               dgate);
  } else if (p.mode == Mode::Fox) {
    FPA_LAUNCH(fox_finish_kernel<A>, unsigned(heads), t::kHeadScanThreads, 0, s, p, gate_kv,
               gate_q, dgate);
  }
  return FPA_LAST_STATUS();
}

}  // namespace fpa::cuda::tiled::detail
