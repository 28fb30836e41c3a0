// The model's hooks and the logit lens on a tiny random checkpoint: every stage is
// reported with its named axes, the trace never changes what is computed, attention
// scores and weights agree, and the lens at the last layer is the model's logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "kernels/backend.h"
#include "model/decoder_model.h"
#include "support/test_support.h"
#include "trace/logit_lens.h"
#include "trace/trace_recorder.h"

namespace glass {
namespace {

class TinyModel : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    test::write_tiny_checkpoint(dir_.path(), test::tiny_config());
    model_ = std::make_unique<DecoderModel>(DecoderModel::load(dir_.path()));
    backend_ = std::make_unique<Backend>(GetParam(), 2);
  }
  std::vector<float> forward(const std::vector<int32_t>& ids, TraceSink* sink, bool all_logits = true) {
    KVCache cache(model_->config(), KVType::F32, 64);
    std::vector<float> logits;
    model_->forward(Batch::prompt(ids, cache.add_sequence(), 0, all_logits), cache, backend_->kernels(), logits, sink);
    return logits;
  }
  test::TempDir dir_;
  std::unique_ptr<DecoderModel> model_;
  std::unique_ptr<Backend> backend_;
  const std::vector<int32_t> ids_ = {5, 17, 99, 3, 42};
};

// The stages a model of this config reports, in the table's order.
std::vector<std::string> stages_of(const ModelConfig& c) {
  const std::set<std::string> qk_norm = {"q_norm", "k_norm"}, dense = {"gate", "up", "mlp_act", "down"},
                              sparse = {"router_probs", "expert_weights", "moe_out"};
  std::vector<std::string> out;
  for (const std::string& s : trace_stage_names()) {
    if (qk_norm.count(s) && !c.qk_norm) continue;
    if (dense.count(s) && c.is_sparse_layer(0)) continue;
    if (sparse.count(s) && !c.is_sparse_layer(0)) continue;
    out.push_back(s);
  }
  return out;
}

TEST_P(TinyModel, ReportsEveryStageWithNamedAxesInOrder) {
  RecorderOptions keep;
  keep.keep_data = true;
  TraceRecorder rec({}, keep);
  forward(ids_, &rec);
  const ModelConfig& c = model_->config();
  std::vector<std::string> order;
  for (const StageRecord& r : rec.stages())
    if (r.layer <= 0) order.push_back(r.stage);
  std::vector<std::string> expected = stages_of(c);
  EXPECT_EQ(order, expected);
  EXPECT_EQ(rec.stages().size(), 3 + (expected.size() - 3) * static_cast<size_t>(c.num_layers));
  const std::map<std::string, std::string> shapes = {
      {"embed", "[pos=5, hidden=32]"},          {"q", "[pos=5, heads=4, dim=8]"},
      {"k_rope", "[pos=5, kv_heads=2, dim=8]"}, {"attn_scores", "[pos=5, heads=4, keys=5]"},
      {"attn_out", "[pos=5, heads=4, dim=8]"},  {"gate", "[pos=5, intermediate=64]"},
      {"output", "[pos=5, hidden=32]"},         {"logits", "[pos=5, vocab=128]"}};
  for (const auto& [stage, shape] : shapes) {
    const StageRecord* r = rec.find(stage, is_layer_stage(stage) ? 1 : -1);
    ASSERT_NE(r, nullptr) << stage;
    EXPECT_EQ(r->shape_text(), shape) << stage;
    EXPECT_EQ(r->data.size(), static_cast<size_t>(r->row_size()) * 5) << stage;
    EXPECT_EQ(r->tokens, ids_) << stage;
  }
}

TEST_P(TinyModel, TracingDoesNotChangeTheLogits) {
  const auto plain = forward(ids_, nullptr);
  TraceRecorder rec({});
  const auto traced = forward(ids_, &rec);
  EXPECT_EQ(plain, traced);
}

class WantsNothing : public TraceSink {
 public:
  bool wants(std::string_view, int) const override {
    ++asked;
    return false;
  }
  void record(const StageTensor&) override { ++recorded; }
  mutable int asked = 0;
  int recorded = 0;
};

TEST_P(TinyModel, ASinkThatWantsNothingIsOnlyAsked) {
  WantsNothing sink;
  const auto traced = forward(ids_, &sink);
  EXPECT_EQ(sink.recorded, 0);
  EXPECT_GT(sink.asked, 0);
  EXPECT_EQ(traced, forward(ids_, nullptr));
}

