// The decoder of the Qwen family (Qwen2, Qwen2.5, Qwen3, Qwen3-MoE), written over the Kernels interface.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "kernels/kernels.h"
#include "model/batch.h"
#include "model/kv_cache.h"
#include "trace/trace_sink.h"

namespace glass {

struct LoadOptions {
  // Convert every weight matrix to this type at load; unset keeps the stored type
  // (bf16 / f16 / f32 are then used in place from the memory map).
  std::optional<WeightType> weight_type;
};

class DecoderModel {
 public:
  explicit DecoderModel(std::shared_ptr<const Checkpoint> checkpoint, const LoadOptions& options = {});
  static DecoderModel load(const std::string& dir, const LoadOptions& options = {});

  const ModelConfig& config() const { return checkpoint_->config(); }
  const Checkpoint& checkpoint() const { return *checkpoint_; }
  // Bytes of weight matrices as the kernels read them.
  size_t matrix_bytes() const;
  // Weight bytes one decode step reads: every layer matrix and the lm_head (the
  // embedding contributes one row).
  size_t decode_weight_bytes() const;
  // The type of the largest matrices (for reports).
  WeightType weight_type() const { return layers_.empty() ? embed_.type : layers_[0].gate.type; }

  // Runs every row of `batch`, writing its K/V into `cache` (the sequences must exist),
  // and stores the logits of the rows with want_logits into `logits`
  // ([batch.logit_rows(), vocab_size], in row order).
  void forward(const Batch& batch, KVCache& cache, Kernels& kernels, std::vector<float>& logits,
               TraceSink* trace = nullptr) const;

  // The final norm and lm_head applied to hidden states x[n, hidden]: the logit lens.
  void project_to_vocab(const float* x, int64_t n, Kernels& kernels, std::vector<float>& logits) const;

 private:
  struct Layer {
    std::vector<float> input_norm, post_norm;
    WeightMatrix q, k, v, o, gate, up, down;
    std::vector<float> q_bias, k_bias, v_bias;
  };

  WeightMatrix matrix(const std::string& name, int64_t rows, int64_t cols, const LoadOptions& options);
  std::vector<float> vector(const std::string& name, int64_t size);
  const TensorInfo& checked(const std::string& name, const std::vector<int64_t>& shape);

  std::shared_ptr<const Checkpoint> checkpoint_;
  std::vector<std::unique_ptr<std::byte[]>> owned_;  // converted or realigned weights
  WeightMatrix embed_;
  WeightMatrix lm_head_;
  std::vector<float> final_norm_;
  std::vector<Layer> layers_;
};

}  // namespace glass
