// What the decoder tells the trace, and the trace's replays: the stages that only the
// trace needs (attention scores and weights, gate and up apart, which the fast kernels
// fuse) are computed here from the inputs of the real computation, beside it, so that
// the forward pass has no extra branches and tracing never changes what it computes.
#pragma once

#include <initializer_list>
#include <vector>

#include "kernels/kernels.h"
#include "model/batch.h"
#include "trace/trace_sink.h"
#include "trace/trace_stages.h"

namespace glass {

class ForwardTrace {
 public:
  ForwardTrace(TraceSink* sink, const Batch& batch) : sink_(sink), batch_(batch) {}

  bool wants(Stage s, int layer) const { return sink_ != nullptr && sink_->wants(stage_name(s), layer); }

  // Reports `data` as stage `s`: `sizes` are the row count, then one size per axis of
  // the stage's table entry. `rows` (default: the batch) gives each row's position and token.
  void emit(Stage s, int layer, const float* data, std::initializer_list<int64_t> sizes,
            const Batch* rows = nullptr) const;

  // attn_scores / attn_weights of the attention `a` (already run), when wanted: a
  // second attention call that keeps them, whose output is thrown away.
  void replay_attention(int layer, const AttentionArgs& a, int64_t max_length, Kernels& kernels);

  // gate / up of the dense MLP apart, when wanted (the fast kernels fuse them).
  void replay_gate_up(int layer, const WeightMatrix& gate, const WeightMatrix& up, const float* x, int64_t n,
                      Kernels& kernels);

 private:
  TraceSink* sink_;
  const Batch& batch_;
  std::vector<float> scores_, weights_, out_, gate_, up_;
};

}  // namespace glass
