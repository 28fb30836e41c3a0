// Trace consumers that keep what the model reports: a selection (stages, layers,
// positions), a recorder that summarizes each selected stage (shape, rms/min/max
// overall and per position, first values) and optionally keeps its data, and a fan-out
// that lets several consumers subscribe to one forward pass.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trace/tensor_stats.h"
#include "trace/trace_sink.h"
#include "trace/trace_stages.h"

namespace glass {

// The stages the model reports, in order (trace_stages.h).
const std::vector<std::string>& trace_stage_names();
// Whether a stage is reported once per layer (as opposed to embed, final_norm, logits).
bool is_layer_stage(std::string_view stage);

// Which stages, layers and rows to keep. An unset field keeps everything.
struct TraceSelection {
  std::optional<std::set<std::string>> stages;
  std::optional<std::set<int>> layers;        // applies to per-layer stages only
  std::optional<std::set<int32_t>> positions;  // rows by position

  bool wants(std::string_view stage, int layer) const;
  bool wants_position(int32_t position) const { return !positions || positions->count(position) > 0; }
};

struct NamedAxis {
  std::string name;
  int64_t size;
};

// One stage as recorded: only the selected rows (the "pos" axis counts those).
struct StageRecord {
  std::string stage;
  int layer = -1;
  std::vector<NamedAxis> axes;
  std::vector<int32_t> positions;  // per kept row
  std::vector<int32_t> tokens;     // per kept row
  TensorStats overall;
  std::vector<TensorStats> per_position;
  // Per kept row, its first values in row-major order; NaN where a "keys" entry is
  // padding (a key past the row's position).
  std::vector<std::vector<float>> first;
  std::vector<float> data;  // the kept rows, row-major; empty unless the recorder keeps data

  // "embed", "layer3" (a layer's output: the residual stream), "layer3.q", "final_norm", "logits".
  std::string name() const;
  // "[pos=5, heads=14, dim=64]".
  std::string shape_text() const;
  std::vector<int64_t> shape() const;
  int64_t row_size() const;
  // Whether the "keys" padding of row `r` masks value `i` of that row.
  bool is_padding(size_t r, int64_t i) const;
};

struct RecorderOptions {
  int64_t first_count = 8;  // first values kept per row
  bool keep_data = false;   // keep every selected row's values (for dumps)
};

class TraceRecorder : public TraceSink {
 public:
  explicit TraceRecorder(TraceSelection selection, RecorderOptions options = {});
  bool wants(std::string_view stage, int layer) const override { return selection_.wants(stage, layer); }
  void record(const StageTensor& t) override;

  const std::vector<StageRecord>& stages() const { return stages_; }
  // Hands over the records (the recorder is left empty).
  std::vector<StageRecord> take_stages() { return std::move(stages_); }
  // The record of `stage` at `layer`, or nullptr.
  const StageRecord* find(std::string_view stage, int layer = -1) const;

 private:
  TraceSelection selection_;
  RecorderOptions options_;
  std::vector<StageRecord> stages_;
};

// Forwards each stage to every subscriber that wants it; wants() is true when any does.
class TraceFanout : public TraceSink {
 public:
  void subscribe(TraceSink* sink) { sinks_.push_back(sink); }
  bool wants(std::string_view stage, int layer) const override;
  void record(const StageTensor& t) override;

 private:
  std::vector<TraceSink*> sinks_;
};

}  // namespace glass
