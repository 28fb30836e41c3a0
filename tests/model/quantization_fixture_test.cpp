// The fast path against the reference on every fixture model: the documented bounds
// for the fast kernels with a rounded KV cache, and KL divergence / top-1 agreement
// for weights quantized to q8_0 and q4_0 (printed; docs/performance.md quotes them).
#include <gtest/gtest.h>

#include <cstdio>

#include "base/json_fields.h"
#include "kernels/backend.h"
#include "model/decoder_model.h"
#include "support/test_support.h"
#include "trace/logit_compare.h"

namespace glass {
namespace {

std::vector<float> all_logits(const DecoderModel& m, Kernels& k, KVType kv, const std::vector<int32_t>& ids) {
  KVCache cache(m.config(), kv, static_cast<int64_t>(ids.size()));
  std::vector<float> logits;
  m.forward(Batch::prompt(ids, cache.add_sequence(), 0, true), cache, k, logits);
  return logits;
}

struct Variant {
  const char* name;
  std::optional<WeightType> weights;
  KVType kv;
  const char* backend;
  // Bounds: the largest mean KL and the smallest top-1 agreement accepted.
  double max_mean_kl;
  double min_top1;
  // When set, the largest |logit difference| accepted; then the argmax must also equal
  // the golden top-1 wherever the golden top-2 margin exceeds twice this bound.
  double max_abs_diff = 0;
};

class QuantizationReport : public ::testing::Test {
 public:
  explicit QuantizationReport(std::string dir) : dir_(std::move(dir)) {}
  void TestBody() override {
    const Json golden = read_json_file(dir_ + "/golden.json");
    Backend reference("reference", 1), cpu("cpu", 2);
    const DecoderModel ref_model = DecoderModel::load(dir_);
    std::vector<std::vector<float>> expected;
    for (const Json& c : golden["cases"])
      expected.push_back(all_logits(ref_model, reference.kernels(), KVType::F32, c["ids"].get<std::vector<int32_t>>()));
    // Bounds a few times what was measured on the fixture models. The q8_0 and q4_0
    // error is nearly all weight rounding (the reference kernels on the same quantized
    // weights, exact activations, measure within 2x for q8_0 and the same for q4_0); the
    // tiny random models have no structure for 4-bit weights to preserve.
    const std::vector<Variant> variants = {
        {"as stored, f16 KV", std::nullopt, KVType::F16, "cpu", 1e-6, 0.99, 0.03},
        {"as stored, bf16 KV", std::nullopt, KVType::BF16, "cpu", 1e-4, 0.98, 0.2},
        {"q8_0, f16 KV", WeightType::Q8_0, KVType::F16, "cpu", 1e-2, 0.9},
        {"q4_0, f16 KV", WeightType::Q4_0, KVType::F16, "cpu", 1.0, 0.35},
    };
    for (const Variant& v : variants) {
      LoadOptions o;
      o.weight_type = v.weights;
      const DecoderModel model = DecoderModel::load(dir_, o);
      double kl_sum = 0, max_diff = 0;
      size_t rows = 0, agree = 0;
      for (size_t i = 0; i < expected.size(); ++i) {
        const auto ids = golden["cases"][i]["ids"].get<std::vector<int32_t>>();
        const auto& a = expected[i];
        Backend& backend = std::string(v.backend) == "cpu" ? cpu : reference;
        const auto b = all_logits(model, backend.kernels(), v.kv, ids);
        const LogitComparison cmp = compare_logits(a, b, model.config().vocab_size);
        if (v.max_abs_diff > 0) {
          const Json& c = golden["cases"][i];
          for (size_t p = 0; p < cmp.rows.size(); ++p) {
            const double margin = c["top10_logits"][p][0].get<double>() - c["top10_logits"][p][1].get<double>();
            if (margin > 2 * v.max_abs_diff) {
              EXPECT_EQ(cmp.rows[p].top1_b, c["top10_ids"][p][0].get<int32_t>()) << v.name << " position " << p;
            }
          }
        }
        for (const RowComparison& r : cmp.rows) {
          kl_sum += r.kl;
          agree += r.top1_agree;
        }
        rows += cmp.rows.size();
        max_diff = std::max(max_diff, cmp.max_abs_diff);
      }
      const double mean_kl = kl_sum / static_cast<double>(rows), top1 = static_cast<double>(agree) / rows;
      std::printf("%-28s %-20s positions %4zu  mean KL %.3e  top-1 agreement %6.2f%%  max |dlogit| %.4f\n",
                  dir_.substr(dir_.find_last_of('/') + 1).c_str(), v.name, rows, mean_kl, 100 * top1, max_diff);
      EXPECT_LE(mean_kl, v.max_mean_kl) << v.name;
      if (v.max_abs_diff > 0) {
        EXPECT_LE(max_diff, v.max_abs_diff) << v.name;
      }
      EXPECT_GE(top1, v.min_top1) << v.name;
    }
  }

 private:
  std::string dir_;
};

}  // namespace
}  // namespace glass

int main(int argc, char** argv) {
  return glass::test::run_fixture_main(argc, argv, "golden.json", "QuantizationReport",
                                       [](const std::string& dir) { return new glass::QuantizationReport(dir); });
}
