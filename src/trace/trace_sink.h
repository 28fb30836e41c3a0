// The glass box's hook: the model reports each stage of the forward pass to a sink.
// With no sink the model does nothing extra (one pointer test per stage).
//
// Stages, in the order the model reports them (layer -1 outside the layers):
//   embed                      [pos, hidden]              token embeddings
//   per layer:
//   attn_norm                  [pos, hidden]              input RMSNorm
//   q, k, v                    [pos, heads|kv_heads, dim] after the projection (+bias)
//   q_rope, k_rope             [pos, heads|kv_heads, dim] after RoPE
//   attn_scores                [pos, heads, keys]         q·k/sqrt(dim) before the softmax
//   attn_weights               [pos, heads, keys]         softmax weights
//   attn_out                   [pos, heads, dim]          weighted sum of v
//   o_proj                     [pos, hidden]
//   attn_residual              [pos, hidden]              residual stream after attention
//   mlp_norm                   [pos, hidden]              post-attention RMSNorm
//   gate, up                   [pos, intermediate]
//   mlp_act                    [pos, intermediate]        silu(gate) * up
//   down                       [pos, hidden]
//   output                     [pos, hidden]              residual stream after the layer
//   final_norm                 [pos, hidden]
//   logits                     [pos, vocab]               only the rows that want logits
//
// The "keys" axis indexes the positions 0..max_length-1 of a row's sequence; a row at
// position p attends to keys 0..p, and entries past p are padding (-inf for scores,
// -1 for weights). The costly stages (attn_scores, attn_weights, and gate/up, which the
// fast kernels fuse) are only computed when a sink wants them.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace glass {

struct Axis {
  const char* name;  // "pos", "heads", "kv_heads", "dim", "hidden", "keys", "intermediate", "vocab"
  int64_t size;
};

struct StageTensor {
  std::string_view stage;  // "embed", "q", "attn_weights", "output", "final_norm", "logits", ...
  int layer = -1;          // -1 for stages outside the layers
  const float* data = nullptr;  // row-major over `axes`
  std::vector<Axis> axes;       // axes[0] is always "pos": one row per batch row
  const int32_t* positions = nullptr;  // [axes[0].size]: the position of each row
  const int32_t* tokens = nullptr;     // [axes[0].size]: the token of each row

  int64_t numel() const {
    int64_t n = 1;
    for (const Axis& a : axes) n *= a.size;
    return n;
  }
  // Values per row (the product of every axis after "pos").
  int64_t row_size() const { return axes.empty() || axes[0].size == 0 ? 0 : numel() / axes[0].size; }
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  // Lets the model skip stages nobody wants (attention weights are costly to keep).
  virtual bool wants(std::string_view stage, int layer) const = 0;
  // `t` and its data are valid only during the call; a sink copies what it keeps.
  virtual void record(const StageTensor& t) = 0;
};

}  // namespace glass
