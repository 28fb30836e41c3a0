#include "sampling/sampling_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/test_support.h"

namespace glass {
namespace {

using test::thrown_error;

std::string validation_error(void (*change)(SamplingParams&)) {
  SamplingParams p;
  change(p);
  return thrown_error([&] { p.validate("flags"); });
}

TEST(SamplingParams, DefaultsAreTransformersDefaultsAndValid) {
  SamplingParams p;
  EXPECT_FALSE(p.do_sample);
  EXPECT_EQ(p.temperature, 1.0);
  EXPECT_EQ(p.top_k, 50);
  EXPECT_EQ(p.top_p, 1.0);
  EXPECT_EQ(p.min_p, 0.0);
  EXPECT_EQ(p.repetition_penalty, 1.0);
  EXPECT_FALSE(p.sampling());
  EXPECT_NO_THROW(p.validate());
}

TEST(SamplingParams, InvalidValuesNameTheParameter) {
  struct Case {
    void (*change)(SamplingParams&);
    const char* parameter;
  };
  const Case cases[] = {
      {[](SamplingParams& p) { p.temperature = -0.1; }, "temperature"},
      {[](SamplingParams& p) { p.temperature = std::nan(""); }, "temperature"},
      {[](SamplingParams& p) { p.top_p = 0; }, "top_p"},
      {[](SamplingParams& p) { p.top_p = 1.01; }, "top_p"},
      {[](SamplingParams& p) { p.top_k = -1; }, "top_k"},
      {[](SamplingParams& p) { p.min_p = -0.01; }, "min_p"},
      {[](SamplingParams& p) { p.min_p = 1.5; }, "min_p"},
      {[](SamplingParams& p) { p.repetition_penalty = 0; }, "repetition_penalty"},
      {[](SamplingParams& p) { p.repetition_penalty = -1; }, "repetition_penalty"},
      {[](SamplingParams& p) { p.presence_penalty = 2.5; }, "presence_penalty"},
      {[](SamplingParams& p) { p.frequency_penalty = -3; }, "frequency_penalty"},
      {[](SamplingParams& p) { p.max_new_tokens = -1; }, "max_new_tokens"},
      {[](SamplingParams& p) { p.eos_token_ids = {-5}; }, "eos_token_id"},
      {[](SamplingParams& p) { p.stop_strings = {""}; }, "stop_strings"},
      {[](SamplingParams& p) { p.logit_bias = {{-1, 1.0f}}; }, "logit_bias"},
      {[](SamplingParams& p) { p.logit_bias = {{5, 100.5f}}; }, "logit_bias"},
      {[](SamplingParams& p) { p.logit_bias = {{5, -std::numeric_limits<float>::infinity()}}; }, "logit_bias"},
      {[](SamplingParams& p) { p.logit_bias = {{5, std::nanf("")}}; }, "logit_bias"},
      {[](SamplingParams& p) { p.logit_bias = {{7, 1.0f}, {5, 1.0f}}; }, "logit_bias"},  // not ascending
      {[](SamplingParams& p) { p.logit_bias = {{5, 1.0f}, {5, 2.0f}}; }, "logit_bias"},  // twice
  };
  for (const Case& c : cases) {
    const std::string e = validation_error(c.change);
    EXPECT_NE(e.find(std::string("flags: ") + c.parameter), std::string::npos) << e;
  }
  // Edges that are allowed.
  SamplingParams p;
  p.temperature = 0;
  p.top_p = 1;
  p.top_k = 0;
  p.min_p = 1;
  p.max_new_tokens = 0;
  p.repetition_penalty = 0.5;
  p.presence_penalty = -2;
  p.frequency_penalty = 2;
  p.logit_bias = {{0, -100.0f}, {7, 100.0f}};
  EXPECT_NO_THROW(p.validate());
}

TEST(SamplingParams, LogitBiasIsSortedAndItsIdsChecked) {
  const std::vector<TokenBias> sorted = sorted_logit_bias({{9, 1.0f}, {2, -3.0f}, {5, 0.5f}}, "--logit-bias");
  EXPECT_EQ(sorted, (std::vector<TokenBias>{{2, -3.0f}, {5, 0.5f}, {9, 1.0f}}));
  const std::string twice = test::thrown_error([] { sorted_logit_bias({{4, 1.0f}, {4, 1.0f}}, "--logit-bias"); });
  EXPECT_NE(twice.find("--logit-bias: token id 4 is given twice"), std::string::npos) << twice;
  EXPECT_NO_THROW(check_logit_bias_ids(sorted, 10));
  const std::string outside = test::thrown_error([&] { check_logit_bias_ids(sorted, 9); });
  EXPECT_NE(outside.find("logit_bias: token id 9 is outside the vocabulary of 9"), std::string::npos) << outside;
  // A request's override replaces the list; an empty one clears it.
  SamplingParams base;
  base.logit_bias = {{1, 1.0f}};
  SamplingOverrides o;
  EXPECT_EQ(apply_overrides(base, o).logit_bias, base.logit_bias);
  o.logit_bias = std::vector<TokenBias>{};
  EXPECT_TRUE(apply_overrides(base, o).logit_bias.empty());
}

TEST(GenerationConfig, ReadsQwenCheckpointConfig) {
  const SamplingParams p = load_generation_config(test::fixtures_root() + "/tiny-qwen2/generation_config.json");
  EXPECT_TRUE(p.do_sample);
  EXPECT_DOUBLE_EQ(p.temperature, 0.7);
  EXPECT_DOUBLE_EQ(p.top_p, 0.8);
  EXPECT_EQ(p.top_k, 20);
  EXPECT_DOUBLE_EQ(p.repetition_penalty, 1.05);
  EXPECT_EQ(p.eos_token_ids, (std::vector<int32_t>{151645, 151643}));
  EXPECT_TRUE(p.sampling());
}

TEST(GenerationConfig, MissingFileGivesDefaults) {
  test::TempDir dir;
  const SamplingParams p = load_generation_config(dir.file("generation_config.json"));
  EXPECT_FALSE(p.do_sample);
  EXPECT_EQ(p.top_k, 50);
  EXPECT_TRUE(p.eos_token_ids.empty());
}

TEST(GenerationConfig, ScalarEosNullsAndStopStrings) {
  test::TempDir dir;
  const std::string path = dir.file("generation_config.json");
  test::write_string(path, R"({"eos_token_id": 7, "temperature": null, "min_p": 0.1, "max_new_tokens": 64,
                               "stop_strings": "###", "top_k": 5.0})");
  const SamplingParams p = load_generation_config(path);
  EXPECT_EQ(p.eos_token_ids, (std::vector<int32_t>{7}));
  EXPECT_EQ(p.temperature, 1.0);
  EXPECT_DOUBLE_EQ(p.min_p, 0.1);
  EXPECT_EQ(p.max_new_tokens, 64);
  EXPECT_EQ(p.stop_strings, (std::vector<std::string>{"###"}));
  EXPECT_EQ(p.top_k, 5);
}

TEST(GenerationConfig, BadFieldsNameFileAndField) {
  test::TempDir dir;
  const std::string path = dir.file("generation_config.json");
  const std::pair<const char*, const char*> cases[] = {
      {R"({"temperature": "hot"})", "\"temperature\""},
      {R"({"top_k": 2.5})", "\"top_k\""},
      {R"({"do_sample": 1})", "\"do_sample\""},
      {R"({"eos_token_id": "x"})", "\"eos_token_id\""},
      {R"({"eos_token_id": [1, -2]})", "\"eos_token_id\""},
      {R"({"stop_strings": [1]})", "\"stop_strings\""},
      {R"({"top_p": 0})", "top_p"},
      {R"({"temperature": -1})", "temperature"},
      {R"({"repetition_penalty": 0})", "repetition_penalty"},
      {R"([1, 2])", "JSON object"},
  };
  for (auto [text, field] : cases) {
    test::write_string(path, text);
    const std::string e = thrown_error([&] { load_generation_config(path); });
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_NE(e.find(field), std::string::npos) << text << ": " << e;
  }
}

TEST(SamplingOverrides, FlagsBeatFileFieldByField) {
  const SamplingParams file = load_generation_config(test::fixtures_root() + "/tiny-qwen2/generation_config.json");
  SamplingOverrides flags;
  flags.temperature = 0.2;
  flags.top_k = 0;
  flags.seed = 5;
  flags.stop_strings = std::vector<std::string>{"\n\n"};
  flags.chain_order = ChainOrder::llama_cpp;
  const SamplingParams p = apply_overrides(file, flags);
  EXPECT_DOUBLE_EQ(p.temperature, 0.2);
  EXPECT_EQ(p.top_k, 0);
  EXPECT_EQ(p.seed, 5u);
  EXPECT_EQ(p.stop_strings, (std::vector<std::string>{"\n\n"}));
  EXPECT_EQ(p.chain_order, ChainOrder::llama_cpp);
  // Untouched fields keep the file's values.
  EXPECT_TRUE(p.do_sample);
  EXPECT_DOUBLE_EQ(p.top_p, 0.8);
  EXPECT_DOUBLE_EQ(p.repetition_penalty, 1.05);
  EXPECT_EQ(p.eos_token_ids, file.eos_token_ids);
  // A temperature alone does not switch sampling on.
  SamplingOverrides warm;
  warm.temperature = 0.9;
  EXPECT_FALSE(apply_overrides(SamplingParams{}, warm).sampling());
  warm.do_sample = true;
  EXPECT_TRUE(apply_overrides(SamplingParams{}, warm).sampling());
}

TEST(ChainOrder, NamesRoundTrip) {
  EXPECT_EQ(parse_chain_order("transformers"), ChainOrder::transformers);
  EXPECT_EQ(parse_chain_order(chain_order_name(ChainOrder::llama_cpp)), ChainOrder::llama_cpp);
  EXPECT_NE(thrown_error([] { parse_chain_order("vllm", "--sampler-order"); }).find("--sampler-order"),
            std::string::npos);
}

}  // namespace
}  // namespace glass
