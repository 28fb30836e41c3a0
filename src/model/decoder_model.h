// The decoder of the Qwen family (Qwen2, Qwen2.5, Qwen3, Qwen3-MoE), written over the
// Kernels interface. One forward pass for every architecture: what differs (q/k/v bias,
// per-head q/k norm, head_dim, the RoPE table, dense or mixture-of-experts MLP per
// layer, tied output) is data in the ModelConfig and in the weights that are present.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "kernels/kernels.h"
#include "model/batch.h"
#include "model/kv_cache.h"
#include "model/rope.h"
#include "model/tensor_names.h"
#include "trace/trace_sink.h"

namespace glass {

class ForwardTrace;

struct LoadOptions {
  // Convert every weight matrix to this type at load (the MoE router excepted: it stays
  // as stored, since rounding it changes which experts a token takes); unset keeps the
  // stored type (bf16 / f16 / f32 are then used in place from the memory map).
  std::optional<WeightType> weight_type;
  // Called as the weights load (after the embedding, the output matrix and each layer)
  // with the bytes of the checkpoint's tensors read or converted so far and in all:
  // for a progress bar; it changes nothing that is loaded.
  std::function<void(size_t done_bytes, size_t total_bytes)> progress;
};

class DecoderModel {
 public:
  explicit DecoderModel(std::shared_ptr<const Checkpoint> checkpoint, const LoadOptions& options = {});
  static DecoderModel load(const std::string& dir, const LoadOptions& options = {});

  const ModelConfig& config() const { return checkpoint_->config(); }
  const Checkpoint& checkpoint() const { return *checkpoint_; }
  const RopeTable& rope() const { return rope_; }
  // Bytes of weight matrices as the kernels read them.
  size_t matrix_bytes() const;
  // Weight bytes one decode step reads: every attention matrix, the routed experts only
  // (num_experts_per_tok of each sparse layer) with its router, and the lm_head (the
  // embedding contributes one row).
  size_t decode_weight_bytes() const;
  // The first layer's MLP gate (an expert's in a sparse layer), the embedding without layers:
  // a matrix of the largest kind, with its type and layout, for reports.
  const WeightMatrix& representative_matrix() const;
  // Its type.
  WeightType weight_type() const;

  // Runs every row of `batch`, writing its K/V into `cache` (the sequences must exist),
  // and stores the logits of the rows with want_logits into `logits`
  // ([batch.logit_rows(), vocab_size], in row order).
  void forward(const Batch& batch, KVCache& cache, Kernels& kernels, std::vector<float>& logits,
               TraceSink* trace = nullptr) const;

  // The final norm and lm_head applied to hidden states x[n, hidden]: the logit lens.
  void project_to_vocab(const float* x, int64_t n, Kernels& kernels, std::vector<float>& logits) const;

 private:
  struct Expert {
    WeightMatrix gate, up, down;
  };
  struct Layer {
    std::vector<float> attn_norm, ffn_norm;
    WeightMatrix q, k, v, o;
    std::vector<float> q_bias, k_bias, v_bias;  // empty without attention bias
    std::vector<float> q_norm, k_norm;          // empty without per-head q/k norm
    WeightMatrix gate, up, down;                // dense MLP
    WeightMatrix router;                        // mixture of experts: [experts, hidden]
    std::vector<Expert> experts;
    bool sparse() const { return !experts.empty(); }
  };
  // Per-forward buffers (one forward at a time per call; the model itself stays const).
  struct Activations;

  void attention_block(const Layer& w, int layer, const Batch& batch, KVCache& cache, Kernels& k, Activations& a,
                       ForwardTrace& trace) const;
  void dense_mlp(const Layer& w, int layer, int64_t n, Kernels& k, Activations& a, ForwardTrace& trace) const;
  void moe_mlp(const Layer& w, int layer, int64_t n, Kernels& k, Activations& a, ForwardTrace& trace) const;

  WeightMatrix matrix(const char* pattern, int64_t layer, int64_t expert, int64_t rows, int64_t cols,
                      std::optional<WeightType> target);
  std::vector<float> vector(const char* pattern, int64_t layer, int64_t size);
  const CheckpointTensor& checked(const std::string& name, const std::vector<int64_t>& shape);
  void refuse_unused_tensors() const;

  std::shared_ptr<const Checkpoint> checkpoint_;
  const TensorNames& names_;
  RopeTable rope_;
  std::vector<std::string> used_;  // tensors the model reads, to report the others
  size_t loaded_bytes_ = 0;        // of the distinct tensors checked so far (for LoadOptions::progress)
  const CheckpointTensor* last_checked_ = nullptr;
  std::vector<std::unique_ptr<std::byte[]>> owned_;  // converted or realigned weights
  std::vector<std::pair<const std::byte*, size_t>> in_place_;  // while loading: weights read from the map
  std::unique_ptr<std::byte[]> scratch_;  // while loading: converted rows before the CPU's layout
  size_t scratch_bytes_ = 0;
  WeightMatrix embed_;
  WeightMatrix lm_head_;
  std::vector<float> final_norm_;
  std::vector<Layer> layers_;
};

}  // namespace glass
