// Stats, the recorder's selection and summaries, the fan-out.
#include <gtest/gtest.h>

#include <cmath>

#include "trace/tensor_stats.h"
#include "trace/trace_recorder.h"

namespace glass {
namespace {

TEST(TensorStats, RmsMinMaxOverFiniteValues) {
  const std::vector<float> v = {3, -4, NAN, INFINITY};
  const TensorStats s = tensor_stats(v);
  EXPECT_EQ(s.count, 2);
  EXPECT_EQ(s.nonfinite, 2);
  EXPECT_DOUBLE_EQ(s.rms(), std::sqrt(12.5));
  EXPECT_EQ(s.min, -4);
  EXPECT_EQ(s.max, 3);
  TensorStats empty;
  EXPECT_EQ(empty.rms(), 0);
  EXPECT_TRUE(std::isnan(empty.min_or_nan()));
  TensorStats merged = tensor_stats(std::vector<float>{1});
  merged.merge(s);
  EXPECT_EQ(merged.count, 3);
  EXPECT_DOUBLE_EQ(merged.rms(), std::sqrt(26.0 / 3));
  EXPECT_EQ(merged.min, -4);
}

// A [pos=3, heads=2, keys=3] stage as the model reports attention weights: row p
// attends to keys 0..p; the rest is padding.
StageTensor attention_like(std::vector<float>& data, const int32_t* positions, const int32_t* tokens) {
  data.assign(3 * 2 * 3, -1.0f);
  for (int p = 0; p < 3; ++p)
    for (int h = 0; h < 2; ++h)
      for (int k = 0; k <= p; ++k) data[(p * 2 + h) * 3 + k] = static_cast<float>(10 * p + k + 1);
  StageTensor t;
  t.stage = "attn_weights";
  t.layer = 1;
  t.data = data.data();
  t.axes = {{"pos", 3}, {"heads", 2}, {"keys", 3}};
  t.positions = positions;
  t.tokens = tokens;
  return t;
}

TEST(TraceRecorder, SummarizesRowsAndMasksKeysPadding) {
  const int32_t positions[3] = {0, 1, 2}, tokens[3] = {7, 8, 9};
  std::vector<float> data;
  const StageTensor t = attention_like(data, positions, tokens);
  RecorderOptions options;
  options.first_count = 4;
  options.keep_data = true;
  TraceRecorder rec({}, options);
  rec.record(t);
  ASSERT_EQ(rec.stages().size(), 1u);
  const StageRecord& r = rec.stages()[0];
  EXPECT_EQ(r.name(), "layer1.attn_weights");
  EXPECT_EQ(r.shape_text(), "[pos=3, heads=2, keys=3]");
  EXPECT_EQ(r.row_size(), 6);
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{7, 8, 9}));
  // Position 0 sees key 0 only (value 1, in both heads); the -1 padding is left out.
  EXPECT_EQ(r.per_position[0].count, 2);
  EXPECT_DOUBLE_EQ(r.per_position[0].rms(), 1.0);
  EXPECT_EQ(r.per_position[0].min, 1);
  EXPECT_EQ(r.per_position[2].count, 6);
  EXPECT_EQ(r.overall.count, 2 + 4 + 6);
  EXPECT_EQ(r.overall.min, 1);
  EXPECT_EQ(r.overall.max, 23);
  // First values of position 1: head 0 keys 0..2, head 1 key 0; key 2 is padding.
  ASSERT_EQ(r.first[1].size(), 4u);
  EXPECT_EQ(r.first[1][0], 11);
  EXPECT_EQ(r.first[1][1], 12);
  EXPECT_TRUE(std::isnan(r.first[1][2]));
  EXPECT_EQ(r.first[1][3], 11);
  EXPECT_TRUE(r.is_padding(1, 2));
  EXPECT_FALSE(r.is_padding(1, 3));
  EXPECT_EQ(r.data, data) << "kept data includes the padding as the model wrote it";
}

TEST(TraceRecorder, SelectsStagesLayersAndPositions) {
  TraceSelection sel;
  sel.stages = std::set<std::string>{"attn_weights", "embed"};
  sel.layers = std::set<int>{1};
  sel.positions = std::set<int32_t>{0, 2};
  EXPECT_TRUE(sel.wants("embed", -1));
  EXPECT_TRUE(sel.wants("attn_weights", 1));
  EXPECT_FALSE(sel.wants("attn_weights", 0));
  EXPECT_FALSE(sel.wants("q", 1));
  TraceRecorder rec(sel);
  EXPECT_FALSE(rec.wants("output", 1));
  const int32_t positions[3] = {0, 1, 2}, tokens[3] = {7, 8, 9};
  std::vector<float> data;
  rec.record(attention_like(data, positions, tokens));
  const StageRecord* r = rec.find("attn_weights", 1);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->positions, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(r->axes[0].size, 2) << "the pos axis counts the kept rows";
  EXPECT_TRUE(r->data.empty()) << "data is kept only when asked";
  EXPECT_EQ(r->first[1][0], 21);
  EXPECT_EQ(rec.find("attn_weights", 0), nullptr);
}

TEST(TraceRecorder, NamesFollowTheGoldenTrace) {
  StageRecord r;
  r.stage = "output";
  r.layer = 3;
  EXPECT_EQ(r.name(), "layer3");
  r.stage = "q";
  EXPECT_EQ(r.name(), "layer3.q");
  r.stage = "final_norm";
  r.layer = -1;
  EXPECT_EQ(r.name(), "final_norm");
  EXPECT_TRUE(is_layer_stage("attn_scores"));
  EXPECT_FALSE(is_layer_stage("embed"));
  EXPECT_EQ(trace_stage_names().front(), "embed");
  EXPECT_EQ(trace_stage_names().back(), "logits");
}

class CountingSink : public TraceSink {
 public:
  explicit CountingSink(std::string stage) : stage_(std::move(stage)) {}
  bool wants(std::string_view stage, int) const override { return stage == stage_; }
  void record(const StageTensor&) override { ++count; }
  int count = 0;

 private:
  std::string stage_;
};

TEST(TraceFanout, ForwardsToEverySubscriberThatWants) {
  CountingSink a("q"), b("k");
  TraceFanout fan;
  EXPECT_FALSE(fan.wants("q", 0)) << "no subscribers: nobody wants anything";
  fan.subscribe(&a);
  fan.subscribe(&b);
  EXPECT_TRUE(fan.wants("q", 0));
  EXPECT_TRUE(fan.wants("k", 0));
  EXPECT_FALSE(fan.wants("v", 0));
  const float x[2] = {1, 2};
  const int32_t pos[1] = {0}, tok[1] = {5};
  StageTensor t;
  t.stage = "q";
  t.data = x;
  t.axes = {{"pos", 1}, {"dim", 2}};
  t.positions = pos;
  t.tokens = tok;
  fan.record(t);
  EXPECT_EQ(a.count, 1);
  EXPECT_EQ(b.count, 0);
}

}  // namespace
}  // namespace glass
