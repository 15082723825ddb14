// Fused (streaming, FlashAttention-style) CPU attention for softmax, FoX and FPA.
//
// Same contract as fpa::attention (see attention.h), which calls this for Impl::Fused. Extra
// memory is O(N * D) per head: no N x N matrix is ever formed, in the forward or the backward.
// Differentiable in q, k, v and gate through the kernels' autograd function
// (kernels/kernel_autograd.h, shared with the CUDA kernels); the backward recomputes the
// probabilities from the saved row log-sum-exp. The kernels give first derivatives; a backward
// run with create_graph (double backward, e.g. a gradient penalty) differentiates through the
// reference instead, with its n x n memory.
#pragma once

#include "kernels/options.h"

#include <ATen/ATen.h>

#include <cstdint>

namespace fpa {

// Query block and key tile size. 64 keeps each tile product within the size OpenBLAS runs on
// one thread (m*n*k <= 64^3 at head_dim 64), which matters when query blocks run in parallel.
constexpr int64_t kFusedTile = 64;

at::Tensor fused_attention_cpu(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& gate, const AttentionOptions& opts,
                               int64_t tile = kFusedTile);

// Bytes the fused kernels allocate beyond inputs, outputs and gradients, for the benchmark.
// `backward` adds the backward pass's buffers to the forward's.
int64_t fused_extra_bytes(int64_t batch, int64_t heads, int64_t n, int64_t head_dim,
                          const AttentionOptions& opts, int64_t elem_size, bool backward,
                          int threads, int64_t tile = kFusedTile);

// "blas" when the tile products call BLAS directly, "aten" when they go through at::mm.
const char* fused_gemm_backend();

}  // namespace fpa
