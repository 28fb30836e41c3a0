// Qwen2.5-7B-Instruct's config.json, the model description the config tests start from.
#pragma once

#include "base/json_fields.h"

namespace glass::test {

inline Json qwen_7b_config() {
  return parse_json(R"({
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
    "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
    "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
    "max_position_embeddings": 32768, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "rope_scaling": null, "sliding_window": 131072, "use_sliding_window": false,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16"})",
                    "7b.json");
}

}  // namespace glass::test
