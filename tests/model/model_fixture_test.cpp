// Golden tests: every fixture model folder with a golden.json (a float64 transformers
// forward of the same weights). Cases are discovered at run time from GLASS_FIXTURES.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/json_fields.h"
#include "kernels/backend.h"
#include "model/decoder_model.h"
#include "support/test_support.h"

namespace glass {
namespace {

constexpr double kTol = 1e-4;

std::vector<int32_t> ids_of(const Json& j) { return j.get<std::vector<int32_t>>(); }

// Collects whole stage tensors by golden stage name ("embed", "layer0", "final_norm").
class StageRecorder : public TraceSink {
 public:
  bool wants(std::string_view stage, int) const override {
    return stage == "embed" || stage == "output" || stage == "final_norm";
  }
  void record(const StageTensor& t) override {
    std::string name = t.stage == "output" ? "layer" + std::to_string(t.layer) : std::string(t.stage);
    stages[name] = {t.data, t.data + t.numel()};
    widths[name] = t.axes.back().size;
  }
  std::map<std::string, std::vector<float>> stages;
  std::map<std::string, int64_t> widths;
};

std::vector<float> forward_all(const DecoderModel& m, Kernels& k, const std::vector<int32_t>& ids,
                               TraceSink* trace = nullptr) {
  KVCache cache(m.config(), KVType::F32, static_cast<int64_t>(ids.size()) + 32);
  std::vector<float> logits;
  m.forward(Batch::prompt(ids, cache.add_sequence(), 0, true), cache, k, logits, trace);
  return logits;
}

// Each golden test runs on every backend: the reference kernels and the fast CPU
// kernels (f32 activations and KV cache, weights as stored), with the same bounds.
class GoldenModel : public ::testing::Test {
 public:
  GoldenModel(std::string dir, std::string backend) : dir_(std::move(dir)), backend_(backend, 2) {}