TEST_P(TinyModel, AttentionWeightsAreTheSoftmaxOfTheScores) {
  RecorderOptions keep;
  keep.keep_data = true;
  TraceSelection sel;
  sel.stages = std::set<std::string>{"attn_scores", "attn_weights", "q_rope", "k_rope"};
  TraceRecorder rec(sel, keep);
  forward(ids_, &rec);
  const ModelConfig& c = model_->config();
  for (int layer = 0; layer < c.num_layers; ++layer) {
    const StageRecord* s = rec.find("attn_scores", layer);
    const StageRecord* w = rec.find("attn_weights", layer);
    const StageRecord* q = rec.find("q_rope", layer);
    const StageRecord* k = rec.find("k_rope", layer);
    ASSERT_TRUE(s && w && q && k);
    const int64_t heads = c.num_heads, keys = 5, hd = c.head_dim, group = c.num_heads / c.num_kv_heads;
    for (int64_t p = 0; p < 5; ++p)
      for (int64_t h = 0; h < heads; ++h) {
        const float* srow = &s->data[(p * heads + h) * keys];
        const float* wrow = &w->data[(p * heads + h) * keys];
        double max = -INFINITY, sum = 0;
        for (int64_t j = 0; j <= p; ++j) max = std::max(max, double(srow[j]));
        for (int64_t j = 0; j <= p; ++j) sum += std::exp(srow[j] - max);
        for (int64_t j = 0; j < keys; ++j) {
          if (j > p) {
            EXPECT_EQ(srow[j], -INFINITY) << "the causal mask";
            EXPECT_EQ(wrow[j], -1.0f) << "weights padding";
            continue;
          }
          EXPECT_NEAR(wrow[j], std::exp(srow[j] - max) / sum, 1e-6);
          double dot = 0;
          for (int64_t i = 0; i < hd; ++i)
            dot += double(q->data[(p * heads + h) * hd + i]) * k->data[(j * c.num_kv_heads + h / group) * hd + i];
          EXPECT_NEAR(srow[j], dot / std::sqrt(double(hd)), 1e-5) << "layer " << layer << " pos " << p << " key " << j;
        }
      }
  }
}

TEST_P(TinyModel, LensAtTheLastLayerIsTheModelsLogits) {
  LensCollector lens(std::nullopt, std::set<int32_t>{1, 4});
  KVCache cache(model_->config(), KVType::F32, 64);
  Batch b;
  const int32_t seq = cache.add_sequence();
  for (size_t i = 0; i < ids_.size(); ++i) b.add(ids_[i], static_cast<int32_t>(i), seq, i == 1 || i == 4);
  std::vector<float> logits;
  model_->forward(b, cache, backend_->kernels(), logits, &lens);
  const LogitLens l = lens.compute(*model_, backend_->kernels(), 5);
  EXPECT_EQ(l.positions, (std::vector<int32_t>{1, 4}));
  EXPECT_EQ(l.tokens, (std::vector<int32_t>{17, 42}));
  ASSERT_EQ(l.layers.size(), 2u);
  ASSERT_TRUE(l.last_layer_max_abs_diff.has_value());
  EXPECT_LE(*l.last_layer_max_abs_diff, 1e-6);
  ASSERT_EQ(l.final_top.size(), 2u);
  for (size_t p = 0; p < 2; ++p) {
    const auto from_logits = top_tokens({logits.data() + p * 128, 128}, 5);
    ASSERT_EQ(l.layers[1].top[p].size(), 5u);
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(l.layers[1].top[p][i].id, from_logits[i].id);
      EXPECT_NEAR(l.layers[1].top[p][i].prob, from_logits[i].prob, 1e-9);
      EXPECT_EQ(l.final_top[p][i].id, from_logits[i].id);
    }
  }
  // An earlier layer's lens reads that layer's residual stream, not the last one's.
  EXPECT_NE(l.layers[0].top[1][0].logit, l.layers[1].top[1][0].logit);
}

INSTANTIATE_TEST_SUITE_P(Backends, TinyModel, ::testing::Values("reference", "cpu"));

// A tiny Qwen3-MoE: per-head q/k norms, head_dim * heads != hidden, 4 experts, 2 routed.
class TinyMoeModel : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ModelConfig c = test::tiny_config();
    c.architecture = Architecture::Qwen3Moe;
    c.head_dim = 16;
    c.attention_bias = false;
    c.qk_norm = true;
    c.num_experts = 4;
    c.num_experts_per_tok = 2;
    c.moe_intermediate_size = 32;
    c.norm_topk_prob = true;
    test::write_tiny_checkpoint(dir_.path(), c);
    model_ = std::make_unique<DecoderModel>(DecoderModel::load(dir_.path()));
    backend_ = std::make_unique<Backend>(GetParam(), 2);
  }
  std::vector<float> forward(TraceSink* sink) {
    KVCache cache(model_->config(), KVType::F32, 64);
    std::vector<float> logits;
    model_->forward(Batch::prompt(ids_, cache.add_sequence(), 0, true), cache, backend_->kernels(), logits, sink);
    return logits;
  }
  test::TempDir dir_;
  std::unique_ptr<DecoderModel> model_;
  std::unique_ptr<Backend> backend_;
  const std::vector<int32_t> ids_ = {5, 17, 99, 3, 42, 7};
};

