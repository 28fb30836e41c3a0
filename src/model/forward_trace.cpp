#include "model/forward_trace.h"

namespace glass {

void ForwardTrace::emit(Stage s, int layer, const float* data, std::initializer_list<int64_t> sizes,
                        const Batch* rows) const {
  if (!wants(s, layer)) return;
  const StageInfo& info = stage_info(s);
  const Batch& b = rows != nullptr ? *rows : batch_;
  StageTensor t;
  t.stage = info.name;
  t.layer = layer;
  t.data = data;
  auto size = sizes.begin();
  t.axes.push_back({"pos", *size++});
  for (const char* axis : info.axes) {
    if (axis == nullptr || size == sizes.end()) break;
    t.axes.push_back({axis, *size++});
  }
  t.positions = b.positions.data();
  t.tokens = b.tokens.data();
  sink_->record(t);
}

void ForwardTrace::replay_attention(int layer, const AttentionArgs& a, int64_t max_length, Kernels& kernels) {
  const bool want_scores = wants(Stage::kAttnScores, layer), want_weights = wants(Stage::kAttnWeights, layer);
  if (!want_scores && !want_weights) return;
  AttentionArgs seen = a;
  out_.resize(static_cast<size_t>(a.n * a.heads * a.head_dim));
  seen.out = out_.data();
  seen.weights_stride = max_length;
  const auto size = static_cast<size_t>(a.n * a.heads * max_length);
  if (want_scores) {
    scores_.assign(size, 0.0f);
    seen.scores_out = scores_.data();
  }
  if (want_weights) {
    weights_.assign(size, 0.0f);
    seen.weights_out = weights_.data();
  }
  kernels.attention(seen);
  if (want_scores) emit(Stage::kAttnScores, layer, scores_.data(), {a.n, a.heads, max_length});
  if (want_weights) emit(Stage::kAttnWeights, layer, weights_.data(), {a.n, a.heads, max_length});
}

void ForwardTrace::replay_gate_up(int layer, const WeightMatrix& gate, const WeightMatrix& up, const float* x,
                                  int64_t n, Kernels& kernels) {
  if (!wants(Stage::kGate, layer) && !wants(Stage::kUp, layer)) return;
  gate_.resize(static_cast<size_t>(n * gate.rows));
  up_.resize(static_cast<size_t>(n * up.rows));
  kernels.matmul(gate, x, n, nullptr, gate_.data());
  kernels.matmul(up, x, n, nullptr, up_.data());
  emit(Stage::kGate, layer, gate_.data(), {n, gate.rows});
  emit(Stage::kUp, layer, up_.data(), {n, up.rows});
}

}  // namespace glass