 protected:
  void SetUp() override {
    golden_ = read_json_file(dir_ + "/golden.json");
    model_ = std::make_unique<DecoderModel>(DecoderModel::load(dir_));
    ASSERT_FALSE(golden_["cases"].empty()) << dir_ << ": golden.json has no cases";
  }
  std::string dir_;
  Backend backend_;
  Json golden_;
  std::unique_ptr<DecoderModel> model_;
};

class LogitsMatch : public GoldenModel {
 public:
  using GoldenModel::GoldenModel;
  void TestBody() override {
    const int64_t vocab = model_->config().vocab_size;
    const auto probe_ids = ids_of(golden_["probe_ids"]);
    for (const Json& c : golden_["cases"]) {
      const std::string name = c["name"];
      SCOPED_TRACE("case " + name);
      const auto ids = ids_of(c["ids"]);
      const auto logits = forward_all(*model_, backend_.kernels(), ids);
      ASSERT_EQ(logits.size(), ids.size() * static_cast<size_t>(vocab));
      for (size_t p = 0; p < ids.size(); ++p) {
        const float* row = &logits[p * vocab];
        int64_t argmax = 0;
        double max = -INFINITY;
        for (int64_t v = 0; v < vocab; ++v)
          if (row[v] > max) max = row[v], argmax = v;
        EXPECT_EQ(argmax, c["top10_ids"][p][0].get<int64_t>()) << "argmax at position " << p;
        for (size_t i = 0; i < 10; ++i) {
          const int64_t id = c["top10_ids"][p][i];
          EXPECT_NEAR(row[id], c["top10_logits"][p][i].get<double>(), kTol) << "top-10 logit of " << id << " at " << p;
        }
        double sum = 0;
        for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - max);
        EXPECT_NEAR(max + std::log(sum), c["logsumexp"][p].get<double>(), kTol) << "logsumexp at " << p;
        for (size_t i = 0; i < probe_ids.size(); ++i)
          EXPECT_NEAR(row[probe_ids[i]], c["probe_logits"][p][i].get<double>(), kTol)
              << "probe id " << probe_ids[i] << " at position " << p;
      }
      const auto golden_last = test::read_f32_file(dir_ + "/golden_last_logits." + name + ".f32");
      ASSERT_EQ(golden_last.size(), static_cast<size_t>(vocab)) << "golden_last_logits." << name << ".f32";
      const float* last = &logits[(ids.size() - 1) * vocab];
      double worst = 0;
      for (int64_t v = 0; v < vocab; ++v) worst = std::max(worst, std::fabs(double(last[v]) - golden_last[v]));
      EXPECT_LE(worst, kTol) << "max |logit - golden| over the last position's " << vocab << " logits";
    }
  }
};

class TraceMatches : public GoldenModel {
 public:
  using GoldenModel::GoldenModel;
  void TestBody() override {
    const Json& trace = golden_["trace"];
    const Json* prompt_case = nullptr;
    for (const Json& c : golden_["cases"])
      if (c["name"] == trace["prompt"]) prompt_case = &c;
    ASSERT_NE(prompt_case, nullptr) << "trace prompt " << trace["prompt"] << " is not a case";
    StageRecorder rec;
    forward_all(*model_, backend_.kernels(), ids_of((*prompt_case)["ids"]), &rec);
    ASSERT_FALSE(trace["stages"].empty());
    for (const Json& s : trace["stages"]) {
      const std::string stage = s["stage"];
      ASSERT_TRUE(rec.stages.count(stage)) << "stage " << stage << " was not traced";
      const auto& data = rec.stages[stage];
      const int64_t width = rec.widths[stage];
      for (size_t p = 0; p < s["rms"].size(); ++p) {
        double ss = 0;
        for (int64_t i = 0; i < width; ++i) ss += double(data[p * width + i]) * data[p * width + i];
        EXPECT_NEAR(std::sqrt(ss / width), s["rms"][p].get<double>(), kTol) << stage << " rms at " << p;
        for (size_t i = 0; i < 8; ++i)
          EXPECT_NEAR(data[p * width + i], s["first8"][p][i].get<double>(), kTol) << stage << " value " << i << " at " << p;
      }
    }
  }
};

class CachedDecodeMatchesFull : public GoldenModel {
 public:
  using GoldenModel::GoldenModel;
  void TestBody() override {
    const int64_t vocab = model_->config().vocab_size;
    for (const Json& c : golden_["cases"]) {
      SCOPED_TRACE("case " + c["name"].get<std::string>());
      const auto ids = ids_of(c["ids"]);
      const auto full = forward_all(*model_, backend_.kernels(), ids);
      KVCache cache(model_->config(), KVType::F32, static_cast<int64_t>(ids.size()));
      const int32_t s = cache.add_sequence();
      Kernels& k = backend_.kernels();
      const size_t prefill = ids.size() / 2 + 1;
      std::vector<float> logits;
      model_->forward(Batch::prompt({ids.begin(), ids.begin() + static_cast<long>(prefill)}, s, 0, true), cache, k, logits);
      std::vector<float> got = logits;
      for (size_t p = prefill; p < ids.size(); ++p) {
        model_->forward(Batch::prompt({ids[p]}, s, static_cast<int32_t>(p), false), cache, k, logits);
        got.insert(got.end(), logits.begin(), logits.end());
      }
      ASSERT_EQ(got.size(), full.size());
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - full[i]));
      EXPECT_LE(worst, kTol) << "prefill " << prefill << " + decode vs full recompute over " << ids.size() << "x" << vocab;
    }
  }
};

class GreedyMatches : public GoldenModel {
 public:
  using GoldenModel::GoldenModel;
  void TestBody() override {
    const int64_t vocab = model_->config().vocab_size;
    for (const Json& c : golden_["cases"]) {
      SCOPED_TRACE("case " + c["name"].get<std::string>());
      auto ids = ids_of(c["ids"]);
      const auto expected = ids_of(c["greedy_new_ids"]);
      const auto margins = c["greedy_margins"].get<std::vector<double>>();
      KVCache cache(model_->config(), KVType::F32, static_cast<int64_t>(ids.size() + expected.size()));
      const int32_t s = cache.add_sequence();
      Kernels& k = backend_.kernels();
      std::vector<float> logits;
      model_->forward(Batch::prompt(ids, s, 0, false), cache, k, logits);
      for (size_t step = 0; step < expected.size(); ++step) {
        const auto next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        if (margins[step] > 1e-3) {
          ASSERT_EQ(next, expected[step]) << "greedy step " << step << " (golden margin " << margins[step] << ")";
        } else if (next != expected[step]) {
          break;  // a near-tie decided the other way; later steps are not comparable
        }
        ASSERT_LT(next, vocab);
        model_->forward(Batch::prompt({next}, s, static_cast<int32_t>(ids.size()), false), cache, k, logits);
        ids.push_back(next);
      }
    }
  }
};

