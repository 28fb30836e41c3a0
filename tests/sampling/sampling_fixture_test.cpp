// Logits-processor fixtures: every case of every sampling/*.json under GLASS_FIXTURES,
// made with transformers. The surviving ids must match exactly, their probabilities
// within 1e-6.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include "base/error.h"
#include "base/json_fields.h"
#include "sampling/processor_chain.h"
#include "support/test_support.h"

namespace glass {
namespace {

constexpr double kProbTolerance = 1e-6;

// The fixture's params name only the processors it applies; the others are off.
SamplingParams params_of(const Json& p, const std::string& source) {
  SamplingParams params;
  params.do_sample = true;
  params.top_k = 0;
  if (auto v = json_number_opt(p, "repetition_penalty", source)) params.repetition_penalty = *v;
  if (auto v = json_number_opt(p, "temperature", source)) params.temperature = *v;
  if (auto v = json_int_opt(p, "top_k", source)) params.top_k = *v;
  if (auto v = json_number_opt(p, "top_p", source)) params.top_p = *v;
  if (auto v = json_number_opt(p, "min_p", source)) params.min_p = *v;
  params.validate(source);
  return params;
}

class ProcessorCase : public ::testing::Test {
 public:
  ProcessorCase(std::shared_ptr<const Json> file, size_t index, std::string source)
      : file_(std::move(file)), index_(index), source_(std::move(source)) {}

  void TestBody() override {
    const Json& c = (*file_)["cases"][index_];
    const int64_t vocab = json_int(c, "vocab", source_);
    std::vector<float> logits;
    for (const Json& v : c["logits"])
      logits.push_back(v.is_null() ? -std::numeric_limits<float>::infinity() : v.get<float>());
    ASSERT_EQ(static_cast<int64_t>(logits.size()), vocab) << source_ << ": logits length";
    const TokenHistory history(c["previous_ids"].get<std::vector<int32_t>>());
    const SamplingParams params = params_of(c["params"], source_);
    const ProcessorChain chain = ProcessorChain::from_params(params);
    SCOPED_TRACE(source_ + " " + c["params"].dump() + " chain " + chain.describe());

    chain.apply(logits, history);

    std::vector<int32_t> kept;
    for (size_t i = 0; i < logits.size(); ++i)
      if (std::isfinite(logits[i])) kept.push_back(static_cast<int32_t>(i));
    const auto want_ids = c["kept_ids"].get<std::vector<int32_t>>();
    const auto want_probs = c["kept_probs"].get<std::vector<double>>();
    ASSERT_EQ(want_ids.size(), want_probs.size());
    ASSERT_EQ(kept, want_ids) << kept.size() << " kept, expected " << want_ids.size();
    const RowSoftmax sm = row_softmax(logits);
    double worst = 0;
    for (size_t i = 0; i < kept.size(); ++i) {
      const double got = sm.prob(logits[static_cast<size_t>(kept[i])]);
      EXPECT_NEAR(got, want_probs[i], kProbTolerance) << "probability of token " << kept[i];
      worst = std::max(worst, std::fabs(got - want_probs[i]));
    }
    RecordProperty("worst_prob_error", str_cat(worst));
  }

 private:
  std::shared_ptr<const Json> file_;
  size_t index_;
  std::string source_;
};

}  // namespace
}  // namespace glass

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const auto files = glass::test::fixture_files("sampling");
  size_t cases = 0;
  for (const std::string& path : files) {
    auto json = std::make_shared<const glass::Json>(glass::read_json_file(path));
    const std::string stem = path.substr(path.find_last_of('/') + 1);
    const glass::Json& list = (*json)["cases"];
    if (!list.is_array() || list.empty()) {
      std::fprintf(stderr, "%s: no \"cases\"\n", path.c_str());
      return 1;
    }
    for (size_t i = 0; i < list.size(); ++i, ++cases) {
      const std::string name = "case" + std::to_string(i);
      const std::string source = path + " case " + std::to_string(i);
      ::testing::RegisterTest(stem.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                              [json, i, source]() -> ::testing::Test* { return new glass::ProcessorCase(json, i, source); });
    }
  }
  if (cases == 0) {
    std::fprintf(stderr, "no sampling fixtures (sampling/*.json) under %s\n", glass::test::fixtures_root().c_str());
    return 1;
  }
  return RUN_ALL_TESTS();
}
