// The one-layer model of the synthetic tasks (SPEC section 4): type embedding + payload
// embedding, ONE attention layer of the chosen variant through fpa::attention, a linear readout
// to the payload space. Softmax, FoX and FPA share the head count and head dimension; they differ
// only in the per-head scalar read from x_t:
//   FoX: log forget gate  log f_t = logsigmoid(w_f . x_t + c_f)
//   FPA: field increment  delta_t = w_p . x_t + c_p,  field phi = cumsum(delta)  (walk)
#pragma once

#include "kernels/attention.h"

#include <torch/torch.h>

namespace fpa::synthetic {

struct ModelConfig {
  int64_t num_types = 1;
  int64_t payload_values = 16;
  int64_t payload_dim = 8;
  int64_t embed = 32;
  int64_t heads = 1;
  int64_t head_dim = 8;
  AttentionOptions attention;           // variant, impl, FPA backward mode, tau_s
  double increment_bias_init = -1.0;    // FPA: c_p at initialisation
  bool fox_gate_bias_set = false;       // FoX: keep LibTorch's default c_f unless set
  double fox_gate_bias_init = 0.0;
};

struct ModelOutput {
  at::Tensor y;     // (B, N, payload_dim)
  at::Tensor q, k;  // (B, H, N, D)
  at::Tensor gate;  // (B, H, N): FoX log gates, FPA field, undefined for softmax
};

class TargetSetModelImpl : public torch::nn::Module {
 public:
  explicit TargetSetModelImpl(const ModelConfig& config);

  ModelOutput forward(const at::Tensor& types, const at::Tensor& payloads);
  // Attention weights (B, H, N, N) of a forward pass, read through the same operator by
  // attending to one-hot values: o_i = sum_j a_ij e_j = a_i.
  at::Tensor attention_weights(const ModelOutput& out) const;

  const ModelConfig& config() const { return config_; }

 private:
  AttentionOptions forward_options() const;
  ModelConfig config_;
  torch::nn::Embedding type_embed_{nullptr}, payload_embed_{nullptr};
  torch::nn::Linear wq_{nullptr}, wk_{nullptr}, wv_{nullptr}, gate_{nullptr}, readout_{nullptr};
};
TORCH_MODULE(TargetSetModel);

}  // namespace fpa::synthetic
