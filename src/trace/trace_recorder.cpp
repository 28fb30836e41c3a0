#include "trace/trace_recorder.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"

namespace glass {

namespace {

// Where the "keys" axis sits in a row: the stride of one key and the number of keys;
// keys == 0 when the tensor has no such axis.
struct KeysAxis {
  int64_t stride = 1;
  int64_t keys = 0;
};

template <class AxisT>
KeysAxis keys_axis(const std::vector<AxisT>& axes) {
  KeysAxis k;
  for (size_t a = axes.size(); a-- > 1;) {
    if (std::string_view(axes[a].name) == "keys") {
      k.keys = axes[a].size;
      return k;
    }
    k.stride *= axes[a].size;
  }
  return KeysAxis{};
}

bool padded(const KeysAxis& k, int32_t position, int64_t i) {
  return k.keys > 0 && (i / k.stride) % k.keys > position;
}

}  // namespace

const std::vector<std::string>& trace_stage_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const StageInfo& s : kStages) v.emplace_back(s.name);
    return v;
  }();
  return names;
}

bool is_layer_stage(std::string_view stage) {
  for (const StageInfo& s : kStages)
    if (stage == s.name) return s.per_layer;
  return true;
}

bool TraceSelection::wants(std::string_view stage, int layer) const {
  if (stages && stages->count(std::string(stage)) == 0) return false;
  if (layer >= 0 && layers && layers->count(layer) == 0) return false;
  return true;
}

std::string StageRecord::name() const {
  if (layer < 0) return stage;
  const std::string base = "layer" + std::to_string(layer);
  return stage == "output" ? base : base + "." + stage;
}

std::string StageRecord::shape_text() const {
  std::string s = "[";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + axes[i].name + "=" + std::to_string(axes[i].size);
  return s + "]";
}

std::vector<int64_t> StageRecord::shape() const {
  std::vector<int64_t> s;
  for (const NamedAxis& a : axes) s.push_back(a.size);
  return s;
}

int64_t StageRecord::row_size() const {
  int64_t n = 1;
  for (size_t i = 1; i < axes.size(); ++i) n *= axes[i].size;
  return n;
}

bool StageRecord::is_padding(size_t r, int64_t i) const { return padded(keys_axis(axes), positions.at(r), i); }

TraceRecorder::TraceRecorder(TraceSelection selection, RecorderOptions options)
    : selection_(std::move(selection)), options_(options) {}

void TraceRecorder::record(const StageTensor& t) {
  if (t.axes.empty() || std::string_view(t.axes[0].name) != "pos")
    fail("trace: stage ", t.stage, " does not start with a \"pos\" axis");
  StageRecord r;
  r.stage = std::string(t.stage);
  r.layer = t.layer;
  for (const Axis& a : t.axes) r.axes.push_back({a.name, a.size});
  const int64_t rows = t.axes[0].size;
  const int64_t width = t.row_size();
  const KeysAxis keys = keys_axis(t.axes);
  const int64_t first = std::min(options_.first_count, width);
  for (int64_t row = 0; row < rows; ++row) {
    const int32_t position = t.positions[row];
    if (!selection_.wants_position(position)) continue;
    const float* x = t.data + row * width;
    TensorStats s;
    for (int64_t i = 0; i < width; ++i)
      if (!padded(keys, position, i)) s.add(x[i]);
    std::vector<float> head(x, x + first);
    for (int64_t i = 0; i < first; ++i)
      if (padded(keys, position, i)) head[i] = std::numeric_limits<float>::quiet_NaN();
    r.positions.push_back(position);
    r.tokens.push_back(t.tokens[row]);
    r.overall.merge(s);
    r.per_position.push_back(s);
    r.first.push_back(std::move(head));
    if (options_.keep_data) r.data.insert(r.data.end(), x, x + width);
  }
  r.axes[0].size = static_cast<int64_t>(r.positions.size());
  stages_.push_back(std::move(r));
}

const StageRecord* TraceRecorder::find(std::string_view stage, int layer) const {
  for (const StageRecord& r : stages_)
    if (r.stage == stage && r.layer == layer) return &r;
  return nullptr;
}

bool TraceFanout::wants(std::string_view stage, int layer) const {
  return std::any_of(sinks_.begin(), sinks_.end(), [&](const TraceSink* s) { return s->wants(stage, layer); });
}

void TraceFanout::record(const StageTensor& t) {
  for (TraceSink* s : sinks_)
    if (s->wants(t.stage, t.layer)) s->record(t);
}

}  // namespace glass