// The RoPE table computed from config.json equals the golden's (transformers'
// modeling_rope_utils in float64), where the golden carries one.
class RopeMatches : public GoldenModel {
 public:
  using GoldenModel::GoldenModel;
  void TestBody() override {
    const Json& g = golden_["rope"];
    const RopeTable& r = model_->rope();
    const auto inv_freq = g["inv_freq"].get<std::vector<double>>();
    ASSERT_EQ(r.inv_freq.size(), inv_freq.size());
    for (size_t i = 0; i < inv_freq.size(); ++i)
      EXPECT_NEAR(r.inv_freq[i], inv_freq[i], 1e-12 * inv_freq[i]) << "inv_freq " << i;
    EXPECT_NEAR(r.attention_factor, g["attention_factor"].get<double>(), 1e-12);
    if (g.contains("correction_range")) {
      EXPECT_EQ(r.correction_low, g["correction_range"][0].get<double>());
      EXPECT_EQ(r.correction_high, g["correction_range"][1].get<double>());
    }
  }
};

// Keeps the experts each position chose and their weights, per layer.
class RoutingRecorder : public TraceSink {
 public:
  bool wants(std::string_view stage, int) const override { return stage == "expert_weights"; }
  void record(const StageTensor& t) override {
    const int64_t n = t.axes[0].size, experts = t.axes[1].size;
    auto& rows = layers[t.layer];
    for (int64_t p = 0; p < n; ++p) {
      std::vector<std::pair<float, int32_t>> chosen;
      for (int64_t e = 0; e < experts; ++e)
        if (t.data[p * experts + e] != 0) chosen.push_back({t.data[p * experts + e], static_cast<int32_t>(e)});
      std::sort(chosen.begin(), chosen.end(), [](auto a, auto b) { return a.first > b.first; });
      rows.push_back(chosen);
    }
  }
  std::map<int, std::vector<std::vector<std::pair<float, int32_t>>>> layers;
};

// For a mixture-of-experts model: the experts each position of the traced case chose in
// each sparse layer and their weights, against the golden's, except at the golden's near
// ties (router margin <= 1e-3), where a float32 engine may legitimately choose otherwise.
class RoutingMatches : public GoldenModel {
 public:
  using GoldenModel::GoldenModel;
  void TestBody() override {
    const Json& g = golden_["routing"];
    const Json* prompt_case = nullptr;
    for (const Json& c : golden_["cases"])
      if (c["name"] == g["prompt"]) prompt_case = &c;
    ASSERT_NE(prompt_case, nullptr);
    std::set<std::pair<int, int>> near_ties;
    for (const Json& t : (*prompt_case)["routing_near_ties"]) near_ties.insert({t[0].get<int>(), t[1].get<int>()});
    RoutingRecorder rec;
    forward_all(*model_, backend_.kernels(), ids_of((*prompt_case)["ids"]), &rec);
    ASSERT_EQ(rec.layers.size(), g["layers"].size());
    size_t compared = 0;
    for (const Json& layer : g["layers"]) {
      const int l = layer["layer"];
      const auto& got = rec.layers[l];
      ASSERT_EQ(got.size(), layer["experts"].size()) << "layer " << l;
      for (size_t p = 0; p < got.size(); ++p) {
        if (near_ties.count({l, static_cast<int>(p)})) continue;
        ASSERT_EQ(got[p].size(), layer["experts"][p].size()) << "layer " << l << " position " << p;
        for (size_t r = 0; r < got[p].size(); ++r) {
          EXPECT_EQ(got[p][r].second, layer["experts"][p][r].get<int32_t>()) << "layer " << l << " position " << p;
          EXPECT_NEAR(got[p][r].first, layer["weights"][p][r].get<double>(), kTol) << "layer " << l << " position " << p;
        }
        ++compared;
      }
    }
    EXPECT_GT(compared, 0u);
  }
};

template <class T>
test::FixtureSuite on_every_backend(const std::string& suite, std::vector<std::string> backends = {"reference", "cpu"}) {
  return {suite, std::move(backends), [](const std::string& dir, const std::string& backend) -> ::testing::Test* {
            return new T(dir, backend);
          }};
}

// Registered only where golden.json carries `field`.
test::FixtureSuite with_field(test::FixtureSuite s, const std::string& field) {
  s.applies = test::json_has_field("golden.json", field);
  return s;
}

}  // namespace
}  // namespace glass

int main(int argc, char** argv) {
  using namespace glass;
  return test::run_fixture_main(argc, argv, "golden.json",
                                {on_every_backend<LogitsMatch>("GoldenLogits"), on_every_backend<TraceMatches>("GoldenTrace"),
                                 on_every_backend<CachedDecodeMatchesFull>("GoldenCachedDecode"),
                                 on_every_backend<GreedyMatches>("GoldenGreedy"),
                                 with_field(on_every_backend<RopeMatches>("GoldenRope", {"reference"}), "rope"),
                                 with_field(on_every_backend<RoutingMatches>("GoldenRouting"), "routing")});
}
