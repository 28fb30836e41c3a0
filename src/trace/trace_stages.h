// The stages of the decoder's forward pass, in the order it reports them, with their
// axes: one table that the model, the trace consumers and the CLI read.
//
// A layer reports the stages of its kind: every layer the attention stages (q_norm and
// k_norm only with per-head q/k norms, Qwen3); a dense layer gate/up/mlp_act/down; a
// mixture-of-experts layer router_probs/expert_weights/moe_out.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace glass {

enum class Stage {
  kEmbed,
  kAttnNorm,
  kQ,
  kK,
  kV,
  kQNorm,
  kKNorm,
  kQRope,
  kKRope,
  kAttnScores,
  kAttnWeights,
  kAttnOut,
  kOProj,
  kAttnResidual,
  kMlpNorm,
  kGate,
  kUp,
  kMlpAct,
  kDown,
  kRouterProbs,
  kExpertWeights,
  kMoeOut,
  kOutput,
  kFinalNorm,
  kLogits,
};

struct StageInfo {
  Stage stage;
  const char* name;
  bool per_layer;
  std::array<const char*, 3> axes;  // after "pos"; nullptr past the last
  const char* what;
};

// Axis names: "pos", "heads", "kv_heads", "dim", "hidden", "keys", "intermediate",
// "experts", "vocab". The "keys" axis indexes positions 0..max_length-1 of a row's
// sequence; a row at position p attends to keys 0..p, entries past p are padding (-inf
// for scores, -1 for weights).
inline constexpr StageInfo kStages[] = {
    {Stage::kEmbed, "embed", false, {"hidden"}, "token embeddings"},
    {Stage::kAttnNorm, "attn_norm", true, {"hidden"}, "input RMSNorm"},
    {Stage::kQ, "q", true, {"heads", "dim"}, "query projection (+bias)"},
    {Stage::kK, "k", true, {"kv_heads", "dim"}, "key projection (+bias)"},
    {Stage::kV, "v", true, {"kv_heads", "dim"}, "value projection (+bias)"},
    {Stage::kQNorm, "q_norm", true, {"heads", "dim"}, "per-head RMSNorm of q (Qwen3)"},
    {Stage::kKNorm, "k_norm", true, {"kv_heads", "dim"}, "per-head RMSNorm of k (Qwen3)"},
    {Stage::kQRope, "q_rope", true, {"heads", "dim"}, "q after RoPE"},
    {Stage::kKRope, "k_rope", true, {"kv_heads", "dim"}, "k after RoPE"},
    {Stage::kAttnScores, "attn_scores", true, {"heads", "keys"}, "q.k scaled, before the softmax"},
    {Stage::kAttnWeights, "attn_weights", true, {"heads", "keys"}, "softmax weights"},
    {Stage::kAttnOut, "attn_out", true, {"heads", "dim"}, "weighted sum of v"},
    {Stage::kOProj, "o_proj", true, {"hidden"}, "output projection"},
    {Stage::kAttnResidual, "attn_residual", true, {"hidden"}, "residual stream after attention"},
    {Stage::kMlpNorm, "mlp_norm", true, {"hidden"}, "post-attention RMSNorm"},
    {Stage::kGate, "gate", true, {"intermediate"}, "gate projection (dense MLP)"},
    {Stage::kUp, "up", true, {"intermediate"}, "up projection (dense MLP)"},
    {Stage::kMlpAct, "mlp_act", true, {"intermediate"}, "silu(gate) * up (dense MLP)"},
    {Stage::kDown, "down", true, {"hidden"}, "down projection (dense MLP)"},
    {Stage::kRouterProbs, "router_probs", true, {"experts"}, "router softmax over all experts (MoE)"},
    {Stage::kExpertWeights, "expert_weights", true, {"experts"}, "the chosen experts' weights, 0 elsewhere (MoE)"},
    {Stage::kMoeOut, "moe_out", true, {"hidden"}, "weighted sum of the chosen experts' outputs (MoE)"},
    {Stage::kOutput, "output", true, {"hidden"}, "residual stream after the layer"},
    {Stage::kFinalNorm, "final_norm", false, {"hidden"}, "final RMSNorm"},
    {Stage::kLogits, "logits", false, {"vocab"}, "only the rows that want logits"},
};
inline constexpr size_t kStageCount = sizeof(kStages) / sizeof(kStages[0]);

constexpr const StageInfo& stage_info(Stage s) { return kStages[static_cast<size_t>(s)]; }
constexpr const char* stage_name(Stage s) { return stage_info(s).name; }

}  // namespace glass