TEST_P(TinyMoeModel, ReportsQkNormsAndRoutingWithNamedAxes) {
  RecorderOptions keep;
  keep.keep_data = true;
  TraceRecorder rec({}, keep);
  const auto traced = forward(&rec);
  EXPECT_EQ(traced, forward(nullptr)) << "tracing changed the logits";
  std::vector<std::string> order;
  for (const StageRecord& r : rec.stages())
    if (r.layer <= 0) order.push_back(r.stage);
  EXPECT_EQ(order, stages_of(model_->config()));
  const std::map<std::string, std::string> shapes = {{"q_norm", "[pos=6, heads=4, dim=16]"},
                                                     {"k_norm", "[pos=6, kv_heads=2, dim=16]"},
                                                     {"attn_out", "[pos=6, heads=4, dim=16]"},
                                                     {"router_probs", "[pos=6, experts=4]"},
                                                     {"expert_weights", "[pos=6, experts=4]"},
                                                     {"moe_out", "[pos=6, hidden=32]"}};
  for (const auto& [stage, shape] : shapes) {
    const StageRecord* r = rec.find(stage, 1);
    ASSERT_NE(r, nullptr) << stage;
    EXPECT_EQ(r->shape_text(), shape) << stage;
  }
  for (int layer = 0; layer < 2; ++layer) {
    const StageRecord* probs = rec.find("router_probs", layer);
    const StageRecord* weights = rec.find("expert_weights", layer);
    ASSERT_TRUE(probs && weights);
    for (int64_t p = 0; p < 6; ++p) {
      double prob_sum = 0, weight_sum = 0;
      int chosen = 0;
      float lowest_chosen = 1, highest_other = 0;
      for (int64_t e = 0; e < 4; ++e) {
        const float pr = probs->data[p * 4 + e], w = weights->data[p * 4 + e];
        prob_sum += pr;
        weight_sum += w;
        if (w != 0) ++chosen, lowest_chosen = std::min(lowest_chosen, pr);
        else highest_other = std::max(highest_other, pr);
      }
      EXPECT_NEAR(prob_sum, 1.0, 1e-6);
      EXPECT_NEAR(weight_sum, 1.0, 1e-6) << "norm_topk_prob renormalises the chosen weights";
      EXPECT_EQ(chosen, 2);
      EXPECT_GE(lowest_chosen, highest_other) << "the top-2 experts are chosen";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, TinyMoeModel, ::testing::Values("reference", "cpu"));

TEST(TopTokens, MostProbableFirstTiesByIdProbabilitiesSumToOne) {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, -INFINITY, 0.5f};
  const auto top = top_tokens(logits, 10, [](int32_t id) { return std::string("t").append(std::to_string(id)); });
  ASSERT_EQ(top.size(), 5u);
  EXPECT_EQ(top[0].id, 1);
  EXPECT_EQ(top[1].id, 2);
  EXPECT_EQ(top[2].id, 0);
  EXPECT_EQ(top[4].id, 3);
  EXPECT_EQ(top[0].text, "t1");
  double sum = 0;
  for (const auto& t : top) sum += t.prob;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_EQ(top[4].prob, 0.0);
  EXPECT_NEAR(top[0].prob, std::exp(3.0) / (2 * std::exp(3.0) + std::exp(1.0) + std::exp(0.5)), 1e-12);
  EXPECT_EQ(top_tokens(logits, 2).size(), 2u);
  EXPECT_TRUE(top_tokens({}, 3).empty());
}

TEST(TopTokens, AStandingIsTheTokensPlaceInTheTopList) {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, -INFINITY, 0.5f};
  const auto top = top_tokens(logits, 5);
  for (size_t rank = 0; rank < top.size(); ++rank) {
    const TokenStanding s = standing_of(logits, top[rank].id);
    EXPECT_EQ(s.rank, static_cast<int64_t>(rank)) << top[rank].id;
    EXPECT_DOUBLE_EQ(s.prob, top[rank].prob);
    EXPECT_EQ(s.logit, top[rank].logit);
    EXPECT_EQ(s.removed, top[rank].id == 3);
  }
  EXPECT_THROW(standing_of(logits, 5), Error);
  EXPECT_THROW(standing_of(logits, -1), Error);
}

}  // namespace
}  // namespace glass
