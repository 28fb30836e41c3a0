// config.json of a Qwen2ForCausalLM checkpoint: every field that changes the math.
#pragma once

#include <cstdint>
#include <string>

#include "base/json_fields.h"

namespace glass {

struct ModelConfig {
  std::string architecture = "Qwen2ForCausalLM";
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;
  std::string torch_dtype;  // informational: the dtype the checkpoint was saved in

  int64_t q_dim() const { return num_heads * head_dim; }
  int64_t kv_dim() const { return num_kv_heads * head_dim; }
  // Parameters implied by the shapes (embedding counted once when tied).
  int64_t parameter_count() const;
  // K and V for one token across all layers: 2 * layers * kv_heads * head_dim * bytes.
  int64_t kv_bytes_per_token(size_t element_bytes) const {
    return 2 * num_layers * num_kv_heads * head_dim * static_cast<int64_t>(element_bytes);
  }

  Json to_json() const;  // the config.json a checkpoint writer emits
};

// Parses and validates; `source` names the file in error messages. Rejects other
// architectures and features that change the math but are not implemented
// (rope_scaling, sliding-window attention, quantization_config, activations other than silu).
ModelConfig parse_model_config(const Json& j, const std::string& source);
ModelConfig load_model_config(const std::string& path);

}  // namespace glass
