// The glass box's hook: the model reports each stage of the forward pass to a sink.
// With no sink the model does nothing extra (one pointer test per stage).
//
// The stages, their order and their axes are listed in trace_stages.h. The costly
// stages (attn_scores, attn_weights, and gate/up, which the fast kernels fuse) are
// computed only when a sink wants them, by a replay beside the real computation.
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
