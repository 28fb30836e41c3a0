// config.json of a Qwen-family checkpoint, as plain data: every field that changes the
// math. The architecture is a description (which features are on, which layers are
// sparse), not a separate code path: the decoder reads these fields.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/json_fields.h"

namespace glass {

// The model classes glass runs (config.json "architectures"[0]).
enum class Architecture { Qwen2, Qwen3, Qwen3Moe };
const char* architecture_class_name(Architecture a);  // "Qwen2ForCausalLM", ...
const char* architecture_model_type(Architecture a);  // "qwen2", "qwen3", "qwen3_moe"

// config.json "rope_scaling" (transformers' modeling_rope_utils). kNone: absent, null or
// rope_type "default".
enum class RopeScalingType { kNone, kLinear, kYarn };
const char* rope_scaling_type_name(RopeScalingType t);  // "none", "linear", "yarn"

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  double factor = 1.0;
  // YaRN: the context the model was trained on (defaults to max_position_embeddings).
  int64_t original_max_position_embeddings = 0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  bool truncate = true;  // floor/ceil the correction range
  // cos/sin are multiplied by this (YaRN: 0.1·ln(factor) + 1 unless the config sets
  // attention_factor, or mscale and mscale_all_dim).
  double attention_factor = 1.0;
};

// The largest value each size in config.json may take, checked before anything they size
// is allocated. Far past every published Qwen (Qwen2.5-72B: hidden 8192, 80 layers, 64
// query heads, intermediate 29568, vocab 152064; Qwen3-235B-A22B: 94 layers, 128 experts
// of 1536; Qwen2.5-1M: 1,010,000 positions), and small enough that every count and size
// they imply (parameters, a tensor's bytes, a full context's KV cache) fits in 64 bits.
struct ConfigLimits {
  static constexpr int64_t kHiddenSize = 65536;
  static constexpr int64_t kLayers = 1024;
  static constexpr int64_t kHeads = 1024;  // query and KV heads
  static constexpr int64_t kHeadDim = 1024;
  static constexpr int64_t kIntermediateSize = int64_t{1} << 20;  // dense and per expert
  static constexpr int64_t kExperts = 4096;                       // and experts per token
  static constexpr int64_t kVocabSize = int64_t{1} << 22;
  static constexpr int64_t kPositions = int64_t{1} << 24;  // max_position_embeddings, YaRN's original
};

struct ModelConfig {
  Architecture architecture = Architecture::Qwen2;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;  // explicit in Qwen3 configs: heads * head_dim may differ from hidden_size
  int64_t intermediate_size = 0;  // dense MLP layers
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = true;  // q/k/v biases (Qwen2 always; Qwen3 when attention_bias)
  bool qk_norm = false;        // RMSNorm over each head of q and k before RoPE (Qwen3)

  // Mixture of experts (Qwen3-MoE); num_experts 0 means every layer is dense.
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;
  bool norm_topk_prob = false;  // renormalise the chosen experts' weights to sum to 1

  std::string torch_dtype;  // informational: the dtype the checkpoint was saved in

  int64_t q_dim() const { return num_heads * head_dim; }
  int64_t kv_dim() const { return num_kv_heads * head_dim; }
  // Whether layer `l` is a mixture of experts (transformers' Qwen3MoeDecoderLayer: not in
  // mlp_only_layers and (l + 1) % decoder_sparse_step == 0).
  bool is_sparse_layer(int64_t l) const;
  int64_t sparse_layer_count() const;
  // Parameters implied by the shapes (embedding counted once when tied).
  int64_t parameter_count() const;
  // Parameters one token uses: the routed experts only (equal to parameter_count() for a
  // dense model, the embedding and lm_head counted as stored).
  int64_t active_parameter_count() const;
  // K and V for one token across all layers: 2 * layers * kv_heads * head_dim * bytes.
  // The counts are checked: glass::Error rather than a wrapped number (within
  // ConfigLimits they fit).
  int64_t kv_bytes_per_token(size_t element_bytes) const;

  Json to_json() const;  // the config.json a checkpoint writer emits
};

// Parses and validates; `source` names the file in error messages. Refuses
// (glass::Unsupported) other architectures and features that change the math but are not
// implemented (rope_type other than default/linear/yarn, sliding-window attention,
// quantization_config, activations other than silu).
ModelConfig parse_model_config(const Json& j, const std::string& source);
ModelConfig load_model_config(const std::string& path);

}  // namespace glass
