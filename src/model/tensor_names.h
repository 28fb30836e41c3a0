// Where each weight of the decoder lives in a file format: one table per format, shared
// by every architecture of the family (a weight an architecture lacks is simply not
// looked up). Patterns hold {L} for the layer and {E} for the expert.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace glass {

struct TensorNames {
  const char* token_embedding;
  const char* output_norm;
  const char* output;  // lm_head; absent when tied to the embedding
  const char* attn_norm;
  const char* attn_q;
  const char* attn_k;
  const char* attn_v;
  const char* attn_o;
  const char* attn_q_bias;
  const char* attn_k_bias;
  const char* attn_v_bias;
  const char* attn_q_norm;
  const char* attn_k_norm;
  const char* ffn_norm;
  const char* ffn_gate;
  const char* ffn_up;
  const char* ffn_down;
  const char* ffn_router;
  // Experts: one matrix per expert ({E} in the pattern), or all of a layer's experts
  // stacked in one [experts, rows, cols] tensor (no {E}).
  const char* expert_gate;
  const char* expert_up;
  const char* expert_down;
};

// Hugging Face checkpoints (Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM).
inline constexpr TensorNames kHuggingFaceTensorNames = {
    "model.embed_tokens.weight",
    "model.norm.weight",
    "lm_head.weight",
    "model.layers.{L}.input_layernorm.weight",
    "model.layers.{L}.self_attn.q_proj.weight",
    "model.layers.{L}.self_attn.k_proj.weight",
    "model.layers.{L}.self_attn.v_proj.weight",
    "model.layers.{L}.self_attn.o_proj.weight",
    "model.layers.{L}.self_attn.q_proj.bias",
    "model.layers.{L}.self_attn.k_proj.bias",
    "model.layers.{L}.self_attn.v_proj.bias",
    "model.layers.{L}.self_attn.q_norm.weight",
    "model.layers.{L}.self_attn.k_norm.weight",
    "model.layers.{L}.post_attention_layernorm.weight",
    "model.layers.{L}.mlp.gate_proj.weight",
    "model.layers.{L}.mlp.up_proj.weight",
    "model.layers.{L}.mlp.down_proj.weight",
    "model.layers.{L}.mlp.gate.weight",
    "model.layers.{L}.mlp.experts.{E}.gate_proj.weight",
    "model.layers.{L}.mlp.experts.{E}.up_proj.weight",
    "model.layers.{L}.mlp.experts.{E}.down_proj.weight",
};

// llama.cpp's GGUF names (llama-arch.cpp's tensor names for qwen2, qwen3, qwen3moe).
inline constexpr TensorNames kGgufTensorNames = {
    "token_embd.weight",
    "output_norm.weight",
    "output.weight",
    "blk.{L}.attn_norm.weight",
    "blk.{L}.attn_q.weight",
    "blk.{L}.attn_k.weight",
    "blk.{L}.attn_v.weight",
    "blk.{L}.attn_output.weight",
    "blk.{L}.attn_q.bias",
    "blk.{L}.attn_k.bias",
    "blk.{L}.attn_v.bias",
    "blk.{L}.attn_q_norm.weight",
    "blk.{L}.attn_k_norm.weight",
    "blk.{L}.ffn_norm.weight",
    "blk.{L}.ffn_gate.weight",
    "blk.{L}.ffn_up.weight",
    "blk.{L}.ffn_down.weight",
    "blk.{L}.ffn_gate_inp.weight",
    "blk.{L}.ffn_gate_exps.weight",
    "blk.{L}.ffn_up_exps.weight",
    "blk.{L}.ffn_down_exps.weight",
};

inline bool stacked_experts(const char* pattern) { return std::string_view(pattern).find("{E}") == std::string_view::npos; }

// `pattern` with {L} and {E} replaced.
inline std::string tensor_name(const char* pattern, int64_t layer = -1, int64_t expert = -1) {
  std::string s(pattern);
  for (const auto& [key, value] : {std::pair{"{L}", layer}, std::pair{"{E}", expert}}) {
    const size_t at = s.find(key);
    if (at != std::string::npos) s.replace(at, 3, std::to_string(value));
  }
  return s;
}

}  // namespace glass
